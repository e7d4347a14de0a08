"""``exam-harness evaluate`` from the command line (exam_harness.cli.main) on the hand-made exam."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from exam_harness.cli import main
from exam_harness.io import load_runs
from tests.helpers import KEYWORD_BANK, KEYWORD_CONFTEST, evaluation_boards, write_bank, write_exam


@pytest.fixture
def exam(tmp_path: Path) -> tuple[Path, Path]:
    return write_exam(tmp_path / "data")


def test_evaluate_prints_and_writes_the_leaderboards(
    exam: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "lb.json"
    code = main(["evaluate", str(exam[0]), "--official", str(exam[1]), "--min-grade", "3", "4", "--k", "2",
                 "--measures", "P@2", "mrr", "--json", str(out), "--bootstrap", "100"])
    printed = capsys.readouterr().out
    assert code == 0
    assert "2 queries, 8 passages" in printed and "Correlation with the official leaderboard" in printed
    assert "0.500 / 0.333" in printed  # EXAM@2 at grade >= 4: rho 0.5, tau 1/3
    assert "Cohen's κ = 0.750" in printed
    doc = json.loads(out.read_text())
    cover = next(b for b in evaluation_boards(doc) if b["measure"] == "exam-cover@2" and b["min_grade"] == 4)
    assert cover["systems"] == pytest.approx({"A": 5 / 6, "B": 1 / 6, "C": 0.25})
    assert doc["settings"]["official"] == str(exam[1]) and doc["grading"]["source"] == "recorded"


def test_a_misspelt_official_run_is_shown_with_its_look_alike(
    exam: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    official = json.loads(exam[1].read_text())
    official["c"] = official.pop("C")  # the run is C: one leaderboard spells it otherwise
    misspelt = tmp_path / "official.json"
    misspelt.write_text(json.dumps(official))
    assert main(["evaluate", str(exam[0]), "--official", str(misspelt), "--k", "2", "--brief", "--bootstrap", "0"]) == 0
    printed = " ".join(capsys.readouterr().out.split())  # the caption wraps at the table's width
    assert "official runs not among the evaluated runs (left out): 'c' ~ 'C' (they differ only in case" in printed
    assert "evaluated runs the official leaderboard lacks (left out): 'C'" in printed


def test_evaluate_default_min_grade_and_brief(exam: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["evaluate", str(exam[0]), "--k", "2", "--brief", "--bootstrap", "0"]) == 0
    printed = capsys.readouterr().out
    assert "Leaderboards at grade" not in printed and "grade ≥ 4 vs judgment ≥ 2" in printed


def test_evaluate_baseline_qrels_plot_and_export(
    exam: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib")
    code = main([
        "evaluate", str(exam[0]), "--official", str(exam[1]), "--k", "2", "--min-grade", "4", "--measures", "P@2",
        "--baseline", "A", "--significance", "bootstrap", "--resamples", "500", "--qrels-dir", str(tmp_path / "q"),
        "--plot", str(tmp_path / "report"), "--export-workbench", str(tmp_path / "wb.jsonl.gz"),
        "--json", str(tmp_path / "lb.json"),
    ])
    printed = capsys.readouterr().out
    assert code == 0 and "Against baseline 'A'" in printed
    assert (tmp_path / "q" / "exam-max-grade.qrels").is_file()
    png = (tmp_path / "report" / "leaderboards.png").read_bytes()
    assert png.startswith(b"\x89PNG") and (tmp_path / "report" / "leaderboards.svg").read_text().lstrip().startswith("<?xml")
    assert load_runs([tmp_path / "wb.jsonl.gz"]).data.recorded == load_runs([exam[0]]).data.recorded
    doc = json.loads((tmp_path / "lb.json").read_text())
    sig = evaluation_boards(doc)[0]["significance"]
    assert sig["baseline"] == "A" and sig["method"] == "bootstrap" and set(sig["runs"]) == {"B", "C"}


def test_evaluate_regrades_with_a_grader_through_the_cache(
    exam: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "conftest.py").write_text(KEYWORD_CONFTEST)  # the CLI loads ./conftest.py, as pytest does
    monkeypatch.chdir(tmp_path)
    bank = write_bank(tmp_path / "kw.jsonl", KEYWORD_BANK)
    args = ["evaluate", str(exam[0]), "--bank", str(bank), "--grader", "keyword", "--cache", str(tmp_path / "c.sqlite"),
            "--k", "2", "--measures", "P@2", "--json", str(tmp_path / "lb.json"), "--bootstrap", "0", "--no-progress"]
    assert main(args) == 0
    assert "16 graded" in capsys.readouterr().out
    assert main(args) == 0
    assert "16 from cache, 0 graded" in capsys.readouterr().out
    doc = json.loads((tmp_path / "lb.json").read_text())
    assert doc["settings"]["grader"]["name"] == "keyword" and doc["settings"]["min_grades"] == [4]
    assert evaluation_boards(doc)[0]["systems"] == pytest.approx({"A": 1.0, "B": 0.75, "C": 0.25})


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--baseline", "Q"], "--baseline: no run named 'Q'. Runs: A, B, C"),
        (["--min-grade", "6"], "--min-grade must be an integer in 1..5, got '6'"),
        (["--min-grade", "0"], "--min-grade must be an integer in 1..5, got '0'"),
        (["--grader", "embedding"], "needs --bank"),
        (["--labels", "maxgrade"], "--labels must be one of max-grade, count, at-least-m (did you mean 'max-grade'?)"),
        (["--k", "0"], "--k must be an integer in 1..100000, got '0'"),
        (["--alpha", "nan"], "--alpha must be a finite number"),
        (["--measures", "ndgc@10"], "Did you mean 'ndcg@10'"),
        (["--llm", "nope"], "no recorded grading run matches"),
        (["--grader-option", "x=1"], "need --grader"),
    ],
)
def test_evaluate_reports_bad_options(
    exam: tuple[Path, Path], extra: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["evaluate", str(exam[0]), "--k", "2", "--bootstrap", "0", *extra]) == 4
    assert message in capsys.readouterr().err


def test_evaluate_exits_1_when_pairs_lack_grades(
    exam: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bank = write_bank(tmp_path / "b.jsonl", {"q1": {"q1/a": "a?", "q1/zz": "new?"}})
    assert main(["evaluate", str(exam[0]), "--bank", str(bank), "--k", "2", "--bootstrap", "0"]) == 1
    assert "4 pool pairs have no grade" in capsys.readouterr().err


def test_answers_without_recorded_grades_name_evaluates_grader_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """evaluate's default grader replays recorded grades; answers and a bank alone hold none, and the error
    names the flag evaluate takes (--grader), not only the pytest session's (--exam-grader)."""
    from tests.trec_rag_data import ANSWERS_2024, NUGGETS, write_lines

    answers = write_lines(tmp_path / "answers.jsonl", ANSWERS_2024)
    bank = write_lines(tmp_path / "nuggets.jsonl", NUGGETS)
    assert main(["evaluate", str(answers), "--bank", str(bank), "--report-dir", "none", "--no-progress"]) == 4
    error = capsys.readouterr().err
    assert "no loaded run file has any" in error and "--grader NAME" in error
