"""Typed stash keys of the state the exam plugins share (pytest's own plugins share state this way)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from exam_harness.config.options import ExamOptions
from exam_harness.core.models import QueryBank
from exam_harness.core.xdist import is_worker as is_worker  # the plugins' roles under pytest-xdist, read here
from exam_harness.core.xdist import is_xdist_controller as is_xdist_controller
from exam_harness.exam.inputs import ExamInputs
from exam_harness.exam.plan import ExamPlan
from exam_harness.extensions import Registries
from exam_harness.grading.passes import GradingOutcome
from exam_harness.results.scored import ScoringInputs


@dataclass(frozen=True)
class GradedExam:
    """The plan and the grades of the banks a process graded; cases read their verdicts from it."""

    plan: ExamPlan
    grading: GradingOutcome
    banks: tuple[QueryBank, ...]
    # (run, query) -> the run's top-k passage ids there, computed once for the query's cases
    tops: dict[tuple[str, str], list[str]] = field(default_factory=dict, compare=False)

    def top_k(self, inputs: ExamInputs, run: str, query_id: str) -> list[str]:
        top = self.tops.get((run, query_id))
        if top is None:
            top = self.tops[run, query_id] = inputs.data.runs[run].top_k(query_id, self.plan.k)
        return top


@dataclass
class ExamSetup:
    """Options as given and the inputs they name; ``registries`` are built after the initial conftests."""

    options: ExamOptions
    bank_roots: list[Path]
    inputs: ExamInputs | None = None
    input_errors: list[str] = field(default_factory=list)
    # what the features add for their sections (pytest_exam_scoring_inputs, asked at configure)
    scoring_inputs: ScoringInputs = field(default_factory=ScoringInputs)
    # (name, value) -> one shared tuple: each case carries several user properties, most of them with
    # one of a few values (a grade, an outcome), and pytest copies them into three reports a case
    _properties: dict[tuple[str, object], tuple[str, object]] = field(default_factory=dict, repr=False)
    _registries: tuple[frozenset[object], Registries] | None = field(default=None, repr=False)

    def user_property(self, name: str, value: object) -> tuple[str, object]:
        """The ``(name, value)`` user property, one object per distinct pair (values are hashable)."""
        pair = (name, value)
        return self._properties.setdefault(pair, pair)

    def registries(self, config: pytest.Config) -> Registries:
        """The registries of the session, built from the hooks once; again only when a plugin that registers
        entries has come since (a conftest.py found during collection may register a grader or a measure)."""
        plugins = frozenset(impl.plugin for hook in (
            config.hook.pytest_exam_register_graders, config.hook.pytest_exam_register_bank_formats,
            config.hook.pytest_exam_register_run_formats, config.hook.pytest_exam_register_measures,
            config.hook.pytest_exam_register_reporters, config.hook.pytest_exam_register_sections)
            for impl in hook.get_hookimpls())
        if self._registries is None or self._registries[0] != plugins:
            self._registries = (plugins, Registries.from_hook(config.hook))
        return self._registries[1]

    def exam_inputs(self, config: pytest.Config) -> ExamInputs:
        """The inputs, created on first use with the formats plugins registered by then (the registries are
        brought up to date on every call: a conftest.py found since may have registered a section)."""
        registries = self.registries(config)
        if self.inputs is None:
            inputs = ExamInputs(registries.bank_formats, registries.run_formats, redact=self.options.redact)
            inputs.given_runs, inputs.given_banks = tuple(self.options.runs), tuple(self.bank_roots)
            # the features' options may configure the formats or supply files (TREC RAG's --exam-assignments)
            config.hook.pytest_exam_inputs(options=self.options, front="pytest", inputs=inputs)
            self.inputs = inputs
        return self.inputs


SETUP_KEY: pytest.StashKey[ExamSetup] = pytest.StashKey()
GRADED_KEY: pytest.StashKey[GradedExam] = pytest.StashKey()


def setup_of(config: pytest.Config) -> ExamSetup:
    return config.stash[SETUP_KEY]
