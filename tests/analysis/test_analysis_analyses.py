"""Phase-3 analyses on the hand-made exam of tests/helpers.py (grades and judgments there)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from exam_harness.analysis.analyses import grade_grid, missing_in_bank, spurious_test_points, verify_grading
from exam_harness.cli import main
from exam_harness.core.errors import ConfigError, InputError
from exam_harness.exam.inputs import ExamView, view_from_banks
from exam_harness.grading.passes import GradingOutcome, replay
from exam_harness.io import load_bank, load_runs
from exam_harness.report.analysis_sections import baseline_section
from tests.helpers import write_bank, write_exam

QUESTIONS = {"q1": {"q1/a": "What is a1?", "q1/b": "What is b1?"},
             "q2": {"q2/a": "What is a2?", "q2/b": "What is b2?", "q2/c": "What is c2?"}}


@pytest.fixture
def exam(tmp_path: Path) -> Path:
    return write_exam(tmp_path / "data")[0]


@pytest.fixture
def graded(exam: Path) -> tuple[ExamView, GradingOutcome]:
    view, outcome, _ = replay(load_runs([exam]).data)
    return view, outcome


def test_verify_grading_lists_answers_highest_grade_first(graded: tuple[ExamView, GradingOutcome]) -> None:
    view, table = graded
    reports = verify_grading(view, table, query="q1")
    assert [r.test_point_id for r in reports] == ["q1/a", "q1/b"]
    first = reports[0]
    assert first.grade_counts == {0: 2, 3: 1, 5: 1} and first.graded == 4
    assert [(r.passage_id, r.grade, r.judgment) for r in first.rows] == [("p1", 5, 2), ("p3", 3, 0), ("p2", 0, 1), ("p4", 0, 0)]
    assert first.rows[0].answer == "answer p1 q1/a"
    only = verify_grading(view, table, test_point="q2/b", min_grade=4, limit=1)
    assert len(only) == 1 and [(r.passage_id, r.grade) for r in only[0].rows] == [("p7", 5)]
    with pytest.raises(InputError, match="Did you mean 'q1'"):
        verify_grading(view, table, query="q11")
    with pytest.raises(InputError, match="test point not in the exam"):
        verify_grading(view, table, test_point="q1/zz")


def test_grid_shows_every_test_point_of_every_passage(graded: tuple[ExamView, GradingOutcome]) -> None:
    view, table = graded
    grid = grade_grid(view, table, query="q2")
    assert [t["id"] for t in grid.test_points] == ["q2/a", "q2/b", "q2/c"]
    rows = {r.passage_id: r for r in grid.rows}
    assert rows["p7"].grades == {"q2/a": 2, "q2/b": 5, "q2/c": 0} and rows["p7"].max_grade == 5 and rows["p7"].judgment == 2
    assert rows["p8"].max_grade == 1 and rows["p8"].answers["q2/a"] == "answer p8 q2/a"
    assert [r.passage_id for r in grade_grid(view, table, query="q2", passages=["p6"]).rows] == ["p6"]
    with pytest.raises(InputError, match="passage not loaded"):
        grade_grid(view, table, query="q2", passages=["p99"])


def test_missing_in_bank(graded: tuple[ExamView, GradingOutcome]) -> None:
    view, table = graded
    assert missing_in_bank(view, table, min_grade=4, relevance_level=2).passages == []
    result = missing_in_bank(view, table, min_grade=5, relevance_level=2)
    assert [(m.query_id, m.passage_id, m.judgment, m.max_grade, m.best_test_point) for m in result.passages] == [
        ("q2", "p5", 3, 4, "q2/a")]
    assert [(q.query_id, q.relevant, q.missing) for q in result.queries] == [("q2", 2, 1), ("q1", 1, 0)]
    assert result.passages[0].text == "gamma and delta facts"
    lenient = missing_in_bank(view, table, min_grade=5, relevance_level=1)  # p2 (judged 1, best 4) joins
    assert {m.passage_id for m in lenient.passages} == {"p5", "p2"}


def test_spurious_test_points_ranked(graded: tuple[ExamView, GradingOutcome]) -> None:
    view, table = graded
    points = spurious_test_points(view, table, min_grade=4, relevance_level=2)
    top = points[0]
    assert (top.test_point_id, top.non_relevant_high, top.non_relevant_judged, top.relevant_high, top.relevant_judged) == (
        "q1/b", 1, 3, 0, 1)
    assert top.rate == pytest.approx(1 / 3) and top.precision == 0.0
    assert [p.test_point_id for p in points[1:]] == ["q1/a", "q2/a", "q2/b", "q2/c"]
    assert points[3].precision == 1.0 and points[4].precision is None
    assert spurious_test_points(view, table, min_grade=4, relevance_level=2, limit=2, query="q2")[0].query_id == "q2"
    assert json.loads(top.model_dump_json())["rate"] == pytest.approx(1 / 3)


def test_analysis_sections_for_the_plugin(exam: Path, tmp_path: Path) -> None:
    data = load_runs([exam]).data
    banks = load_bank(write_bank(tmp_path / "bank.jsonl", QUESTIONS))
    _, outcome, _ = replay(data)
    outcome.answers = {pair: f"ans {g}" for pair, g in outcome.grades.items()}
    view = view_from_banks(data, banks, outcome.grades)
    from exam_harness.features import default_manager
    from exam_harness.session.analyses import AnalysisExam, section_text
    from exam_harness.session.builtin_analyses import pytest_analyses

    graded = AnalysisExam(view, outcome, min_grade=5, relevance_level=2, limit=3)
    sections = [section_text(analysis, graded, 120) for analysis in
                pytest_analyses(default_manager().hook, ["missing", "spurious", "agreement", "verify"])]
    titles = [t for t, _ in sections]
    assert titles == ["exam: relevant passages missing in the bank", "exam: spurious test points",
                      "exam: agreement with human judgments", "exam: verify grading"]
    text = dict(sections)
    assert "p5" in text[titles[0]] and "Cohen's κ" in text[titles[2]]
    assert "What is a2?" in text[titles[3]] and "ans 5" in text[titles[3]]
    with pytest.raises(ConfigError, match="unknown analysis 'nope'"):
        pytest_analyses(default_manager().hook, ["nope"])
    with pytest.raises(ConfigError, match="unknown analysis 'grid'"):  # the command line's alone
        pytest_analyses(default_manager().hook, ["grid"])


def test_baseline_section() -> None:
    queries = [f"q{i}" for i in range(12)]
    scores = {"base": dict.fromkeys(queries, 0.9), "low": dict.fromkeys(queries, 0.2), "up": dict.fromkeys(queries, 0.95)}
    title, text = baseline_section(scores, "base", n_resamples=2000, measure="EXAM-Cover@20")
    assert title == "exam: EXAM-Cover@20 against baseline base"
    assert "▼ -0.7000" in text and "▲ +0.0500" in text and "12 queries" in text


@pytest.mark.parametrize(
    ("args", "expect"),
    [
        (["verify", "--query", "q1", "--limit", "2"], "q1/a"),
        (["grid", "--query", "q2", "--answers"], "Grade grid of query q2"),
        (["missing", "--min-grade", "5"], "p5"),
        (["spurious", "--min-grade", "4"], "q1/b"),
        (["agreement", "--min-grade", "3"], "Cohen's κ = 0.750"),
    ],
)
def test_analyze_cli(exam: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], expect: str) -> None:
    out = tmp_path / "a.json"
    code = main(["analyze", args[0], str(exam), *args[1:], "--json", str(out)])
    assert code == 0
    assert expect in capsys.readouterr().out
    assert json.loads(out.read_text())


def test_analyze_cli_errors(exam: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", "grid", str(exam)]) == 4
    assert "needs --query" in capsys.readouterr().err
    assert main(["analyze", "verify", str(exam), "--query", "nope"]) == 4
    assert "query not in the exam" in capsys.readouterr().err
    assert main(["analyze", "missing", str(exam), "--limit", "-1"]) == 4


def test_subcommand_arguments_meet_the_schema_s_bounds(exam: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A subcommand's own arguments convert with the option schema's converters: the bounds are checked before
    anything is read, with the schema's words (a negative --hide-below hid nothing and passed silently)."""
    assert main(["analyze", "verify", str(exam), "--hide-below", "-1"]) == 4
    assert "argument --hide-below: must be an integer >= 0" in capsys.readouterr().err
    assert main(["analyze", "missing", str(exam), "--limit", "-1"]) == 4
    assert "argument --limit: must be an integer >= 0" in capsys.readouterr().err
    assert main(["calibrate", str(exam), "--spacing", "1"]) == 4
    assert "argument --spacing: must be < 1" in capsys.readouterr().err


def test_no_subcommand_adds_an_argument_outside_the_schema() -> None:
    """Subcommands declare their arguments in exam_harness/config/options.py's terms (ExamOptions fields through
    add_cli_options, else an Argument): converters and bounds are written once."""
    import exam_harness.cli as cli

    folder = Path(cli.__file__).parent
    direct = {path.name: path.read_text().count(".add_argument(") for path in sorted(folder.glob("*.py"))}
    assert {name: count for name, count in direct.items() if count} == {"__init__.py": 1}  # --version
