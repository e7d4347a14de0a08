"""The exam as a TREC AutoJudge judge: :class:`ExamJudge` implements autojudge-base's three protocols.

Every call runs what ``exam-harness evaluate`` runs, on the same entry points (``cli/grades.py``'s
``obtain_grades``, ``report/evaluation.py``'s ``evaluate_exam``): the reports become TREC RAG answer files
and the banks (the given NuggetBanks, else the workflow's ``bank`` files) a bank file in a temporary folder,
read through the format registries, graded by the workflow's ``grader`` (default: the harness's default,
``embedding``, which runs offline) through the grade cache, and scored by the plan's measures.

- ``create_nuggets`` -> the banks as NuggetBanks (:func:`~exam_harness.autojudge.convert.banks_to_nugget_banks`);
- ``create_qrels`` -> the EXAM-Qrels of the answers at the first minimum grade (the exam's passage ids:
  ``rag-`` and an MD5 prefix of the answer text);
- ``judge`` -> a Leaderboard with every measure ``evaluate`` reports per run and topic; autojudge-base adds
  each run's mean over the topics, which is the exam's per-run score.

Settings (workflow.yml ``settings`` / ``judge_settings``; ``-S key=value``): ``bank`` (a file or a list),
``grader``, ``grader_options`` (a mapping), ``min_grade``, ``k``, ``measures`` (a list), ``cache``
(``none``: in memory only). A pair without a grade stops the call (a failed grade is never scored).
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autojudge_base import Leaderboard, LeaderboardBuilder, LeaderboardSpec, MeasureSpec, QrelRow, Qrels
from autojudge_base.nugget_data import NuggetBanks

from exam_harness.autojudge.convert import banks_to_nugget_banks, nugget_banks_to_banks, reports_to_answers
from exam_harness.core.errors import ConfigError

SETTINGS = ("bank", "grader", "grader_options", "min_grade", "k", "measures", "cache")


@dataclass(frozen=True)
class ExamOutcome:
    """One exam over the reports: the evaluation document (per-query values kept) and the EXAM-Qrels."""

    per_query: dict[tuple[str, str], dict[str, float]]  # (run, topic) -> measure name -> value
    systems: dict[str, dict[str, float]]  # run -> measure name -> mean over the topics
    qrels: dict[str, dict[str, int]]  # topic -> passage id -> label (first label variant, first tau)
    topics: tuple[str, ...]


def _list(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, (list, tuple)) else [str(value)]


def evaluate_argv(runs: Path, banks: Sequence[Path], settings: Mapping[str, Any]) -> list[str]:
    """The ``exam-harness evaluate`` arguments the settings stand for."""
    argv = ["evaluate", str(runs), "--bank", *map(str, banks), "--grader", str(settings.get("grader", "embedding")),
            "--per-query", "--no-progress"]
    for key, value in dict(settings.get("grader_options") or {}).items():
        argv += ["--grader-option", f"{key}={value}"]
    if "min_grade" in settings:
        argv += ["--min-grade", *_list(settings["min_grade"])]
    if "k" in settings:
        argv += ["--k", str(settings["k"])]
    if "measures" in settings:
        argv += ["--measures", *_list(settings["measures"])]
    if "cache" in settings:
        argv += ["--cache", str(settings["cache"])]
    return argv


def run_exam(reports: Sequence[Any], topics: Mapping[str, str], nugget_banks: NuggetBanks | None,
             settings: Mapping[str, Any]) -> ExamOutcome:
    """Grade and score ``reports`` as ``exam-harness evaluate`` does (see the module's docstring)."""
    from exam_harness.cli import build_parser
    from exam_harness.cli.evaluate import GROUPS, OUTPUT_DEFAULTS
    from exam_harness.cli.grades import obtain_grades
    from exam_harness.config.options import REPORTS, options_from_cli
    from exam_harness.io.handbank import write_bank_yaml
    from exam_harness.io.textio import atomic_write_text
    from exam_harness.io.trec_rag import rag_answer_files
    from exam_harness.measures.qrels import QrelsCut
    from exam_harness.report.evaluation import evaluate_exam, score_evaluation

    with tempfile.TemporaryDirectory(prefix="exam-harness-autojudge-") as tmp:
        folder = Path(tmp)
        if nugget_banks is not None:
            banks = [folder / "banks.yaml"]
            write_bank_yaml(banks[0], nugget_banks_to_banks(nugget_banks, topics))
        elif settings.get("bank"):
            banks = [Path(p) for p in _list(settings["bank"])]
        else:
            raise ConfigError("the exam judge needs banks: nugget banks (--nugget-banks, or create_nuggets from "
                              "the 'bank' setting) or the 'bank' setting (a bank file or a list of them)")
        runs = folder / "runs"
        runs.mkdir()
        for name, text in rag_answer_files(reports_to_answers(reports, topics), "2025").items():
            atomic_write_text(runs / name, text)
        argv = evaluate_argv(runs, banks, settings)
        args = build_parser(argv).parse_args(argv)
        options = options_from_cli(args, (*GROUPS, REPORTS), defaults=OUTPUT_DEFAULTS)
        graded = obtain_grades(args, options)
    if graded.outcome.failures:
        examples = "; ".join(f"{p} on {t}: {m}" for (p, t), m in list(graded.outcome.failures.items())[:3])
        raise RuntimeError(f"{len(graded.outcome.failures):,} (answer, test point) pairs have no grade, and a "
                           f"failed grade is never scored (e.g. {examples})")
    plan = graded.plan
    scored = score_evaluation(graded.view, graded.outcome, plan, graded.spec, responses=graded.inputs.responses)
    result = evaluate_exam(scored, graded.spec, options)
    per_query = {(row.run, row.query_id): dict(row.scores) for row in result.per_query}
    systems = {s.run: {name: score.mean for name, score in s.scores.items()} for s in result.systems}
    # the labels of the answers judged: each answer is a generated run's segment, no collection passage
    cut = QrelsCut(plan.labels[0], plan.min_grades[0], plan.qrels_m, plan.pool, plan.k)
    first = scored.ctx.qrels(cut, generated=True)
    return ExamOutcome(per_query, systems, {q: dict(labels) for q, labels in first.items()},
                       tuple(dict.fromkeys(q for _, q in per_query)))


class ExamJudge:
    """exam-harness's exam behind autojudge-base's ``LeaderboardJudgeProtocol``, ``QrelsCreatorProtocol``
    and ``NuggetCreatorProtocol`` (name it in workflow.yml: ``judge_class:
    exam_harness.autojudge.judge.ExamJudge``)."""

    nugget_banks_type = NuggetBanks

    def __init__(self) -> None:
        self._last: tuple[Any, ExamOutcome] | None = None  # the three calls of one workflow grade once

    def _exam(self, reports: Iterable[Any], topics: Sequence[Any], nugget_banks: Any,
              settings: Mapping[str, Any]) -> ExamOutcome:
        reports = list(reports)
        texts = {t.request_id: t.title for t in topics}
        chosen = {k: v for k, v in settings.items() if k in SETTINGS}
        key = ([r.model_dump_json() for r in reports], sorted(texts.items()),
               None if nugget_banks is None else nugget_banks.model_dump_json(), repr(sorted(chosen.items())))
        if self._last is None or self._last[0] != key:
            self._last = (key, run_exam(reports, texts, nugget_banks, chosen))
        return self._last[1]

    def create_nuggets(self, rag_responses: Iterable[Any] | None, rag_topics: Sequence[Any], llm_config: Any,
                       nugget_banks: Any = None, corpus: str | None = None, **kwargs: Any) -> NuggetBanks:
        """The given nugget banks, else the ``bank`` setting's files, as NuggetBanks for ``rag_topics``."""
        if nugget_banks is not None:
            return nugget_banks
        if not kwargs.get("bank"):
            raise ConfigError("create_nuggets reads the exam's banks from the 'bank' setting (a bank file or a list)")
        from exam_harness.exam.inputs import ExamInputs
        from exam_harness.extensions import cli_registries

        registries = cli_registries()
        inputs = ExamInputs(registries.bank_formats, registries.run_formats)
        wanted = {t.request_id for t in rag_topics}
        banks = [b for p in _list(kwargs["bank"]) for b in inputs.load_bank_file(Path(p)) if b.query.id in wanted]
        return banks_to_nugget_banks(banks)

    def create_qrels(self, rag_responses: Iterable[Any], rag_topics: Sequence[Any], llm_config: Any,
                     nugget_banks: Any = None, corpus: str | None = None, **kwargs: Any) -> Qrels:
        """The EXAM-Qrels of the answers (each answer's exam passage id, its label at the first tau)."""
        exam = self._exam(rag_responses, rag_topics, nugget_banks, kwargs)
        return Qrels(rows=[QrelRow(topic_id=q, doc_id=p, grade=label)
                           for q, labels in sorted(exam.qrels.items()) for p, label in sorted(labels.items())])

    def judge(self, rag_responses: Iterable[Any], rag_topics: Sequence[Any], llm_config: Any,
              nugget_banks: Any = None, qrels: Any = None, corpus: str | None = None, **kwargs: Any) -> Leaderboard:
        """Every measure of the exam per run and topic; the 'all' rows are the runs' means."""
        exam = self._exam(rag_responses, rag_topics, nugget_banks, kwargs)
        rows = exam.per_query
        names = [n for n in dict.fromkeys(n for values in rows.values() for n in values)
                 if all(n in values for values in rows.values())]
        left_out = sorted({n for values in rows.values() for n in values} - set(names))
        if left_out:
            print(f"exam-harness judge: left out of the leaderboard (no value for every run and topic): "
                  f"{', '.join(left_out)}", file=sys.stderr)
        builder = LeaderboardBuilder(LeaderboardSpec(measures=tuple(MeasureSpec(n) for n in names)))
        for (run, topic), values in sorted(rows.items()):
            builder.add(run_id=run, topic_id=topic, values={n: values[n] for n in names})
        return builder.build(expected_topic_ids=[t.request_id for t in rag_topics], on_missing="fix_aggregate")
