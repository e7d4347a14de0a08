"""The live-systems feature's hook implementations: its options, sections, gate figures and subcommand, the
session plugin that calls the declared systems, what a session's systems left unanswered and the verdict's
``exam-stale`` check.

``tryfirst``: an in-tree feature's entries come before a third-party plugin's (pluggy calls the latest
registered plugin first; both front ends register the features before any other plugin).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from exam_harness.api import hookimpl

if TYPE_CHECKING:
    import pytest

    from exam_harness.api import (
        Command,
        EvaluationReport,
        ExamOptions,
        ExamReport,
        FeatureOptions,
        GateFigure,
        GateResult,
        Registry,
        Scored,
        ScoringInputs,
        Section,
    )
    from exam_harness.exam.inputs import ExamInputs

_HERE = "exam_harness.features.live_systems"


@hookimpl(tryfirst=True)
def pytest_exam_add_options(options: FeatureOptions) -> None:
    from exam_harness.features.live_systems.options import OPTIONS

    for option in OPTIONS:
        options.add(option)


@hookimpl(tryfirst=True)
def pytest_exam_register_sections(registry: Registry[Section]) -> None:
    # first of the sections after the leaderboards, where documents and views have always shown them
    registry.register("live-systems", f"{_HERE}.section:SECTION",
                      "the declared live systems' health: stale recordings, the stale policy, missing and failed "
                      "queries", before="decided-by")
    registry.register("system-costs", f"{_HERE}.costs:SECTION",
                      "each live system's latency p50/p95, tokens and cost from its manifest (docs/live-systems.md)",
                      before="decided-by")


@hookimpl(tryfirst=True)
def pytest_exam_register_gate_figures(registry: Registry[GateFigure]) -> None:
    for name, attr in (("latency-p50", "LATENCY_P50"), ("latency-p95", "LATENCY_P95"), ("tokens", "TOKENS"),
                       ("cost", "COST")):
        registry.register(name, f"{_HERE}.figures:{attr}",
                          f"a live system's {name} from its manifest, lower is better (docs/ci.md)")


@hookimpl(tryfirst=True)
def pytest_exam_register_commands(registry: Registry[Command]) -> None:
    registry.register("record", f"{_HERE}.record:COMMAND",
                      "call the declared systems and record their answers, without grading")


@hookimpl(tryfirst=True)
def pytest_exam_configure(config: pytest.Config, options: ExamOptions, inputs: Callable[[], ExamInputs],
                          scoring: ScoringInputs) -> None:
    from exam_harness.features.live_systems.inputs import SESSION
    from exam_harness.features.live_systems.pytest_session import PLUGIN, ExamSystems

    systems = ExamSystems(config, options, inputs)  # reads the inputs' options (a topic file, --exam-trec-rag-topics)
    config.pluginmanager.register(systems, PLUGIN)
    scoring.set(SESSION, systems)


@hookimpl(tryfirst=True)
def pytest_exam_unanswered(scored: Scored) -> Mapping[str, Collection[str]] | None:
    # the queries a manifest beside the runs records a failure for (any front end), and this session's failures
    from exam_harness.features.live_systems.inputs import SESSION
    from exam_harness.features.live_systems.recording import system_failures

    found = system_failures(scored.runs, scored.run_folders)
    session = scored.input(SESSION)
    for run, queries in (session.unanswered() if session is not None else {}).items():
        found.setdefault(run, set()).update(queries)
    return found


@hookimpl(tryfirst=True)
def pytest_exam_run_notes(runs: Collection[str], folders: Sequence[Path]) -> list[str] | None:
    from exam_harness.features.live_systems.recording import unanswered_system_notes

    return unanswered_system_notes(runs, folders)


@hookimpl(tryfirst=True)
def pytest_exam_verdict_checks(document: ExamReport | EvaluationReport) -> list[GateResult] | None:
    if "live-systems" not in document.sections:
        return None
    from exam_harness.features.live_systems.section import stale_results

    return stale_results(document.sections["live-systems"])  # a stale recording under stale=fail
