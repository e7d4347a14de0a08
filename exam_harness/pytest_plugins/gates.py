"""CI gates, registered only when asked for: thresholds (``--exam-fail-under``), the baseline run
(``--exam-baseline``: no run significantly worse, paired test over queries) and regressions against a
kept report (``--exam-compare`` with ``--exam-compare-fail``). Every comparison is printed, significant
or not; the FAIL lines name the run, the measure, the values and the limit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from exam_harness.config.gates import check_measures, check_thresholds
from exam_harness.core.errors import ExamError
from exam_harness.core.registry import Registry
from exam_harness.measures.base import Measure
from exam_harness.pytest_plugins.reporting import ExamReporting
from exam_harness.pytest_plugins.state import setup_of
from exam_harness.results.gate_checks import Change, GateCheck, Verdicts, title
from exam_harness.results.preflight import load_reference
from exam_harness.results.schema import ExamReport
from exam_harness.results.verdict import Decision

GATES = ("exam-fail-under", "exam-baseline", "exam-compare-fail")  # the checks this plugin's options ask for


class ExamGates:
    def __init__(self, config: pytest.Config, reporting: ExamReporting) -> None:
        self.config = config
        self.reporting = reporting
        self.failures: list[str] = []
        self.sections: list[tuple[str, str]] = []  # (title, text) printed before the FAIL lines
        self.reference: tuple[str, ExamReport] | None = None
        self.changes: list[Change] = []
        self.checks: list[GateCheck] = []
        self.baseline_failures: list[str] = []
        self.notes: list[str] = []  # said after the leaderboard, before the FAIL lines
        self.registry: Registry[type[Measure]] | None = None

    def pytest_configure(self, config: pytest.Config) -> None:
        # The reference is read at start-up: a missing one stops the session before any grading.
        from exam_harness.results.history import NothingKept

        setup = setup_of(config)
        options = setup.options
        try:
            registries = setup.registries(config)
            self.registry = registries.measures
            # a gate on a measure no registry knows stops the session before grading (plugins are loaded now)
            check_thresholds(options.fail_under, self.registry, registries.gate_figures, "--exam-fail-under")
            check_measures([a.measure for a in options.compare_fail], self.registry, "--exam-compare-fail")
            self.reference = load_reference(options, Path(config.invocation_params.dir))
        except NothingKept as exc:
            if options.compare_required:
                raise pytest.UsageError(f"{exc} (--exam-compare-required)") from None
            # A first CI run has nothing kept yet: go on without the comparison, said (as pytest-benchmark does).
            gated = " and the --exam-compare-fail gates are not checked" if options.compare_fail else ""
            self.notes.append(f"warning: {exc}; this session is not compared{gated} "
                              "(--exam-compare-required makes this an error)")
        except ExamError as exc:
            raise pytest.UsageError(str(exc)) from None

    def show(self, decision: Decision, report: ExamReport) -> None:
        """The gates' part of the session's verdict (results/verdict.py), said in the terminal summary:
        every baseline comparison and every change against the reference, significant or not (silence
        would read as "no baseline"), then the FAIL lines."""
        options = setup_of(self.config).options
        self.checks = list(decision.thresholds)
        self.changes = list(decision.changes)
        gated = [r for r in decision.verdict.gates if r.gate in GATES]
        self.baseline_failures = [r.message for r in gated if r.gate == "exam-baseline" and not r.passed]
        if options.baseline is not None:
            from exam_harness.report.analysis_sections import baseline_section

            self.sections.append(baseline_section(decision.per_query, options.baseline, alpha=options.alpha,
                                                  method=options.significance, measure=decision.baseline_measure,
                                                  n_resamples=options.resamples))
        if self.reference is not None:
            name, reference = self.reference
            self.sections.append(_comparison_section(self.changes, reference, report, name, self.registry))
        # the order the FAIL lines have always been said in: the baseline, thresholds, regressions
        order = {gate: i for i, gate in enumerate(("exam-baseline", "exam-fail-under", "exam-compare-fail"))}
        self.failures += [r.message for r in sorted(gated, key=lambda r: order[r.gate]) if not r.passed]

    def verdicts(self) -> Verdicts:
        """The gates' decisions for the markdown summary and the HTML report."""
        options = setup_of(self.config).options
        return Verdicts(checks=self.checks, changes=self.changes,
                        reference=self.reference[0] if self.reference else None, alpha=options.alpha,
                        failures=self.baseline_failures)

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
        for line in self.notes:
            terminalreporter.write_line(line, yellow=True, bold=True)
        for heading, text in self.sections:
            terminalreporter.write_sep("-", heading)
            terminalreporter.write(text)
        for line in self.failures:
            terminalreporter.write_line(line, red=True, bold=True)


def _comparison_section(changes: list[Change], old: ExamReport, new: ExamReport, name: str,
                        registry: Registry[type[Measure]] | None) -> tuple[str, str]:
    # the flipped test points are the report's flips section (the flips feature's)
    from exam_harness.core.display import render_text
    from exam_harness.report.compare import changes_table

    table = changes_table(changes, new, title_suffix=f"against {name}", registry=registry)
    note = "" if old.settings.k == new.settings.k and old.settings.min_grade == new.settings.min_grade else (
        f"note: the reference was scored at k={old.settings.k}, tau={old.settings.min_grade}; this exam at "
        f"k={new.settings.k}, tau={new.settings.min_grade}\n")
    measures = ", ".join(dict.fromkeys(title(c.measure, new, registry) for c in changes))
    return f"exam: {measures or 'scores'} against {name}", render_text(table, 120) + note
