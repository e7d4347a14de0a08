"""The sample feature's hook implementations (undecorated, as a conftest.py's may be)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tests.features.sample_feature.section import (
    MIN_WORDS,
    MIN_WORDS_INPUT,
    NAME,
    LongPassagesCommand,
    LongPassagesSection,
    LongShare,
)

if TYPE_CHECKING:
    from exam_harness.api import (
        Command,
        ExamOptions,
        FeatureOptions,
        GateFigure,
        Registry,
        ScoringFront,
        ScoringInputs,
        Section,
    )


def pytest_exam_add_options(options: FeatureOptions) -> None:
    options.add(MIN_WORDS)


def pytest_exam_scoring_inputs(options: ExamOptions, front: ScoringFront, inputs: ScoringInputs) -> None:
    words = options.feature(MIN_WORDS)
    if words is not None:
        inputs.set(MIN_WORDS_INPUT, words)


def pytest_exam_register_sections(registry: Registry[Section]) -> None:
    registry.register(NAME, LongPassagesSection(), "each run's share of long top-k passages")


def pytest_exam_register_gate_figures(registry: Registry[GateFigure]) -> None:
    registry.register("long-share", LongShare(), "a run's share of long top-k passages (section long-passages)")


def pytest_exam_register_commands(registry: Registry[Command]) -> None:
    registry.register("long-passages", LongPassagesCommand(), "the long-passages section of a saved document")
