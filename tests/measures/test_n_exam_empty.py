"""n-EXAM over queries whose pool covers no test point: ``skip`` leaves them out of the mean (and says
so), ``zero`` scores them 0 as the reference implementation does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from exam_harness.cli import main
from tests.helpers import evaluation_boards, report_values

pytest_plugins = ["pytester"]
EMPTY_Q2 = """\
queries:
  - id: q1
    text: first query
    questions:
      - {id: q1/a, text: question a}
  - id: q2
    text: second query
    questions:
      - {id: q2/z, text: a question no passage answers}
"""


def _n_exam(project: pytest.Pytester) -> dict[tuple[str, str], float | None]:
    report = json.loads((project.path / "reports" / "exam-report.json").read_text())
    return report_values(report, "n-exam-cover")


def test_dropped_queries_are_named_and_zero_keeps_them(project: pytest.Pytester) -> None:
    (project.path / "banks" / "exam.yaml").write_text(EMPTY_Q2)
    skipped = project.runpytest("banks")
    skipped.stdout.fnmatch_lines(["note: n-EXAM@20 leaves out 1 of 2 queries whose pool covers no test point at τ=4 "
                                  "(q2); --exam-n-exam-empty zero scores them 0"])
    assert _n_exam(project)[("good", "q2")] is None
    zero = project.runpytest("banks", "--exam-n-exam-empty=zero")
    assert "leaves out" not in zero.stdout.str()
    assert _n_exam(project)[("good", "q2")] == 0.0


@pytest.mark.realdata
def test_zero_reproduces_the_reference_at_tau_5_on_dl19(shared_data: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """At τ = 5 three DL19 queries have a pool that covers nothing: the reference averages n-EXAM over
    all 43 queries with those at 0; skipping them averages over 40 (up to 0.041 higher)."""
    monkeypatch.chdir(shared_data / "dl19")
    means = {}
    for empty in ("skip", "zero"):
        out = tmp_path / f"{empty}.json"
        assert main(["evaluate", "dl19-graded-flan-t5-large-selfrating.jsonl.gz", "--min-grade", "5", "--brief",
                     "--no-progress", "--no-alpha-ndcg", "--n-exam-empty", empty, "--json", str(out)]) == 0
        board = next(b for b in evaluation_boards(json.loads(out.read_text())) if b["measure"] == "n-exam-cover@20")
        means[empty] = board["systems"]
    runs = means["zero"].keys()
    for run in runs:
        assert means["zero"][run] == pytest.approx(means["skip"][run] * 40 / 43, abs=1e-12)
    gap = max(means["skip"][r] - means["zero"][r] for r in runs)
    assert 0.03 < gap <= 0.0415
