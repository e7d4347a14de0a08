"""The declared surface of exam-harness for plugins: every name a plugin, in-tree feature or not, imports.

``from exam_harness.api import Section, hookimpl, ...``: the names below are the API (docs/extending.md lists
them by kind); a module path behind them may move, these names do not. Each is imported on first use, so
``import exam_harness.api`` stays as light as ``import exam_harness``. The in-tree features (exam_harness/features)
import from here and from the layers below the features (tests/project/test_architecture.py).

Kinds of name:

- hooks: ``hookspec``, ``hookimpl`` (pytest's markers, without importing pytest), ``Registry``;
- what a plugin registers: ``Measure``; ``Grader``, ``GraderConfig``, ``GraderOption``, ``option_field``,
  ``shared_option``, ``GradingRequest``, ``Grade``; ``Engine``, ``EngineBatch``, ``EngineStopped``, ``GraderRecipe``
  (a grading engine, hook ``pytest_exam_grading_engine``); ``Section``, ``Placement``, ``preformatted_markdown``,
  ``preformatted_html``; ``Writer``, ``WriterInput``, ``Binary``; ``BankFormat``, ``RunFormat``, ``FilePart``;
  ``Command``; ``LabelScreen`` with ``LabelPair`` and ``LabelStep`` (a screen of ``exam-harness label``);
- options: ``ExamOptions``, ``FeatureOption``, ``FeatureOptions``, ``feature_option``, ``Argument`` and the
  converters ``text``, ``integer``, ``number``, ``choice``, ``boolean``;
- scoring inputs: ``Scored``, ``ScoringInputs``, ``InputKey``, ``ScoringFront``; ``Graded``, ``ExtraGrading`` (pairs
  graded beyond the pool, hook ``pytest_exam_extra_grading``);
- gates: ``GateFigure``, ``GateResult``, ``HoldingFigure`` and its name ``HOLDING_FIGURE`` (the figure of ``@MofK``);
- live systems: ``system``, ``http_system``, ``command_system``, ``Answer``, ``Passage``, ``Sentence``,
  ``Secret`` (the live-systems feature's declarations, named by their module alone: the API stands below the
  features, so no import statement here names one; ``exam_harness/__init__.py`` re-exports them typed), ``Query``;
- the documents and what the event hooks hand over: ``ExamReport``, ``EvaluationReport``, ``Verdict``,
  ``read_document``, ``ExamPlan``, ``GradingOutcome``;
- errors: ``ExamError``, ``ConfigError``, ``InputError``; and ``__version__``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from exam_harness.analysis.label_screens import LabelPair, LabelScreen, LabelStep
    from exam_harness.config.commands import Command
    from exam_harness.config.gates import HOLDING_FIGURE, GateFigure, GateResult, HoldingFigure
    from exam_harness.config.options import (
        Argument,
        ExamOptions,
        FeatureOption,
        FeatureOptions,
        GraderOption,
        boolean,
        choice,
        feature_option,
        integer,
        number,
        option_field,
        shared_option,
        text,
    )
    from exam_harness.core.errors import ConfigError, ExamError, InputError
    from exam_harness.core.models import Grade, GradingRequest, Query
    from exam_harness.core.registry import Registry
    from exam_harness.core.version import __version__
    from exam_harness.exam.plan import ExamPlan
    from exam_harness.graders.base import Grader, GraderConfig
    from exam_harness.graders.registry import GraderRecipe
    from exam_harness.grading.engines import Engine, EngineBatch, EngineStopped
    from exam_harness.grading.passes import GradingOutcome
    from exam_harness.hookspecs import hookimpl, hookspec
    from exam_harness.io.formats import BankFormat, RunFormat
    from exam_harness.io.parts import FilePart
    from exam_harness.measures.base import Measure
    from exam_harness.report.writers import Binary, Writer, WriterInput
    from exam_harness.results.document import read_document
    from exam_harness.results.evaluation import EvaluationReport
    from exam_harness.results.schema import ExamReport, Verdict
    from exam_harness.results.scored import InputKey, Scored, ScoringFront, ScoringInputs
    from exam_harness.results.sections import Placement, Section, preformatted_html, preformatted_markdown
    from exam_harness.session.grades import ExtraGrading, Graded

_WHERE: dict[str, tuple[str, ...]] = {
    "exam_harness.hookspecs": ("hookspec", "hookimpl"),
    "exam_harness.core.registry": ("Registry",),
    "exam_harness.measures.base": ("Measure",),
    "exam_harness.graders.base": ("Grader", "GraderConfig"),
    "exam_harness.graders.registry": ("GraderRecipe",),
    "exam_harness.grading.engines": ("Engine", "EngineBatch", "EngineStopped"),
    "exam_harness.core.models": ("GradingRequest", "Grade", "Query"),
    "exam_harness.results.sections": ("Section", "Placement", "preformatted_markdown", "preformatted_html"),
    "exam_harness.report.writers": ("Writer", "WriterInput", "Binary"),
    "exam_harness.io.formats": ("BankFormat", "RunFormat"),
    "exam_harness.io.parts": ("FilePart",),
    "exam_harness.config.commands": ("Command",),
    "exam_harness.analysis.label_screens": ("LabelScreen", "LabelPair", "LabelStep"),
    "exam_harness.config.options": ("ExamOptions", "FeatureOption", "FeatureOptions", "feature_option", "Argument",
                                    "GraderOption", "option_field", "shared_option", "text", "integer", "number",
                                    "choice", "boolean"),
    "exam_harness.results.scored": ("Scored", "ScoringInputs", "InputKey", "ScoringFront"),
    "exam_harness.session.grades": ("Graded", "ExtraGrading"),
    "exam_harness.config.gates": ("GateFigure", "GateResult", "HoldingFigure", "HOLDING_FIGURE"),
    "exam_harness.features.live_systems.declare": ("system", "http_system", "command_system", "Answer", "Passage",
                                                   "Sentence", "Secret"),
    "exam_harness.results.schema": ("ExamReport", "Verdict"),
    "exam_harness.results.evaluation": ("EvaluationReport",),
    "exam_harness.results.document": ("read_document",),
    "exam_harness.exam.plan": ("ExamPlan",),
    "exam_harness.grading.passes": ("GradingOutcome",),
    "exam_harness.core.errors": ("ExamError", "ConfigError", "InputError"),
    "exam_harness.core.version": ("__version__",),
}
_MODULE_OF = {name: module for module, names in _WHERE.items() for name in names}
__all__ = ["HOLDING_FIGURE", "Argument", "BankFormat", "Binary", "Command", "ConfigError", "Engine", "EngineBatch",
           "EngineStopped", "EvaluationReport", "ExamError", "ExamOptions", "ExamPlan", "ExamReport", "ExtraGrading",
           "FeatureOption", "FeatureOptions", "FilePart", "GateFigure", "GateResult", "Grade", "Graded", "Grader",
           "GraderConfig", "GraderOption", "GraderRecipe", "GradingOutcome", "GradingRequest", "HoldingFigure",
           "InputError", "InputKey", "LabelPair", "LabelScreen", "LabelStep", "Measure", "Placement", "Query",
           "Registry", "RunFormat", "Scored", "ScoringFront", "ScoringInputs", "Section", "Verdict", "Writer",
           "WriterInput", "__version__", "boolean", "choice", "feature_option", "hookimpl", "hookspec", "integer",
           "number", "option_field", "preformatted_html", "preformatted_markdown", "read_document", "shared_option",
           "text"]
# the live-systems feature's declarations: named by their module alone (see the module docstring), typed Any here
__all__ += ["Answer", "Passage", "Secret", "Sentence", "command_system", "http_system", "system"]  # noqa: F822


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'exam_harness.api' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next access is a plain attribute
    return value


def __dir__() -> list[str]:
    return __all__
