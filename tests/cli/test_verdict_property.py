"""Issue 39, finding 7 (and the issue's done-when): ``exam-harness verdict`` on every report a session writes
gives the session's verdict and exit status, over generated gate settings and scores.

Each example runs two real pytest sessions of the marker-grader project: the first keeps its report
(``--exam-save``), the second is gated against it and by thresholds (and, sometimes, a baseline run); then
``exam-harness verdict`` reads the second session's ``reports/exam-report.json`` with the same gates. The new
user's case is pinned as an example: a weak run whose kept EXAM-Cover is below the allowed drop made the
session store a negative limit, which the verdict then refused as a document (exit 4 where the session
exited 1).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from exam_harness.cli import main
from exam_harness.results.schema import Verdict

pytest_plugins = ["pytester"]

PASSAGES = ("p1", "p2", "p3", "p4", "p5")  # p1 answers q1/a, p2 q1/b, p4 q2/c (tests/helpers.py COLLECTION)
Rankings = dict[str, dict[str, list[str]]]  # run -> query -> passage ids in rank order


def _run_text(run: str, by_query: dict[str, list[str]]) -> str:
    return "".join(f"{query} Q0 {pid} {rank} {10 - rank}.0 {run}\n"
                   for query, ranked in sorted(by_query.items()) for rank, pid in enumerate(ranked, 1))


_ranking = st.lists(st.sampled_from(PASSAGES), min_size=1, max_size=3, unique=True)
_rankings = st.fixed_dictionaries({run: st.fixed_dictionaries({"q1": _ranking, "q2": _ranking})
                                   for run in ("good", "weak")})
_fraction = st.integers(0, 100).map(lambda n: n / 100)
_threshold = st.tuples(st.sampled_from(["", "good=", "weak="]), st.sampled_from(["", "nugget-f:", "n-exam-cover:"]),
                       _fraction).map(lambda t: f"{t[0]}{t[1]}{t[2]:g}")
_allowance = st.one_of(
    st.tuples(st.sampled_from(["exam-cover", "n-exam-cover"]), _fraction).map(lambda t: f"{t[0]}:{t[1]:g}"),
    st.tuples(st.sampled_from(["exam-cover", "nugget-f"]), st.integers(0, 100)).map(lambda t: f"{t[0]}:{t[1]}%"))


@dataclass(frozen=True)
class Gates:
    thresholds: tuple[str, ...]
    allowances: tuple[str, ...]
    baseline: str | None

    def session(self) -> list[str]:
        return ([f"--exam-fail-under={t}" for t in self.thresholds]
                + ["--exam-compare=main", *(f"--exam-compare-fail={a}" for a in self.allowances)]
                + ([f"--exam-baseline={self.baseline}", "--exam-resamples=200"] if self.baseline else []))

    def verdict(self) -> list[str]:
        return ([f"--fail-under={t}" for t in self.thresholds]
                + ["--compare=main", *(f"--compare-fail={a}" for a in self.allowances)]
                + ([f"--baseline={self.baseline}", "--resamples=200"] if self.baseline else []))


_gates = st.builds(Gates, st.lists(_threshold, max_size=2).map(tuple), st.lists(_allowance, max_size=2).map(tuple),
                   st.sampled_from([None, None, "good", "weak"]))

# the new user's CI: a weak baseline (EXAM-Cover 0 in the kept report) under an absolute allowed drop of 0.05
WEAK_BASELINE: Rankings = {"good": {"q1": ["p1", "p2"], "q2": ["p4"]}, "weak": {"q1": ["p3"], "q2": ["p5"]}}


@pytest.mark.slow
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@example(kept=WEAK_BASELINE, now=WEAK_BASELINE, gates=Gates((), ("exam-cover:0.05",), None))
@example(kept=WEAK_BASELINE, now={**WEAK_BASELINE, "good": {"q1": ["p3"], "q2": ["p4"]}},
         gates=Gates(("0.3",), ("exam-cover:0.05",), "weak"))
@given(kept=_rankings, now=_rankings, gates=_gates)
def test_verdict_on_every_report_a_session_writes_gives_the_session_s_verdict_and_exit_status(
        project: pytest.Pytester, capsys: pytest.CaptureFixture[str], kept: Rankings, now: Rankings,
        gates: Gates) -> None:
    runs = project.path / "runs"
    for run, by_query in kept.items():
        (runs / f"{run}.run").write_text(_run_text(run, by_query))
    assert project.runpytest("banks", "--exam-save=main").ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)
    for run, by_query in now.items():
        (runs / f"{run}.run").write_text(_run_text(run, by_query))
    session = project.runpytest("banks", *gates.session())
    assert session.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), session.stdout.str()
    path = project.path / "reports" / "exam-report.json"
    saved = Verdict.model_validate(json.loads(path.read_text())["verdict"])
    capsys.readouterr()
    code = main(["verdict", str(path), *gates.verdict()])
    said = capsys.readouterr()
    assert code == session.ret, said.out + said.err
    out = said.out.splitlines()
    assert out[-1].startswith(f"verdict: {'passed' if saved.passed else 'failed'} ({len(saved.gates)} check")
    # every check the session stored, with its message: passed ones on stdout, failed ones on stderr
    assert out[:-1] == [g.message for g in saved.gates if g.passed]
    assert said.err.splitlines() == [g.message for g in saved.gates if not g.passed]


def test_verdict_on_a_session_report_with_a_stale_recording_fails_as_the_session_did(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A session under CI (stale=fail) fails on an edited system's recording; its report holds the system's
    health (the live-systems section), from which ``verdict`` decides the same check, not a pass."""
    import shutil

    from tests.features.live_systems.support import conftest, exam
    from tests.paths import REPO

    for folder in ("banks", "runs"):
        shutil.copytree(REPO / folder, pytester.path / folder)
    shutil.copy(REPO / "pyproject.toml", pytester.path / "pyproject.toml")
    monkeypatch.delenv("EXAM_SYSTEM_MODE", raising=False)
    monkeypatch.delenv("CI", raising=False)
    pytester.makeconftest(conftest())
    assert exam(pytester).ret == 0
    pytester.makeconftest(conftest(body="x = 1"))  # edited, not recorded again
    monkeypatch.setenv("CI", "true")
    session = exam(pytester)
    assert session.ret == pytest.ExitCode.TESTS_FAILED, session.stdout.str()
    path = pytester.path / "reports" / "exam-report.json"
    saved = Verdict.model_validate(json.loads(path.read_text())["verdict"])
    assert [g.gate for g in saved.gates if not g.passed] == ["exam-stale"]
    capsys.readouterr()
    try:
        assert main(["verdict", str(path)]) == session.ret
    finally:
        # verdict imports ./conftest.py, declaring its system in this process: forget it, as a session's end does
        # (a later in-process session would call it)
        from exam_harness.features.live_systems import declare

        declare.clear()
    assert capsys.readouterr().err.splitlines() == [g.message for g in saved.gates if not g.passed]
