"""``exam-harness analyze agreement`` (and pytest's ``--exam-analysis agreement``): the grades against the human
judgments the run files hold (the max-grade tables with Cohen's kappa of each cut, the "min answers = m" views of
``--min-answers``, each recorded direct grading run's table); with ``--grades A --grades B`` two graders' grades
against each other (graders.py); with ``--team-labels FILE`` the grader's verdicts against a team's labels, then
every other grader the cache holds grades of (analysis/labels.py, label_graders.py) and the calibration section
where a feature computes one."""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from exam_harness.api import Argument, ConfigError
from exam_harness.config.min_answers import DEFAULT_MIN_ANSWERS, add_min_answers_argument
from exam_harness.session.analyses import AnalysisExam, AnalysisSession, add_graded_arguments

if TYPE_CHECKING:
    from rich.console import Console, RenderableType

    from exam_harness.config.options import ExamOptions
    from exam_harness.exam.inputs import ExamView
    from exam_harness.exam.plan import ExamPlan
    from exam_harness.grading.passes import GradingOutcome
    from exam_harness.session.grades import Graded

GRADE_FILES = Argument(
    "grades", "Instead of grades x judgments: the agreement of two graders, or two runs of one grader; give it twice "
    "(Workbench files with exam_grades, e.g. from evaluate --export-workbench, compared per (passage, test point); "
    "or two exam-report.json, compared per case by best grade). Run files are then not needed.", Path, default=[],
    many=True, metavar="FILE")
# --labels already names the EXAM-Qrels label variants: the team's labels file is --team-labels
TEAM_LABELS = Argument("team-labels", "Instead of grades x judgments: the grader's per-pair verdicts (grade >= TAU) "
                       "against a team's own labels (exam-harness label): precision, recall and kappa, with 95% "
                       "intervals; then every other grader whose grades the cache holds for labelled pairs.", Path,
                       metavar="FILE")


@dataclass(frozen=True)
class AgreementAnalysis:
    help: str = ("Grade x judgment counts, lenient / strict binarisations and Cohen's kappa (plus one binarisation "
                 "per --min-grade); the 'min answers = m' views with per-row kappa and the merged 3-way table; the "
                 "recorded direct grades' tables.")
    in_pytest: bool = True

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_graded_arguments(parser, runs="*")  # the run files are optional beside --grades (checked in run)
        add_min_answers_argument(parser, default=DEFAULT_MIN_ANSWERS)
        GRADE_FILES.add_to(parser)
        TEAM_LABELS.add_to(parser)

    def run(self, args: argparse.Namespace, session: AnalysisSession) -> int:
        options = session.options
        if args.grades:
            return _two_graders(args, session, options.min_grade)
        if not args.runs:
            raise ConfigError("analyze agreement needs RUN_FILE(s) (or --grades A --grades B)")
        graded = session.graded
        if args.team_labels is not None:
            return _team_labels(args, session)
        view, outcome = session.shown()
        session.write_json(_agreement(args, view, outcome, graded.plan, options.min_grade, session.console))
        return session.finish(outcome)

    def section(self, exam: AnalysisExam) -> tuple[str, Sequence[RenderableType]]:
        from exam_harness.features.agreement.compute import agreement_tables
        from exam_harness.features.agreement.tables import agreement_renderables

        view = exam.view
        tps = {q: view.test_points[q] for q in view.queries}
        result = agreement_tables(exam.outcome.grades, tps, view.data.judgments,
                                  relevance_level=exam.relevance_level, min_grades=[exam.min_grade])
        return "exam: agreement with human judgments", agreement_renderables(result)


ANALYSIS = AgreementAnalysis()


def _team_labels(args: argparse.Namespace, session: AnalysisSession) -> int:
    """The session's grader's verdicts against the labels of ``--team-labels``, then every other grader whose
    grades the cache holds for labelled pairs (exam_harness/analysis/labels.py, label_graders.py)."""
    from exam_harness.analysis.label_graders import cached_concordance, labelled_requests
    from exam_harness.analysis.labels import LabelConcordance, label_concordance, read_labels
    from exam_harness.graders.base import GraderConfig
    from exam_harness.grading.cache import GradeCache

    graded, options = session.graded, session.options
    labels = read_labels(args.team_labels)
    tau = graded.plan.min_grade
    found = label_concordance(graded.outcome.grades, labels, tau)

    def shown(value: float | None, interval: tuple[float, float]) -> str:
        return "–" if value is None else f"{value:.3f} [{interval[0]:.3f}, {interval[1]:.3f}]"

    def figures(agreement: LabelConcordance) -> str:
        return (f"precision {shown(agreement.precision, agreement.precision_interval)}, recall "
                f"{shown(agreement.recall, agreement.recall_interval)}, kappa "
                + ("–" if agreement.kappa is None else f"{agreement.kappa:.3f}"))

    print(f"{graded.spec.name} against {args.team_labels} ({found.pairs} labelled pairs graded, grade >= {tau}): "
          + figures(found))
    cache = GradeCache(options.cache)
    try:
        banks = [bank for file_banks in graded.inputs.banks.values() for bank in file_banks]
        others = cached_concordance(cache, graded.registries.graders,
                                  labelled_requests(labels, banks, graded.inputs.data), labels,
                                  data=graded.inputs.data, session=graded.spec,
                                  session_config=GraderConfig(model=options.model, options=options.grader_options))
    finally:
        cache.close()
    if others.rows or others.unprobed:
        print(f"the other graders whose grades the cache {options.cache or '(in memory)'} names:")
    for row in others.rows:
        who = ", ".join(part for part in (row.model, f"prompt {row.prompt}" if row.prompt else None) if part)
        print(f"  {row.grader}{f' ({who})' if who else ''}: {row.concordance.pairs} labelled pairs cached, grade >= "
              f"{row.min_grade}: {figures(row.concordance)}")
    for line in others.unprobed:
        print(f"  not measured: {line}")
    calibration = _calibration(args, graded, options)
    session_row = {"grader": graded.spec.name, "model": graded.spec.model, "prompt": graded.spec.prompt_class,
                   "min_grade": tau, "session": True, **dataclasses.asdict(found)}
    session.write_json({**session_row, "labels": str(args.team_labels),
                            "graders": [session_row, *({"grader": r.grader, "model": r.model, "prompt": r.prompt,
                                                        "min_grade": r.min_grade, "session": False,
                                                        **dataclasses.asdict(r.concordance)} for r in others.rows)],
                            "not_measured": others.unprobed,
                            **({"calibration": calibration} if calibration is not None else {})})
    return 0


def _calibration(args: argparse.Namespace, graded: Graded, options: ExamOptions) -> dict[str, Any] | None:
    """The section the team's labels add where a feature computes one (the calibration feature's ``calibration``:
    each judge's figures estimated with the labels' sample weights, by field, the judges against each other, the
    corrected scores): asked for through the features' scoring inputs with the labels as their option
    ``team_labels``, computed and printed as every output shows it; its content for the JSON (None: no such
    section)."""
    sections = graded.registries.sections
    if "calibration" not in sections:
        return None
    from exam_harness.core.display import command_console
    from exam_harness.report.evaluation import score_evaluation
    from exam_harness.results.scored import collect_scoring_inputs

    given = dataclasses.replace(options, feature_values=(*options.feature_values, ("team_labels", args.team_labels)))
    inputs = collect_scoring_inputs(given, "evaluate", graded.registries.hook)
    scored = score_evaluation(graded.view, graded.outcome, graded.plan, graded.spec,
                              responses=graded.inputs.responses)
    section = sections.get("calibration")
    content = section.compute(dataclasses.replace(scored, inputs=inputs))
    if content is None:
        return None
    console = command_console()
    for part in section.terminal(content):
        console.print(part)
    return content.model_dump(mode="json")


def _agreement(
    args: argparse.Namespace, view: ExamView, outcome: GradingOutcome, plan: ExamPlan, min_grades: Sequence[int],
    console: Console,
) -> dict[str, Any]:
    """The agreement tables; the min-answers views (``--min-answers``, default 1 2 5) and, when the files
    hold recorded direct grades, one view per direct grading run. JSON: the max-grade tables' keys, plus
    ``min_answers`` and ``direct_agreement`` (present only when the files hold direct grades)."""
    from exam_harness.config.min_answers import min_answers_of
    from exam_harness.features.agreement.compute import agreement_tables, direct_agreement, min_answers_agreement
    from exam_harness.features.agreement.tables import agreement_renderables, agreement_view_tables

    judgments = view.data.judgments
    if not judgments:
        raise ConfigError("the run files hold no human judgments to agree with")
    tps = {q: view.test_points[q] for q in view.queries}
    result = agreement_tables(outcome.grades, tps, judgments, relevance_level=plan.relevance_level,
                              min_grades=min_grades)
    views = min_answers_agreement(outcome.grades, tps, judgments, min_answers_of(args.min_answers),
                                  relevance_level=plan.relevance_level, min_grades=min_grades)
    direct = direct_agreement(view.data.recorded, judgments, relevance_level=plan.relevance_level)
    for t in [*agreement_renderables(result), *agreement_view_tables(views, direct)]:
        console.print(t)
    payload: dict[str, Any] = result.model_dump(mode="json")
    payload["min_answers"] = [v.model_dump(mode="json") for v in views]
    if direct:
        payload["direct_agreement"] = [v.model_dump(mode="json") for v in direct]
    return payload


def _two_graders(args: argparse.Namespace, session: AnalysisSession, min_grades: Sequence[int]) -> int:
    """``analyze agreement --grades A --grades B``: two graders' (or two runs') grades against each other."""
    from exam_harness.features.agreement.graders import grader_agreement
    from exam_harness.features.agreement.tables import grader_agreement_tables

    if len(args.grades) != 2:
        raise ConfigError(f"--grades compares two files; {len(args.grades)} given")
    if args.runs or args.bank:
        raise ConfigError("--grades compares two grade files by themselves; leave out RUN_FILE and --bank")
    (a, unit_a, tau_a), (b, unit_b, tau_b) = (_grades_of(path, session) for path in args.grades)
    if unit_a != unit_b:
        raise ConfigError(f"--grades {args.grades[0]} holds {unit_a} grades and {args.grades[1]} {unit_b} grades; "
                          "compare two Workbench files or two exam-report.json")
    tau = min_grades[0] if min_grades else tau_a if tau_a is not None else tau_b if tau_b is not None else 4
    result = grader_agreement(a, b, name_a=str(args.grades[0]), name_b=str(args.grades[1]), unit=unit_a,
                              min_grade=tau)
    if not result.common:
        raise ConfigError(f"{args.grades[0]} and {args.grades[1]} grade no {unit_a} in common")
    for table in grader_agreement_tables(result):
        session.console.print(table)
    session.write_json(result.model_dump(mode="json"))
    return 0


def _grades_of(path: Path, session: AnalysisSession) -> tuple[dict[Any, int], str, int | None]:
    """(unit -> grade, unit kind, the file's tau if it says one) of a JSON report or a Workbench file."""
    if path.suffix == ".json":
        from exam_harness.results.read import read_report

        report = read_report(path)
        grades: dict[Any, int] = {(o.run, o.test_point_id): o.best_grade for o in report.outcomes
                                  if o.best_grade is not None}
        return grades, "case", report.settings.min_grade
    from exam_harness.exam.inputs import ExamInputs, is_direct_id
    from exam_harness.grading.passes import choose_grading_run

    registries = session.registries
    data = ExamInputs(registries.bank_formats, registries.run_formats).load_runs([path])
    try:
        llm, prompt_class = choose_grading_run(data)
    except ConfigError as exc:
        raise ConfigError(f"--grades {path}: {exc}") from None
    grades = {}
    for pair, records in data.recorded.items():
        if is_direct_id(pair[1]):
            continue
        grade = next((r.grade for r in records if r.llm == llm and r.prompt_class == prompt_class), None)
        if grade is not None:
            grades[pair] = grade
    return grades, "pair", None
