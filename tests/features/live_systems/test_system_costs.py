"""A live system's latency (p50/p95), tokens and cost from its manifest: the system-costs section of
the result document, and ``--exam-fail-under=RUN=latency-p95:X`` style gates where lower is better
(issue 28, item 6)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.features.live_systems.support import QUERIES, conftest, exam
from tests.features.live_systems.support import example as example  # the example project fixture

pytest_plugins = ["pytester"]

COSTED_SYSTEM = '''
@exam_harness.system("costed-rag")
def costed_rag(query):
    return exam_harness.Answer("The moon's pull raises tides; vaccines train memory cells.", tokens=100, cost=0.25)
'''


def _manifest(folder: Path, run: str, latencies: list[float]) -> None:
    """A manifest as a recording writes it, with the latencies given (the section reads only its queries)."""
    queries = {f"q{i}": {"latency_s": s, "tokens": 10, "cost": 0.5} for i, s in enumerate(latencies)}
    (folder / f"{run}.system.json").write_text(json.dumps({"system": run, "queries": queries, "errors": {}}))


def _section(pytester: pytest.Pytester) -> dict[str, dict[str, object]]:
    report = json.loads((pytester.path / "reports" / "exam-report.json").read_text())
    return {row["run"]: row for row in report["sections"]["system-costs"]["systems"]}


def test_a_recorded_system_has_its_latency_tokens_and_cost_in_every_output(example: pytest.Pytester) -> None:
    from exam_harness.features.live_systems.costs import percentile

    example.makeconftest(conftest(extra=COSTED_SYSTEM))
    result = exam(example, "--exam-markdown", "summary.md", "--exam-html", "html")
    manifest = json.loads((example.path / "runs" / "costed-rag.system.json").read_text())
    latencies = [info["latency_s"] for info in manifest["queries"].values()]
    assert len(latencies) == len(QUERIES)
    rows = _section(example)
    assert set(rows) == {"dict-rag", "costed-rag"}  # the file runs have no manifest, so no row
    costed = rows["costed-rag"]
    assert costed["latency_p50"] == round(percentile(latencies, 50), 4)
    assert costed["latency_p95"] == round(percentile(latencies, 95), 4)
    assert (costed["tokens"], costed["cost"]) == (100 * len(QUERIES), 0.25 * len(QUERIES))
    assert rows["dict-rag"]["tokens"] is None and rows["dict-rag"]["cost"] is None
    markdown = (example.path / "summary.md").read_text()
    assert "System latency and cost" in markdown and "| costed-rag | 4 | 0 |" in markdown
    page = "".join(p.read_text() for p in (example.path / "html").rglob("*.html"))
    assert '<section id="system-costs">' in page and "<td>costed-rag</td><td>4</td><td>0</td>" in page
    result.stdout.fnmatch_lines(["*system costed-rag: latency p50 * p95 * over 4 queries; tokens 400; cost $1.00*"])


def test_percentiles_interpolate_between_ranks() -> None:
    from exam_harness.features.live_systems.costs import percentile

    assert percentile([0.1, 0.2, 0.3, 4.0], 50) == pytest.approx(0.25)
    assert percentile([0.1, 0.2, 0.3, 4.0], 95) == pytest.approx(0.3 + 3.7 * 0.85)
    assert percentile([2.0], 95) == 2.0


@pytest.mark.slow
def test_a_latency_gate_fails_a_slow_system_and_passes_a_fast_one(example: pytest.Pytester) -> None:
    """Recorded manifests beside two file runs: one slow at p95 (3.445 s), one fast (0.3 s)."""
    from exam_harness.cli import main

    example.makeconftest(conftest())  # the example's grader, and dict-rag recorded (fast)
    _manifest(example.path / "runs", "weak-ranker", [0.1, 0.2, 0.3, 4.0])
    _manifest(example.path / "runs", "strong-ranker", [0.1, 0.2, 0.3, 0.3])
    result = exam(example, "--exam-fail-under", "latency-p95:2.5", "--exam-fail-under", "strong-ranker=cost:1.5",
                  "--exam-markdown", "summary.md")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*FAIL latency p95 (s) of run 'weak-ranker' is 3.445, above the allowed 2.5 "
                                 "(lower is better)*"])
    report = json.loads((example.path / "reports" / "exam-report.json").read_text())
    gates = {(g["run"], g["measure"]): g["passed"] for g in report["verdict"]["gates"] if g["gate"] == "exam-fail-under"}
    # the threshold for every run gates the runs with a manifest only; the rag-generator run has none
    assert gates == {("weak-ranker", "latency-p95"): False, ("strong-ranker", "latency-p95"): True,
                     ("dict-rag", "latency-p95"): True,
                     ("strong-ranker", "cost"): False}
    assert "latency p95 (s), at most" in (example.path / "summary.md").read_text()
    saved = str(example.path / "reports" / "exam-report.json")
    try:
        assert main(["verdict", saved, "--fail-under", "weak-ranker=latency-p95:2.5"]) == 1
        assert main(["verdict", saved, "--fail-under", "strong-ranker=latency-p95:2.5"]) == 0
        assert main(["verdict", saved, "--fail-under", "latency-p95:5"]) == 0
        # a run without a manifest cannot meet a limit named for it
        assert main(["verdict", saved, "--fail-under", "rag-generator=latency-p95:5"]) == 1
    finally:
        # verdict reads ./conftest.py for plugin measures, declaring its system in this process: forget it,
        # as a session's end does (later in-process sessions would call it)
        from exam_harness.features.live_systems import declare

        declare.clear()


def test_a_system_figure_threshold_reads_any_number_and_refuses_mofk() -> None:
    from exam_harness.config.gates import parse_threshold

    t = parse_threshold("my-rag=Latency-P95:2.5")
    assert (t.run, t.measure, t.value) == ("my-rag", "latency-p95", 2.5)
    assert parse_threshold("tokens:20000").value == 20000
    with pytest.raises(ValueError, match=">= 0"):
        parse_threshold("cost:-1")
    with pytest.raises(ValueError, match="@MofK"):
        parse_threshold("latency-p50:2@2of3")


def test_an_unreadable_manifest_is_a_note_not_a_crash(tmp_path: Path) -> None:
    from exam_harness.features.live_systems.costs import system_costs

    (tmp_path / "a.system.json").write_text("{not json")
    _manifest(tmp_path, "b", [1.0])
    (tmp_path / "c.system.json").write_text(json.dumps({"queries": {"q": {"latency_s": "slow"}}}))
    found = system_costs(["a", "b", "c", "d"], [tmp_path / "b.run"])
    assert found is not None
    assert [s.run for s in found.systems] == ["b"]
    assert len(found.notes) == 2 and "a.system.json" in found.notes[0]
    assert "queries.q.latency_s" in found.notes[1]
    assert system_costs(["d"], [tmp_path]) is None
