"""Kept and compared reports are data to validate: a report with NaN, infinite, negative, out-of-range or
wrongly typed numbers is refused naming its file and field (``compare --fail`` and ``--exam-compare-fail``
would otherwise pass whatever the scores); concurrent ``--exam-save`` sessions get distinct numbers; save
names are checked like run names before grading. Each refused file is left byte for byte as it was."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
from pathlib import Path
from typing import Any

import pytest

import tests.paths as tests_paths
from exam_harness.cli import main
from exam_harness.core.errors import InputError
from exam_harness.results import history
from exam_harness.results.read import read_report
from exam_harness.results.schema import ExamReport

pytest_plugins = ["pytester"]

GOLDEN = tests_paths.GOLDEN / "exam-report.json"


def _raw() -> dict[str, Any]:
    raw: dict[str, Any] = json.loads(GOLDEN.read_text())
    raw.update(tool_version="0", created="2026-01-01T00:00:00Z")
    return raw


def _set(raw: dict[str, Any], where: str, value: Any) -> None:
    *path, last = [int(p) if p.isdigit() else p for p in where.split(".")]
    node: Any = raw
    for part in path:
        node = node[part]
    node[last] = value


NAN, INF = float("nan"), float("inf")
# (field, poisoned value, what the message says)
POISONS = [
    ("systems.0.scores.exam-cover(tau=4)@20.mean", NAN, "finite"),
    ("systems.0.scores.exam-cover(tau=4)@20.mean", INF, "finite"),
    ("systems.0.scores.exam-cover(tau=4)@20.mean", -INF, "finite"),
    ("systems.0.scores.exam-cover(tau=4)@20.mean", -0.5, "not negative"),
    ("systems.0.scores.exam-cover(tau=4)@20.mean", 1.5, "out of range"),
    ("systems.0.scores.exam-cover(tau=4)@20.mean", "0.5", "valid number"),
    ("systems.0.scores.exam-cover(tau=4)@20.mean", None, "valid number"),
    ("systems.0.scores.exam-cover(tau=4)@20.mean", True, "valid number"),
    ("systems.0.scores.n-exam-cover(tau=4,pool=judged,empty=skip)@20.mean", NAN, "finite"),
    ("systems.0.scores.n-exam-cover(tau=4,pool=judged,empty=skip)@20.mean", 7, "out of range"),
    ("systems.0.scores.exam-cover(tau=4)@20.stderr", NAN, "finite"),
    ("systems.0.scores.exam-cover(tau=4)@20.stderr", -0.1, "not negative"),
    ("systems.0.queries", 2.0, "valid integer"),
    ("systems.0.queries", "2", "valid integer"),
    ("systems.0.queries", -2, "not negative"),
    ("per_query.0.scores.exam-cover(tau=4)@20", NAN, "finite"),
    ("per_query.0.scores.exam-cover(tau=4)@20", -1, "not negative"),
    ("per_query.0.scores.exam-cover(tau=4)@20", 2, "out of range"),
    ("per_query.0.covered", -1, "not negative"),
    ("per_query.0.covered", "1", "valid integer"),
    ("cache.hits", "3", "valid integer"),
    ("cache.grading_seconds", NAN, "finite"),
    ("queries", True, "valid integer"),
    ("test_points", 1e400, "finite number"),
    ("outcomes.0.best_grade", -1, "not negative"),
    ("outcomes.0.best_grade", 4.0, "valid integer"),
    ("systems.0.grade_counts.5", -3, "not negative"),
]


@pytest.mark.parametrize(("field", "value", "says"), POISONS,
                         ids=[f"{f}={v!r}" for f, v, _ in POISONS])
def test_a_poisoned_report_is_refused_naming_file_and_field(tmp_path: Path, field: str, value: Any, says: str) -> None:
    raw = _raw()
    _set(raw, field, value)
    path = tmp_path / "0001_poisoned.json"
    path.write_text(json.dumps(raw))  # Python's json writes NaN and Infinity as they are
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    with pytest.raises(InputError) as caught:
        read_report(path)
    message = str(caught.value)
    assert str(path) in message and f"field '{field}'" in message and says in message
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest


@pytest.mark.parametrize("value", [NAN, -1.0, "0.9"], ids=["nan", "negative", "string"])
def test_compare_fail_does_not_pass_a_poisoned_reference(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], value: Any) -> None:
    """A NaN old score made every drop NaN, and NaN > allowed is False: the gate passed."""
    good, bad = tmp_path / "new.json", tmp_path / "old.json"
    good.write_text(json.dumps(_raw()))
    raw = _raw()
    for system in raw["systems"]:
        system["scores"]["exam-cover(tau=4)@20"]["mean"] = value
    bad.write_text(json.dumps(raw))
    code = main(["compare", str(bad), str(good), "--fail", "exam-cover:0.05"])
    err = capsys.readouterr().err
    assert code == 4 and "old.json" in err and "systems.0.scores.exam-cover(tau=4)@20.mean" in err


def test_the_golden_report_passes_the_checks(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(_raw()))
    assert isinstance(read_report(path), ExamReport)


def _with_kappa(low: float) -> dict[str, Any]:
    """The golden report with a calibration section whose judge's kappa interval starts at ``low``."""
    from exam_harness.features.calibration.model import Calibration, DesignInfo, Figures, Interval, JudgeCalibration

    figures = Figures(pairs=5, base_rate=Interval(), tpr=Interval(), tnr=Interval(), precision=Interval(),
                      kappa=Interval(value=-0.2, low=low, high=0.4))
    content = Calibration(labels="labels.jsonl", pairs=5, design=DesignInfo(sample=None, unit="pair", labelled=5,
                                                                            population=None),
                          judges=[JudgeCalibration(judge="marker", min_grade=4, figures=figures)])
    raw = _raw()
    raw["sections"] = {"calibration": content.model_dump(mode="json")}
    return raw


def test_a_negative_kappa_is_read_and_one_below_minus_one_refused(tmp_path: Path) -> None:
    """Cohen's kappa is signed: a calibration section's judge worse than chance (a kappa interval starting
    below 0) is a report every reader opens (the viewer, verdict, --exam-compare); below -1 it is refused."""
    path = tmp_path / "r.json"
    path.write_text(json.dumps(_with_kappa(-0.96)))
    assert isinstance(read_report(path), ExamReport)
    path.write_text(json.dumps(_with_kappa(-1.5)))
    with pytest.raises(InputError, match=r"kappa out of range .*sections\.calibration\.judges\.0\.figures\.kappa\.low"):
        read_report(path)


def _save(args: tuple[str, int]) -> str:
    folder, _i = args
    report = ExamReport.model_validate(_raw())
    return history.save(Path(folder), report, "main").name


def test_concurrent_saves_get_distinct_numbers(tmp_path: Path) -> None:
    """12 sessions keeping a report under one name at once: 12 files, numbers 1..12 (the numbers were
    chosen by listing the folder, so sessions took the same one and overwrote each other)."""
    folder = tmp_path / "history"
    with multiprocessing.get_context("fork").Pool(12) as pool:
        names = pool.map(_save, [(str(folder), i) for i in range(12)])
    assert sorted(names) == [f"{n:04d}_main.json" for n in range(1, 13)]
    assert sorted(p.name for p in folder.iterdir()) == sorted(names)  # no temp file left
    assert all(read_report(folder / name) for name in names)


@pytest.mark.parametrize(("name", "says"), [
    ("x" * 10_000, "at most 100 characters (10000 given)"),
    ("main\x07beep", "control or invisible"),
    ("main\u200bzero", "control or invisible"),
    ("a/b", "without spaces or slashes"),
    (".hidden", "no leading dot"),
], ids=["10000-chars", "bell", "zero-width", "slash", "dot"])
def test_a_bad_save_name_is_a_usage_error_before_grading(project: pytest.Pytester, name: str, says: str) -> None:
    result = project.runpytest("banks", f"--exam-save={name}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--exam-save*{says}*"])
    assert not (project.path / ".cache" / "grades.sqlite").exists() and not (project.path / "reports").exists()
    assert not (project.path / ".exam-history").exists()


def test_a_poisoned_kept_report_stops_the_session_before_grading(project: pytest.Pytester) -> None:
    raw = _raw()
    raw["systems"][0]["scores"]["exam-cover(tau=4)@20"]["mean"] = NAN
    kept = project.path / ".exam-history" / "0001_base.json"
    kept.parent.mkdir()
    kept.write_text(json.dumps(raw))
    result = project.runpytest("banks", "--exam-compare=latest", "--exam-compare-fail=exam-cover:0.05")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*0001_base.json*finite*systems.0.scores.exam-cover(tau=4)@20.mean*"])
    assert not (project.path / ".cache" / "grades.sqlite").exists()
