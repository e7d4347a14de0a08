"""The repo's own example exam (banks/ x runs/) with the offline default grader, end to end.

This is what ``make exam`` runs: it must rank the good system above the weak one, write the
reports, hit the cache on a second run and honour the fail-under gate.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from exam_harness.io import load_bank
from tests.helpers import report_means
from tests.paths import REPO

pytest_plugins = ["pytester"]


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the example with a warm cache shared by this module's tests (the cold run is the first)."""
    root = tmp_path_factory.mktemp("example")
    shutil.copytree(REPO / "banks", root / "banks")
    shutil.copytree(REPO / "runs", root / "runs")
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    return root


def readme_notes() -> list[str]:
    """The lines of the README's ``make exam`` output that state something of the judge (no timing in them)."""
    readme = (REPO / "README.md").read_text()
    block = re.search(r"What `make exam` prints.*?```\n(.*?)```", readme, re.S)
    assert block is not None, "README.md: no `make exam` output block"
    return [line for line in block.group(1).splitlines() if line.startswith(("grades decided by", "note: ", "WARNING: "))]


def run_exam(pytester: pytest.Pytester, root: Path, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("--rootdir", str(root), "-c", str(root / "pyproject.toml"), str(root / "banks"), "-p", "no:cacheprovider", *args)


@pytest.mark.slow
def test_example_exam_ranks_good_above_weak_and_caches(pytester: pytest.Pytester, example: Path) -> None:
    cold = run_exam(pytester, example)
    assert cold.ret == 0, cold.stdout.str()
    cold.stdout.fnmatch_lines(["*exam leaderboard*", "*strong-ranker*", "*weak-ranker*", "*passed*missed*"])
    said = readme_notes()  # the README's example output states what the session states of its judge, word for word
    assert len(said) == 3 and all(line in cold.stdout.lines for line in said), said
    report = json.loads((example / "reports" / "exam-report.json").read_text())
    covers = report_means(report)
    assert set(covers) == {"strong-ranker", "weak-ranker", "rag-generator"}
    assert covers["strong-ranker"] > covers["rag-generator"] > covers["weak-ranker"]
    assert report["cache"]["misses"] > 0
    assert sorted(p.name for p in (example / "reports").glob("*.qrels")) == [
        "exam-at-least-2-min4.qrels", "exam-count-min4.qrels", "exam-max-grade.qrels"]
    n_points = sum(len(b.test_points) for b in load_bank(example / "banks" / "example.yaml"))
    assert report["test_points"] == n_points

    # warm, and gated: every grade from the cache, and a gate the weak ranker misses fails the session
    gated = run_exam(pytester, example, "--exam-fail-under=0.99")
    assert gated.ret == 1
    gated.stdout.fnmatch_lines(["*0 misses (100.0% hits)*"])
    gated.stdout.fnmatch_lines(["*Required EXAM-Cover@20 of 0.99 not reached by run 'weak-ranker'*"])
    assert run_exam(pytester, example, "--exam-fail-under=0").ret == 0


def test_example_collects_readable_ids(pytester: pytest.Pytester, example: Path) -> None:
    result = run_exam(pytester, example, "--collect-only", "-q")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*banks/example.yaml::tides::tides/*[[]strong-ranker]"])


def test_example_junit_has_one_testcase_per_case(pytester: pytest.Pytester, example: Path) -> None:
    import xml.etree.ElementTree as ET

    result = run_exam(pytester, example, f"--junitxml={example / 'junit.xml'}")
    assert result.ret == 0
    suite = ET.parse(example / "junit.xml").getroot().find("testsuite")
    assert suite is not None
    cases = suite.findall("testcase")
    n_points = sum(len(b.test_points) for b in load_bank(example / "banks" / "example.yaml"))
    assert len(cases) == int(suite.get("tests", -1)) == 3 * n_points  # every test point x every run
    missed = [c for c in cases if c.find("skipped") is not None]
    assert int(suite.get("skipped", -1)) == len(missed) > 0
    assert all((c.find("skipped").get("message") or "").startswith("missed ") for c in missed)  # type: ignore[union-attr]
    report = json.loads((example / "reports" / "exam-report.json").read_text())
    assert sum(s["outcomes"]["missed"] for s in report["systems"]) == len(missed)
    result.stdout.fnmatch_lines([f"*{len(cases) - len(missed)} passed, {len(missed)} missed*"])
