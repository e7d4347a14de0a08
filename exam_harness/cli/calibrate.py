"""``exam-harness calibrate RUN_FILES``: the minimum grade (and the embedding grader's cut points) that agree
best with human judgments, chosen with cross-validation over queries, as ini settings to paste.

Grades come as in ``evaluate``: the recorded grades of a Workbench file replayed, or ``--bank BANK
--grader NAME`` grading the pool through the grade cache. Judgments are the files' own, or a qrels file
(``--judgments FILE``, which replaces them); its judged passages join the graded pool when the loaded files
hold their text. The analysis is :mod:`exam_harness.analysis.calibration`.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from exam_harness.config.options import (
    GRADING,
    RECORDED,
    SCORING,
    Argument,
    ExamOptions,
    add_cli_options,
    cosine_grid,
    integer,
    number,
    options_from_cli,
    output_path,
)
from exam_harness.core.display import command_console
from exam_harness.core.errors import ConfigError
from exam_harness.session.grades import Graded, add_input_arguments, report_failures

if TYPE_CHECKING:  # imported when the command runs, so that `exam-harness --help` stays fast
    from rich.console import Console
    from rich.table import Table

    from exam_harness.analysis.calibration import CalibrationReport, CutPointCalibration, Spread, ThresholdSearch
    from exam_harness.core.models import ExamData
    from exam_harness.graders.support import SupportModel
    from exam_harness.io.qrels import Qrels

GROUPS = (GRADING, SCORING, RECORDED)
SCORING_USED = ("k", "pool", "relevance_level")  # what grading and the judgments need; min-grade is ours


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "calibrate",
        help="Choose the minimum grade (and the embedding grader's cut points) that agree best with human "
        "judgments, cross-validated over queries; print ini settings to paste.",
        description="Choose the minimum grade tau (and, for the embedding grader, its cut points) that maximise "
        "Cohen's kappa of 'passage label >= tau' against 'judgment >= relevance level', on k folds of queries: "
        "each fold's choice is made on the other folds and scored on the fold (held-out kappa), beside the "
        "in-sample kappa. Also shows which label rule (max grade, at least m test points, merged 3-way) agrees best.",
    )
    add_input_arguments(parser)
    add_cli_options(parser, (GRADING, RECORDED))
    add_cli_options(parser, (SCORING,), only=SCORING_USED)
    for argument in ARGUMENTS:
        argument.add_to(parser)
    parser.set_defaults(func=run)


# This subcommand's own arguments, with the schema's converters (exam_harness/config/options.py).
ARGUMENTS: tuple[Argument, ...] = (
    Argument("min-grade", "Candidate minimum grades (default: every grade of the grader's scale, 1..5); the "
             "embedding grader's cut points are calibrated for the one given, else for its default, 4.", str,
             nargs="+", metavar="TAU", dest="min_grade"),  # the schema's field: options_from_cli converts it
    Argument("judgments", "Human judgments as a trec qrels file (replaces the judgments of the run files).", Path,
             metavar="QRELS"),
    Argument("folds", "Folds of queries for cross-validation (default: 5).", integer(2), default=5, metavar="K"),
    Argument("seed", "Seed of the shuffle that deals queries into folds (default: 0).", integer(), default=0),
    Argument("min-answers", "m of the 'at least m test points reach tau' label rules shown (default: 1 2 5; 1 is "
             "the max-grade label).", integer(1), nargs="+", default=[1, 2, 5], metavar="M"),
    Argument("grid", "Embedding grader: the supports tried as the cut point of the minimum grade (default: "
             "0.02:0.98:0.01).", cosine_grid, default=cosine_grid("0.02:0.98:0.01"), metavar="LOW:HIGH:STEP"),
    Argument("fit-support", "Embedding grader: fit its support model (the weights of its span, passage, word and "
             "query signals, and its cut points) on these judgments, held out over the folds, and write it to OUT "
             "(a JSON file for --exam-grader-option support_model=OUT).", Path, metavar="OUT", dest="fit_support"),
    Argument("team-labels", "Instead of judgments: refit the embedding grader's support model (needs --fit-support "
             "OUT) or a cross-encoder or monot5 grader's cut points (needs --fit-cut-points OUT) on a team's own "
             "labels (exam-harness label), cross-validated by test point.", Path, metavar="FILE"),
    Argument("fit-cut-points", "cross-encoder and monot5 graders, with --team-labels: fit the cut points of their "
             "probability on the labels and write them to OUT (a JSON file for --exam-grader-option "
             "cut_points_file=OUT).", Path, metavar="OUT", dest="fit_cut_points"),
    Argument("spacing", "Embedding grader: the gap between successive cut points (default: 0.1, as shipped).",
             number(0, 1, open_low=True, open_high=True), default=0.1, metavar="GAP"),
    Argument("json", "Write the calibration report as JSON.", output_path, metavar="OUT"),
)


def run(args: argparse.Namespace) -> int:
    from exam_harness.analysis.calibration import CalibrationSettings, calibrate, embedding_cosines
    from exam_harness.results.preflight import check_writable

    options = options_from_cli(args, GROUPS)
    check_writable([("--json", args.json, False), ("--fit-support", args.fit_support, False),
                    ("--fit-cut-points", args.fit_cut_points, False)])
    judgments = _read_judgments(args.judgments) if args.judgments else None
    if args.team_labels is not None:
        return fit_on_team_labels(args, options, grade_for_calibration(args, options, judgments))
    graded = grade_for_calibration(args, options, judgments)
    spec = graded.spec
    data = graded.view.data
    if not data.judgments:
        raise ConfigError("the run files hold no human judgments to calibrate against; give them with "
                          "--judgments QRELS")
    _check_judged_queries(graded, args.judgments)
    cut_points = spec.options.get("cut_points") if spec.name == "embedding" else None
    taus = tuple(options.min_grade) or tuple(range(1, spec.max_grade + 1))
    settings = CalibrationSettings(
        relevance_level=options.relevance_level, k_folds=args.folds, seed=args.seed, min_grades=taus,
        min_answers=tuple(args.min_answers), grid=args.grid, spacing=args.spacing,
        cut_min_grade=taus[0] if len(options.min_grade) == 1 else spec.default_min_grade,
    )
    tps = {q: graded.view.test_points[q] for q in graded.view.queries}
    report = calibrate(
        graded.outcome.grades, tps, data.judgments, settings,
        cosines=embedding_cosines(graded.outcome.answers) if cut_points is not None else None,
        current_cut_points=[float(c) for c in cut_points] if cut_points is not None else None,
    )
    report.grader = {"name": spec.name, "model": spec.model, "prompt_class": spec.prompt_class,
                     "source": graded.outcome.source}
    console = command_console()
    fitted = None
    if args.fit_support is not None:
        if spec.name != "embedding" or graded.outcome.source == "recorded":
            raise ConfigError("--fit-support fits the embedding grader's support model: grade with --grader embedding")
        fitted = fit_support_model(graded, report, options, args)
    report.settings = ini_settings(report, options, graded.outcome.source)
    if fitted is not None:
        report.settings["exam_grader_options"] = [
            f"support_model={args.fit_support}",
            *(o for o in report.settings.get("exam_grader_options", []) if not o.startswith("cut_points="))]
        report.settings["exam_min_grade"] = str(fitted.notes.get("min_grade", spec.default_min_grade))
    print_calibration(report, console)
    if fitted is not None:
        notes = fitted.notes
        console.print(f"support model fit on {notes['passages']:,} judged passages of {notes['queries']} queries: "
                      f"held-out κ {notes['held_out_kappa']} ± {notes['held_out_kappa_sd']} (in-sample "
                      f"{notes['in_sample_kappa']}); weights span/passage/words "
                      + " ".join(f"{w:.3f}" for w in fitted.weights) + f", intercept {fitted.intercept:.3f}, cut "
                      "points " + ",".join(f"{c:g}" for c in fitted.cut_points) + f"; wrote {args.fit_support}",
                      soft_wrap=True)
    if args.json:
        from exam_harness.io.textio import atomic_write_text

        payload = report.model_dump(mode="json")
        payload["pytest_ini"], payload["pyproject"] = ini_text(report.settings), pyproject_text(report.settings)
        atomic_write_text(args.json, json.dumps(payload, indent=1, ensure_ascii=False, allow_nan=False) + "\n")
        console.print(f"wrote {args.json}", soft_wrap=True)
    return report_failures("calibrate", graded.outcome, graded.inputs.redact)


def fit_support_model(graded: Graded, report: CalibrationReport, options: ExamOptions,
                      args: argparse.Namespace) -> SupportModel:
    """Fit the embedding grader's support model on the calibration's judged passages and folds; write it."""
    from exam_harness.analysis.support_fit import Instances, fit_support, stored_signals
    from exam_harness.graders.support import shipped_model
    from exam_harness.io.textio import atomic_write_text

    view = graded.view
    tps = {q: view.test_points[q] for q in view.queries}
    data = Instances.of(stored_signals(graded.outcome.answers), tps, view.data.judgments, options.relevance_level)
    fit = fit_support(data, report.folds)
    min_grade = report.cut_points.min_grade if report.cut_points is not None else 4
    sources = ", ".join(Path(p).name for p in args.runs)
    model = fit.model(f"judgments of {sources} (relevance >= {options.relevance_level}), {len(report.folds)} folds",
                      min_grade, shipped_model().answer_key_floor)
    # Only the model of all test points is fit on judgments; the shipped answer model is kept.
    model = dataclasses.replace(model, with_answers=shipped_model().with_answers)
    atomic_write_text(args.fit_support, json.dumps(model.to_json(), indent=1) + "\n")
    return model


def fit_on_team_labels(args: argparse.Namespace, options: ExamOptions, graded: Graded) -> int:
    """``--team-labels FILE --fit-support OUT``: the current verdicts against the labels (before), the support
    model refit on them (after, held out by test point), written to OUT; the ini line that uses it."""
    from exam_harness.analysis.labels import fit_on_labels, label_concordance, read_labels
    from exam_harness.graders.support import read_support_model, shipped_model
    from exam_harness.io.textio import atomic_write_text

    if graded.spec.name in RERANKERS and graded.outcome.source != "recorded":
        return fit_reranker_cuts(args, graded)
    if args.fit_support is None:
        raise ConfigError("--team-labels refits the support model: give the file to write with --fit-support OUT")
    if graded.spec.name != "embedding" or graded.outcome.source == "recorded":
        raise ConfigError("--team-labels fits the embedding grader's support model (--grader embedding) or the "
                          "cut points of a reranker (--grader cross-encoder or monot5)")
    labels = read_labels(args.team_labels)
    min_grade = graded.plan.min_grade
    before = label_concordance(graded.outcome.grades, labels, min_grade)
    given = options.grader_options.get("support_model")
    base = read_support_model(Path(str(given))) if given else shipped_model()
    with_gold = {tid for tid, tp in graded.view.points.items() if tp.gold_answers}
    fit = fit_on_labels(graded.outcome.answers, labels, with_gold, base, folds=args.folds, seed=args.seed,
                        min_grade=min_grade, source=f"team labels {args.team_labels.name}")
    atomic_write_text(args.fit_support, json.dumps(fit.model.to_json(), indent=1) + "\n")
    kappa = "–" if before.kappa is None else f"{before.kappa:.3f}"
    print(f"before: the current support model's verdicts (grade >= {min_grade}) on {before.pairs} labelled pairs: "
          f"kappa {kappa} (in-sample)")
    for line in fit.lines:
        print(f"after: {line}")
    print(f"wrote {args.fit_support}; use it with: exam_grader_options = support_model={args.fit_support}")
    return report_failures("calibrate", graded.outcome, graded.inputs.redact)


RERANKERS = ("cross-encoder", "monot5")


def fit_reranker_cuts(args: argparse.Namespace, graded: Graded) -> int:
    """``--team-labels FILE --fit-cut-points OUT`` with a reranker grader: its verdicts against the labels
    (before), its cut points fitted on them (after, held out by test point), written to OUT; the ini line."""
    from exam_harness.analysis.cut_fit import fit_cut_points
    from exam_harness.analysis.labels import label_concordance, read_labels
    from exam_harness.graders.reranker_cuts import FittedCutPoints, probability_of_reason
    from exam_harness.io.textio import atomic_write_text

    if args.fit_cut_points is None:
        raise ConfigError(f"--team-labels fits the {graded.spec.name} grader's cut points: give the file to write "
                          "with --fit-cut-points OUT")
    labels = read_labels(args.team_labels)
    min_grade = graded.plan.min_grade
    probabilities = {pair: p for pair, answer in graded.outcome.answers.items()
                     if (p := probability_of_reason(answer)) is not None}
    fit = fit_cut_points(probabilities, labels, min_grade=min_grade, folds=args.folds, seed=args.seed)
    before = label_concordance(graded.outcome.grades, labels, min_grade)
    current = graded.spec.options.get("cut_points")
    source = (f"team labels {args.team_labels.name}: {fit.pairs} labelled pairs of {fit.test_points} test points, "
              f"{args.folds} folds of test points")
    fitted = FittedCutPoints(graded.spec.name, str(graded.spec.model), fit.cut_points, min_grade, source)
    atomic_write_text(args.fit_cut_points, json.dumps(fitted.to_json(), indent=1) + "\n")

    def kappa(value: float | None) -> str:
        return "–" if value is None else f"{value:.3f}"

    held = "–" if fit.held_out.mean is None else f"{fit.held_out.mean:.3f} ± {fit.held_out.sd or 0:.3f}"
    print(f"before: {graded.spec.name}'s verdicts (grade >= {min_grade}, cut points {current}) on {before.pairs} "
          f"labelled pairs: kappa {kappa(before.kappa)} (in-sample)")
    print(f"after: cut points fitted on {fit.pairs} labelled pairs of {fit.test_points} test points: held-out kappa "
          f"{held} (in-sample {kappa(fit.in_sample_kappa)}), grade {min_grade} from probability {fit.threshold:.6g}, "
          "cut points " + ",".join(f"{c:g}" for c in fit.cut_points))
    print(f"wrote {args.fit_cut_points}; use it with: exam_grader_options = cut_points_file={args.fit_cut_points}")
    return report_failures("calibrate", graded.outcome, graded.inputs.redact)


# --- inputs ---------------------------------------------------------------------------------------------


def _read_judgments(path: Path) -> Qrels:
    from exam_harness.io.qrels import read_qrels

    qrels = read_qrels(path)
    if not qrels:
        raise ConfigError(f"{path}: the qrels file holds no judgments")
    return qrels


def grade_for_calibration(args: argparse.Namespace, options: ExamOptions, judgments: Qrels | None) -> Graded:
    """:func:`exam_harness.session.grades.obtain_grades`, with ``judgments`` (a qrels file) in place of the files'
    own before the pool is made, so that judged passages with text are graded too."""
    from exam_harness.extensions import cli_registries
    from exam_harness.session.grades import obtain_grades

    if judgments is None:
        return obtain_grades(args, options, registries=cli_registries())

    def swap_judgments(data: ExamData) -> None:
        # A judged passage without text cannot be graded (nor has recorded grades): left out, and said so.
        data.judgments = {q: {p: level for p, level in judged.items() if p in data.passages}
                          for q, judged in judgments.items()}
        dropped = sum(len(j) for j in judgments.values()) - sum(len(j) for j in data.judgments.values())
        if dropped:
            print(f"exam-harness calibrate: {dropped:,} passages judged in {args.judgments} have no text in the run "
                  "files and are left out", file=sys.stderr)

    return obtain_grades(args, options, registries=cli_registries(), adjust=swap_judgments)


def _check_judged_queries(graded: Graded, source: Path | None) -> None:
    """Judgments of no query the exam grades are a usage error that shows both sides' ids."""
    from exam_harness.results.preflight import near_match

    judged = sorted(graded.view.data.judgments)
    exam = sorted(graded.view.queries)
    if set(judged) & set(exam):
        return
    hints = [f"{q!r} ~ {m}" for q in judged[:20] if (m := near_match(q, exam))]
    where = f"{source}: " if source is not None else ""
    raise ConfigError(f"{where}the judgments name no query of the exam: judged {judged[:6]}, graded {exam[:6]}"
                      + (f" (near matches: {', '.join(hints[:3])})" if hints else ""))


# --- settings to paste ----------------------------------------------------------------------------------


def ini_settings(report: CalibrationReport, options: ExamOptions, source: str) -> dict[str, str | list[str]]:
    """The pytest ini keys (config/options.py names) that reproduce the calibrated choice: the minimum grade, and
    for a grader (not replayed grades) the grader, its model and options with the calibrated cut points."""
    cuts = report.cut_points
    tau = cuts.min_grade if cuts is not None else int(report.max_grade_rule.search.chosen)
    settings: dict[str, str | list[str]] = {"exam_min_grade": str(tau)}
    if source == "recorded":
        return settings
    settings["exam_grader"] = options.grader
    if options.model:
        settings["exam_model"] = options.model
    grader_options = dict(options.grader_options)
    if cuts is not None:
        grader_options["cut_points"] = ",".join(f"{c:g}" for c in cuts.chosen)
    if grader_options:
        settings["exam_grader_options"] = [f"{k}={v}" for k, v in grader_options.items()]
    return settings


def ini_text(settings: dict[str, str | list[str]]) -> str:
    """The settings as a pytest.ini / tox.ini / setup.cfg section (a line list continues indented)."""
    lines = ["[pytest]"]
    for key, value in settings.items():
        if isinstance(value, list):
            lines.append(f"{key} =" + "".join(f"\n    {v}" for v in value))
        else:
            lines.append(f"{key} = {value}")
    return "\n".join(lines) + "\n"


def pyproject_text(settings: dict[str, str | list[str]]) -> str:
    """The settings as pyproject.toml's pytest section (TOML strings)."""
    lines = ["[tool.pytest.ini_options]"]
    for key, value in settings.items():
        shown = "[" + ", ".join(json.dumps(v) for v in value) + "]" if isinstance(value, list) else json.dumps(value)
        lines.append(f"{key} = {shown}")
    return "\n".join(lines) + "\n"



# --- terminal tables ------------------------------------------------------------------------------------


def _tau(value: float) -> str:
    return f"{value:g}"


def _spread(spread: Spread) -> str:
    from exam_harness.report.tables import fmt

    if spread.mean is None:
        return "–"
    return fmt(spread.mean) + (f" ± {fmt(spread.sd)}" if spread.sd is not None else "")


def print_calibration(report: CalibrationReport, console: Console) -> None:
    """The calibration as rich tables, then the settings to paste."""
    grader = report.grader
    who = ", ".join(str(v) for v in (grader.get("model"), grader.get("prompt_class")) if v)
    console.print(
        f"Calibration of grader {grader.get('name')!r}{f' ({who})' if who else ''} against {report.passages:,} "
        f"judged passages of {report.queries} queries ({report.relevant:,} judged ≥ {report.relevance_level}); "
        f"{report.k_folds} folds of queries, seed {report.seed}"
        + (f"; {report.judged_without_grades:,} judged passages have no grade" if report.judged_without_grades
           else ""), soft_wrap=True)
    for renderable in calibration_tables(report):
        console.print(renderable)
    best = report.best_rule()
    chosen = report.max_grade_rule
    if best.rule != chosen.rule:
        console.print(f"label rule {best.rule} agrees best held out (κ {_spread(best.search.held_out)} against "
                      f"{_spread(chosen.search.held_out)} for max-grade); the EXAM-Qrels label at-least-m follows it "
                      f"with exam_qrels_m = {best.m} (exam_min_grade stays the max-grade rule's τ)", soft_wrap=True)
    console.print("Settings to paste (pytest.ini, tox.ini or setup.cfg):", soft_wrap=True)
    console.print(ini_text(report.settings), soft_wrap=True)
    console.print("or in pyproject.toml:", soft_wrap=True)
    console.print(pyproject_text(report.settings), soft_wrap=True)


def calibration_tables(report: CalibrationReport) -> list[Table]:
    from rich.table import Table

    from exam_harness.report.tables import fmt

    level = report.relevance_level
    rules = report.rules
    taus = rules[0].search.candidates
    landscape = Table(title=f"In-sample Cohen's κ of 'label ≥ τ' vs 'judged ≥ {level}', by label rule",
                      title_justify="left", header_style="bold")
    landscape.add_column("label rule", no_wrap=True)
    for tau in taus:
        landscape.add_column(f"τ={_tau(tau)}", justify="right")
    chosen = Table(title="Minimum grade τ chosen per label rule: in-sample, and held out over folds of queries",
                   title_justify="left", header_style="bold")
    chosen.add_column("label rule", no_wrap=True)
    for name in ("τ", "in-sample κ", "held-out κ", "pooled", "τ per fold"):
        chosen.add_column(name, justify="right", no_wrap=name in ("held-out κ", "τ per fold"))
    for rule in rules:
        s = rule.search
        landscape.add_row(rule.rule, *(fmt(k) for k in s.in_sample_kappas))
        chosen.add_row(rule.rule, _tau(s.chosen), fmt(s.in_sample_kappa), _spread(s.held_out),
                       fmt(s.pooled_held_out_kappa), " ".join(_tau(f.chosen) for f in s.folds))
    tables = [landscape, chosen, _folds_table(rules[0].search, "max-grade: τ chosen on the other folds", "τ")]
    merged = report.merged
    table = merged.table

    def group(values: list[int]) -> str:
        return ",".join(str(v) for v in values) or "–"

    t = Table(title=f"Merged 3-way table (max grade x judgment groups): Cohen's κ = {fmt(table.kappa)} (per fold "
              f"{_spread(merged.spread)})", title_justify="left", header_style="bold")
    t.add_column("grade", no_wrap=True)
    positions = range(len(table.grades) - 1, -1, -1)  # counts are keyed by group position, the best highest
    for columns in table.judgments:
        t.add_column(f"judged {group(columns)}", justify="right")
    t.add_column("row κ", justify="right")
    for row, grades, row_kappa in zip(positions, table.grades, table.row_kappas):
        t.add_row(group(grades), *(f"{table.counts[row][col]:,}" for col in positions), fmt(row_kappa))
    tables.append(t)
    if report.cut_points is not None:
        tables.extend(_cut_point_tables(report.cut_points))
    return tables


def _folds_table(search: ThresholdSearch, title: str, what: str, extra: list[float | None] | None = None) -> Table:
    from rich.table import Table

    from exam_harness.report.tables import fmt

    t = Table(title=title, title_justify="left", header_style="bold")
    for name in ("fold", "queries", "passages", what, "train κ", "held-out κ"):
        t.add_column(name, justify="right", no_wrap=name == "held-out κ")
    if extra is not None:
        t.add_column("κ at current", justify="right")
    for i, f in enumerate(search.folds):
        cells = [str(f.fold), str(len(f.queries)), f"{f.passages:,}", _tau(f.chosen), fmt(f.train_kappa),
                 fmt(f.held_out_kappa)]
        t.add_row(*cells, *([fmt(extra[i])] if extra is not None else []))
    t.add_row("mean", "", "", "", "", _spread(search.held_out), *([""] if extra is not None else []))
    return t


def _cut_point_tables(cuts: CutPointCalibration) -> list[Table]:
    from rich.table import Table

    from exam_harness.report.tables import fmt

    s = cuts.search
    shown = ",".join(f"{c:g}" for c in cuts.current)
    folds = _folds_table(s, f"Embedding cut points: the cosine where grade {cuts.min_grade} begins, chosen on the "
                         "other folds", "cut point", extra=cuts.current_view.folds)
    summary = Table(title=f"Embedding cut points (others {cuts.spacing:g} apart; {cuts.decided_by_answer_key:,} "
                    "passages decided by the answer key); the current ones are chosen elsewhere, so their "
                    "held-out κ is their κ per fold", title_justify="left", header_style="bold")
    summary.add_column("cut points")
    for name in ("in-sample κ", "held-out κ", "pooled"):
        summary.add_column(name, justify="right", no_wrap=True)
    summary.add_row(f"current {shown}", fmt(cuts.current_view.kappa), _spread(cuts.current_view.spread), "–")
    summary.add_row("calibrated " + ",".join(f"{c:g}" for c in cuts.chosen), fmt(s.in_sample_kappa),
                    _spread(s.held_out), fmt(s.pooled_held_out_kappa))
    grid = Table(title=f"In-sample κ by grade-{cuts.min_grade} cut point (every 0.05 of the grid)",
                 title_justify="left", header_style="bold")
    grid.add_column("cut point", justify="right")
    grid.add_column("in-sample κ", justify="right")
    for c, k in zip(s.candidates, s.in_sample_kappas):
        if abs(round(c * 20) - c * 20) < 1e-6:
            grid.add_row(f"{c:.2f}", fmt(k))
    return [folds, summary, grid]
