"""The exam as a TREC AutoJudge judge: :class:`ExamJudge` implements autojudge-base's three protocols.

Every call runs what ``exam-harness evaluate`` runs, on the same entry points (``session/grades.py``'s
``obtain_grades``, ``report/evaluation.py``'s ``evaluate_exam``), with the command line's plugins (the current
folder's conftest.py and the installed plugins: core/host.py's ``command_line_hook``): the reports become TREC RAG
answer files and the banks (the given NuggetBanks, else the workflow's ``bank`` files) a bank file in a temporary
folder, read through the format registries, graded by the workflow's ``grader`` (default: the harness's default,
``embedding``, which runs offline) through the grade cache, and scored by the plan's measures.

- ``create_nuggets`` -> the banks as NuggetBanks (:func:`~.convert.banks_to_nugget_banks`);
- ``create_qrels`` -> the EXAM-Qrels of the answers at the first minimum grade (the exam's passage ids:
  ``rag-`` and an MD5 prefix of the answer text);
- ``judge`` -> a Leaderboard with every measure ``evaluate`` reports per run and topic; autojudge-base adds
  each run's mean over the topics, which is the exam's per-run score.

Settings (workflow.yml ``settings`` / ``judge_settings``; ``-S key=value``): ``bank`` (a file or a list),
``grader``, ``grader_options`` (a mapping), ``min_grade``, ``k``, ``measures`` (a list), ``cache``
(``none``: in memory only), ``model`` (which of the injected ``llm_config``'s models an LLM grader uses) and
``report_text`` (``none``: the grade cache keeps no answer text, which may quote a report; the data policy
of the 2026 test phase). A pair without a grade stops the call (a failed grade is never scored).

An LLM grader over an OpenAI-compatible server (``grader: openai``) takes its endpoint and model from the
``llm_config`` autojudge-base injects (:func:`llm_endpoint`), unless ``grader_options`` name them; the URL is
no part of a grade's cache key, so a rerun against another endpoint, or none, reads the same grades.

One class per nugget-bank kind autojudge-base loads ``--nugget-banks`` files as (its ``nugget_banks_type``):
:class:`ExamJudge` (``NuggetBanks``), :class:`NuggetizerExamJudge` (``NuggetizerNuggetBanks``, nuggetizer's
create output) and :class:`Ragtime26ExamJudge` (``Ragtime26NuggetBanks``).
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from exam_harness.features.autojudge.nltk_offline import use_offline_nltk_data

use_offline_nltk_data()  # before autojudge-base is first imported: it would download NLTK data otherwise

from autojudge_base import Leaderboard, LeaderboardBuilder, LeaderboardSpec, MeasureSpec, QrelRow, Qrels  # noqa: E402
from autojudge_base.nugget_data import NuggetBanks, NuggetizerNuggetBanks, Ragtime26NuggetBanks  # noqa: E402

from exam_harness.config.options import EVALUATE, GRADING, RECORDED, REPORTS, SCORING, SIGNIFICANCE  # noqa: E402
from exam_harness.core.errors import ConfigError  # noqa: E402
from exam_harness.core.models import QueryBank  # noqa: E402
from exam_harness.features.autojudge.convert import (  # noqa: E402
    banks_to_nugget_banks,
    banks_to_nuggetizer_banks,
    banks_to_ragtime26_banks,
    nugget_banks_of,
    reports_to_answers,
)

if TYPE_CHECKING:
    import argparse

    from exam_harness.api import ExamOptions
    from exam_harness.session.registries import Registries

SETTINGS = ("bank", "grader", "grader_options", "min_grade", "k", "measures", "cache", "model", "report_text")
LLM_GRADERS = ("openai",)  # the graders that speak to the OpenAI-compatible endpoint llm_config names


@dataclass(frozen=True)
class LlmEndpoint:
    """The model, server and key an LLM grader is to use, from autojudge-base's injected ``llm_config``."""

    model: str
    base_url: str | None = None
    api_key: str | None = None


def llm_endpoint(llm_config: Any, wanted: str | None = None) -> LlmEndpoint | None:
    """The endpoint of ``llm_config`` (autojudge-base's ``LlmConfigBase``: ``model``, ``base_url``, ``api_key``,
    ``raw``), or of the model ``wanted`` among several: ``raw["models"]`` as the organisers' available-models
    file lists them (name -> ``{base_url, model_id, api_key_env}``). None without a config. A ``wanted``
    model the config does not offer is a ConfigError naming the ones it does."""
    import os

    if llm_config is None:
        return None
    raw = getattr(llm_config, "raw", None) or {}
    models = raw.get("models") if isinstance(raw, Mapping) else None
    default = str(getattr(llm_config, "model", "") or "")
    if isinstance(models, Mapping) and models:
        name = wanted or raw.get("default_model") or default
        entry = models.get(name)
        if not isinstance(entry, Mapping):
            raise ConfigError(f"model {name!r} is not among the injected llm_config's models: "
                              f"{', '.join(map(str, models))}")
        key_env = entry.get("api_key_env")
        return LlmEndpoint(str(entry.get("model_id") or name), entry.get("base_url") or None,
                           os.environ.get(str(key_env)) if key_env else None)
    if wanted and wanted != default:
        raise ConfigError(f"model {wanted!r} is not the injected llm_config's ({default!r}) and it lists no others")
    if not default:
        return None
    return LlmEndpoint(default, getattr(llm_config, "base_url", None) or None, getattr(llm_config, "api_key", None))


@dataclass(frozen=True)
class ExamOutcome:
    """One exam over the reports: the evaluation document (per-query values kept) and the EXAM-Qrels."""

    per_query: dict[tuple[str, str], dict[str, float]]  # (run, topic) -> measure name -> value
    systems: dict[str, dict[str, float]]  # run -> measure name -> mean over the topics
    qrels: dict[str, dict[str, int]]  # topic -> passage id -> label (first label variant, first tau)
    topics: tuple[str, ...]


def _list(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, (list, tuple)) else [str(value)]


# the option groups ``exam-harness evaluate`` reads, as its parser takes them (cli/evaluate.py)
EVALUATE_GROUPS = (GRADING, SCORING, RECORDED, SIGNIFICANCE, EVALUATE)


def evaluate_argv(runs: Path, banks: Sequence[Path], settings: Mapping[str, Any],
                  endpoint: LlmEndpoint | None = None) -> list[str]:
    """The ``exam-harness evaluate`` arguments the settings stand for (an LLM grader's model and server from
    ``endpoint`` where its options name none)."""
    grader = str(settings.get("grader", "embedding"))
    argv = ["evaluate", str(runs), "--bank", *map(str, banks), "--grader", grader, "--per-query", "--no-progress"]
    options = dict(settings.get("grader_options") or {})
    if endpoint is not None and grader in LLM_GRADERS:
        if "model" not in options:
            argv += ["--model", endpoint.model]
        for key, value in (("base_url", endpoint.base_url), ("api_key", endpoint.api_key)):
            if value and key not in options:
                options[key] = value
    for key, value in options.items():
        argv += ["--grader-option", f"{key}={value}"]
    if "min_grade" in settings:
        argv += ["--min-grade", *_list(settings["min_grade"])]
    if "k" in settings:
        argv += ["--k", str(settings["k"])]
    if "measures" in settings:
        argv += ["--measures", *_list(settings["measures"])]
    if "cache" in settings:
        argv += ["--cache", str(settings["cache"])]
    if "report_text" in settings:
        if settings["report_text"] not in ("keep", "none"):
            raise ConfigError(f"report_text={settings['report_text']!r}: 'keep' or 'none' (the grade cache keeps no "
                              "answer text)")
        argv += ["--cache-text", str(settings["report_text"])]
    return argv


def evaluate_options(argv: Sequence[str], registries: Registries) -> tuple[argparse.Namespace, ExamOptions]:
    """``argv`` (:func:`evaluate_argv`) read as ``exam-harness evaluate`` reads it: its run files, ``--bank`` files
    and the options of its groups, with the options the features and plugins of ``registries``' hook declare."""
    import argparse

    from exam_harness.config.options import BANK_FILES, RUN_FILES, FeatureOptions, add_cli_options, options_from_cli

    registries.hook.pytest_exam_add_options.call_historic(kwargs={"options": FeatureOptions()})
    parser = argparse.ArgumentParser(prog="exam-harness evaluate")
    RUN_FILES.add_to(parser, nargs="*")
    BANK_FILES.add_to(parser)
    add_cli_options(parser, EVALUATE_GROUPS)
    args = parser.parse_args(list(argv[1:]))
    return args, options_from_cli(args, (*EVALUATE_GROUPS, REPORTS), defaults={"report_dir": None})


def run_exam(reports: Sequence[Any], topics: Mapping[str, str], nugget_banks: Any,
             settings: Mapping[str, Any], endpoint: LlmEndpoint | None = None) -> ExamOutcome:
    """Grade and score ``reports`` as ``exam-harness evaluate`` does (see the module's docstring)."""
    from exam_harness.core.host import command_line_hook
    from exam_harness.features.trec_rag.answers import rag_answer_files
    from exam_harness.io.handbank import write_bank_yaml
    from exam_harness.io.textio import atomic_write_text
    from exam_harness.measures.qrels import QrelsCut
    from exam_harness.report.evaluation import evaluate_exam, score_evaluation
    from exam_harness.session.grades import obtain_grades
    from exam_harness.session.registries import Registries

    with tempfile.TemporaryDirectory(prefix="exam-harness-autojudge-") as tmp:
        folder = Path(tmp)
        if nugget_banks is not None:
            banks = [folder / "banks.yaml"]
            write_bank_yaml(banks[0], nugget_banks_of(nugget_banks, topics))  # importance and repeats kept
        elif settings.get("bank"):
            banks = [Path(p) for p in _list(settings["bank"])]
        else:
            raise ConfigError("the exam judge needs banks: nugget banks (--nugget-banks, or create_nuggets from "
                              "the 'bank' setting) or the 'bank' setting (a bank file or a list of them)")
        runs = folder / "runs"
        runs.mkdir()
        for name, text in rag_answer_files(reports_to_answers(reports, topics), "2025").items():
            atomic_write_text(runs / name, text)
        registries = Registries.from_hook(command_line_hook())
        args, options = evaluate_options(evaluate_argv(runs, banks, settings, endpoint), registries)
        graded = obtain_grades(args, options, registries=registries)
    if graded.outcome.failures:
        # a failure's message may quote the grader's answer: none under report_text none
        examples = "" if settings.get("report_text") == "none" else " (e.g. " + "; ".join(
            f"{p} on {t}: {m}" for (p, t), m in list(graded.outcome.failures.items())[:3]) + ")"
        raise RuntimeError(f"{len(graded.outcome.failures):,} (answer, test point) pairs have no grade, and a "
                           f"failed grade is never scored{examples}")
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
    exam_harness.features.autojudge.judge.ExamJudge``)."""

    nugget_banks_type: type = NuggetBanks

    def __init__(self) -> None:
        self._last: tuple[Any, ExamOutcome] | None = None  # the three calls of one workflow grade once

    @staticmethod
    def to_nugget_banks(banks: list[QueryBank]) -> Any:
        """The exam's banks as this judge's kind of nugget banks."""
        return banks_to_nugget_banks(banks)

    def _exam(self, reports: Iterable[Any], topics: Sequence[Any], nugget_banks: Any,
              settings: Mapping[str, Any], llm_config: Any = None) -> ExamOutcome:
        reports = list(reports)
        texts = {t.request_id: t.title for t in topics}
        chosen = {k: v for k, v in settings.items() if k in SETTINGS}
        endpoint = llm_endpoint(llm_config, chosen.get("model"))
        key = ([r.model_dump_json() for r in reports], sorted(texts.items()),
               None if nugget_banks is None else nugget_banks.model_dump_json(), repr(sorted(chosen.items())),
               endpoint)
        if self._last is None or self._last[0] != key:
            self._last = (key, run_exam(reports, texts, nugget_banks, chosen, endpoint))
        return self._last[1]

    def create_nuggets(self, rag_responses: Iterable[Any] | None, rag_topics: Sequence[Any], llm_config: Any,
                       nugget_banks: Any = None, corpus: str | None = None, **kwargs: Any) -> Any:
        """The given nugget banks, else the ``bank`` setting's files, as NuggetBanks for ``rag_topics``."""
        if nugget_banks is not None:
            return nugget_banks
        if not kwargs.get("bank"):
            raise ConfigError("create_nuggets reads the exam's banks from the 'bank' setting (a bank file or a list)")
        from exam_harness.core.host import command_line_hook
        from exam_harness.exam.inputs import ExamInputs
        from exam_harness.session.registries import Registries

        registries = Registries.from_hook(command_line_hook())
        inputs = ExamInputs(registries.bank_formats, registries.run_formats)
        wanted = {t.request_id for t in rag_topics}
        banks = [b for p in _list(kwargs["bank"]) for b in inputs.load_bank_file(Path(p)) if b.query.id in wanted]
        return self.to_nugget_banks(banks)

    def create_qrels(self, rag_responses: Iterable[Any], rag_topics: Sequence[Any], llm_config: Any,
                     nugget_banks: Any = None, corpus: str | None = None, **kwargs: Any) -> Qrels:
        """The EXAM-Qrels of the answers (each answer's exam passage id, its label at the first tau)."""
        exam = self._exam(rag_responses, rag_topics, nugget_banks, kwargs, llm_config)
        return Qrels(rows=[QrelRow(topic_id=q, doc_id=p, grade=label)
                           for q, labels in sorted(exam.qrels.items()) for p, label in sorted(labels.items())])

    def judge(self, rag_responses: Iterable[Any], rag_topics: Sequence[Any], llm_config: Any,
              nugget_banks: Any = None, qrels: Any = None, corpus: str | None = None, **kwargs: Any) -> Leaderboard:
        """Every measure of the exam per run and topic; the 'all' rows are the runs' means."""
        exam = self._exam(rag_responses, rag_topics, nugget_banks, kwargs, llm_config)
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


class NuggetizerExamJudge(ExamJudge):
    """:class:`ExamJudge` whose nugget banks are nuggetizer-style (``NuggetizerNuggetBanks``: nuggetizer's
    create output, the TREC RAG track's nugget files): ``--nugget-banks`` is read as that kind and
    ``create_nuggets`` writes it."""

    nugget_banks_type = NuggetizerNuggetBanks

    @staticmethod
    def to_nugget_banks(banks: list[QueryBank]) -> Any:
        return banks_to_nuggetizer_banks(banks)


class Ragtime26ExamJudge(ExamJudge):
    """:class:`ExamJudge` whose nugget banks are RAGTIME 2026's (``Ragtime26NuggetBanks``: questions with
    their answers)."""

    nugget_banks_type = Ragtime26NuggetBanks

    @staticmethod
    def to_nugget_banks(banks: list[QueryBank]) -> Any:
        return banks_to_ragtime26_banks(banks)
