"""A team's own labels (issue 30): ``exam-harness label`` scripted through standard input, read back by
``analyze agreement --team-labels``; the key loop, the file, the agreement figures."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from exam_harness.analysis.labels import label_concordance, label_loop, order_pairs, read_labels
from exam_harness.cli import main
from exam_harness.core.errors import InputError
from tests.helpers import KEYWORD_BANK, KEYWORD_CONFTEST, write_bank, write_exam


def test_the_key_loop_records_skips_undoes_and_quits() -> None:
    pairs = [("p1", "q/a"), ("p2", "q/a"), ("p3", "q/a"), ("p4", "q/a")]
    keys = iter(["y", "x", "n", "u", "s", "y", "q"])
    said: list[str] = []
    labels = label_loop(pairs, {"q/a": "q"}, lambda *_: None, lambda: next(keys, None), said.append)
    # y p1; "x" is refused; n p2 then undone; p2 skipped; y p3; quit before p4
    assert [(lab.passage_id, lab.label) for lab in labels] == [("p1", True), ("p3", True)]
    assert said and "answer y" in said[0]


def test_the_least_sure_pairs_come_first() -> None:
    grades = {("p1", "t"): 5, ("p2", "t"): 4, ("p3", "t"): 0, ("p4", "t"): 3}
    answers = {("p1", "t"): "“x” support 0.9000 (span 0.5)", ("p2", "t"): "“x” support 0.3600 (span 0.5)",
               ("p3", "t"): "“x” support 0.0100 (span 0.5)", ("p4", "t"): "“x” support 0.3300 (span 0.5)"}
    assert order_pairs(grades, answers, 4, 0.35, unsure=2, confident=0) == [("p2", "t"), ("p4", "t")]
    assert len(order_pairs(grades, answers, 4, 0.35, unsure=2, confident=5)) == 4


def test_agreement_with_labels_counts_precision_recall_and_kappa() -> None:
    grades = {("a", "t"): 5, ("b", "t"): 5, ("c", "t"): 0, ("d", "t"): 0}
    labels = {("a", "t"): True, ("b", "t"): False, ("c", "t"): True, ("d", "t"): False, ("z", "t"): True}
    found = label_concordance(grades, labels, 4)
    assert found.pairs == 4 and found.precision == 0.5 and found.recall == 0.5 and found.kappa == 0.0
    assert found.precision_interval[0] < 0.5 < found.precision_interval[1]


def test_a_bad_labels_line_names_the_file_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    path.write_text('{"test_point_id": "t", "passage_id": "p", "label": true}\n{"test_point_id": "t", "label": 1}\n')
    with pytest.raises(InputError, match=r"labels.jsonl:2: field 'passage_id'"):
        read_labels(path)


HOSTILE_LABEL_LINES = {
    # before: RecursionError out of json.loads (both readers), UnicodeDecodeError (the team-label file's reader)
    "deep": (b"[" * 100_000 + b"]" * 100_000 + b"\n", r"labels\.jsonl:1: nesting deeper than"),
    "not UTF-8": (b'\xff{"test_point_id": "t"}\n', r"labels\.jsonl:1: not valid UTF-8"),
    "not JSON": (b'{"test_point_id": "t", "passage_id": "p", "label": true}\n{"x"\n',
                 r"labels\.jsonl:2: invalid JSON at column"),
}


@pytest.mark.parametrize("case", list(HOSTILE_LABEL_LINES))
def test_hostile_label_files_are_input_errors_naming_the_line(tmp_path: Path, case: str) -> None:
    from exam_harness.analysis.label_file import read_label_file

    data, message = HOSTILE_LABEL_LINES[case]
    path = tmp_path / "labels.jsonl"
    path.write_bytes(data)
    for read in (read_labels, read_label_file):
        with pytest.raises(InputError, match=message):
            read(path)


def test_a_hostile_team_label_file_stops_analyze_agreement_naming_it(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    exam, _ = write_exam(tmp_path / "data")
    labels = tmp_path / "labels.jsonl"
    labels.write_bytes(HOSTILE_LABEL_LINES["deep"][0])
    assert main(["analyze", "agreement", str(exam), "--team-labels", str(labels), "--no-progress"]) == 4
    err = capsys.readouterr().err
    assert "labels.jsonl:1: nesting deeper than" in err and "Traceback" not in err


def test_label_scripted_through_stdin_is_read_by_analyze_agreement(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    exam, _ = write_exam(tmp_path / "data")
    bank = write_bank(tmp_path / "bank.jsonl", KEYWORD_BANK)
    (tmp_path / "conftest.py").write_text(KEYWORD_CONFTEST)  # the CLI loads ./conftest.py, as pytest does
    monkeypatch.chdir(tmp_path)
    common = [str(exam), "--bank", str(bank), "--grader", "keyword", "--cache", str(tmp_path / "c.sqlite"),
              "--no-progress"]
    monkeypatch.setattr(sys, "stdin", io.StringIO("y\nn\ns\ny\nq\n"))
    assert main(["label", *common, "--out", "labels.jsonl", "--unsure", "5", "--confident", "0"]) == 0
    printed = capsys.readouterr().out
    assert "answers it? [y/n/m/s/u/q]" in printed and "wrote labels.jsonl: 3 new labels, 3 in all" in printed
    rows = [json.loads(line) for line in (tmp_path / "labels.jsonl").read_text().splitlines()]
    assert [r["label"] for r in rows] == [True, False, True]
    assert all(r["query_id"] and r["test_point_id"].startswith(r["query_id"]) for r in rows)
    # a second session shows only pairs not labelled yet, and keeps the first session's labels
    monkeypatch.setattr(sys, "stdin", io.StringIO("n\n"))
    assert main(["label", *common, "--out", "labels.jsonl", "--unsure", "1", "--confident", "0"]) == 0
    assert "1 new labels, 4 in all" in capsys.readouterr().out
    labels = read_labels(tmp_path / "labels.jsonl")
    assert len(labels) == 4

    out = tmp_path / "agreement.json"
    assert main(["analyze", "agreement", *common, "--team-labels", "labels.jsonl", "--json", str(out)]) == 0
    assert "keyword against labels.jsonl (4 labelled pairs graded, grade >= 4)" in capsys.readouterr().out
    doc = json.loads(out.read_text())
    assert doc["pairs"] == 4 and doc["grader"] == "keyword"


def test_calibrate_refits_the_support_model_on_labels_scripted_through_stdin(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from exam_harness.graders.support import read_support_model, shipped_model

    exam, _ = write_exam(tmp_path / "data")
    bank = write_bank(tmp_path / "bank.jsonl", KEYWORD_BANK)
    monkeypatch.chdir(tmp_path)
    common = [str(exam), "--bank", str(bank), "--grader", "embedding", "--cache", str(tmp_path / "c.sqlite"),
              "--no-progress"]
    monkeypatch.setattr(sys, "stdin", io.StringIO("y\nn\n" * 8))
    assert main(["label", *common, "--out", "labels.jsonl", "--unsure", "16", "--confident", "0"]) == 0
    assert "16 new labels" in capsys.readouterr().out
    assert main(["calibrate", *common, "--team-labels", "labels.jsonl", "--fit-support", "fit.json",
                 "--folds", "2"]) == 0
    printed = capsys.readouterr().out
    assert "before: the current support model's verdicts (grade >= 4) on 16 labelled pairs" in printed
    assert "after: questions without gold answers: refit on 16 labelled pairs of 4 test points" in printed
    assert "after: questions with gold answers: kept as it was" in printed
    assert "exam_grader_options = support_model=fit.json" in printed
    fitted = read_support_model(tmp_path / "fit.json")
    assert "team labels labels.jsonl" in fitted.fitted_on and fitted.weights != shipped_model().weights
    assert fitted.with_answers == shipped_model().with_answers
    # the fitted file grades: the agreement with the labels, through the ini's option
    assert main(["analyze", "agreement", *common, "--grader-option", "support_model=fit.json",
                 "--team-labels", "labels.jsonl"]) == 0
    assert "embedding against labels.jsonl (16 labelled pairs graded" in capsys.readouterr().out


def test_analyze_agreement_measures_every_grader_the_cache_holds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    exam, _ = write_exam(tmp_path / "data")
    bank = write_bank(tmp_path / "bank.jsonl", KEYWORD_BANK)
    (tmp_path / "conftest.py").write_text(KEYWORD_CONFTEST)
    monkeypatch.chdir(tmp_path)
    common = [str(exam), "--bank", str(bank), "--cache", str(tmp_path / "c.sqlite"), "--no-progress"]
    monkeypatch.setattr(sys, "stdin", io.StringIO("y\nn\n" * 4))
    assert main(["label", *common, "--grader", "keyword", "--out", "labels.jsonl", "--unsure", "8",
                 "--confident", "0"]) == 0  # fills the cache with the keyword grader's grades
    capsys.readouterr()
    out = tmp_path / "agreement.json"
    # the session grades with the embedding grader: the cache then holds both graders' grades
    assert main(["analyze", "agreement", *common, "--grader", "embedding", "--team-labels", "labels.jsonl",
                 "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "embedding against labels.jsonl (8 labelled pairs graded, grade >= 4)" in printed
    assert "  keyword (kw-model): 8 labelled pairs cached, grade >= 4: precision" in printed
    doc = json.loads(out.read_text())
    rows = {row["grader"]: row for row in doc["graders"]}
    assert set(rows) == {"embedding", "keyword"} and rows["embedding"]["session"] and not rows["keyword"]["session"]
    assert rows["keyword"]["pairs"] == 8 and len(rows["keyword"]["precision_interval"]) == 2
    # the keyword row is the keyword grader's own agreement: the same as when it is the session's grader
    assert main(["analyze", "agreement", *common, "--grader", "keyword", "--team-labels", "labels.jsonl",
                 "--json", str(out)]) == 0
    alone = json.loads(out.read_text())
    assert (alone["kappa"], alone["precision"], alone["recall"]) == (
        rows["keyword"]["kappa"], rows["keyword"]["precision"], rows["keyword"]["recall"])
    assert "  embedding" in capsys.readouterr().out  # and the embedding grader's grades are found from there


def test_the_cache_names_the_graders_models_and_prompts_its_grades_hold(tmp_path: Path) -> None:
    from exam_harness.core.models import Grade
    from exam_harness.grading.cache import GradeCache

    cache = GradeCache(tmp_path / "c.sqlite")
    try:
        cache.put_many({"a" * 64: Grade(grade=5, grader="openai", details={"model": "m1", "prompt": "self-rating"}),
                        "b" * 64: Grade(grade=1, grader="openai", details={"model": "m1", "prompt": "self-rating"}),
                        "c" * 64: Grade(grade=0, grader="embedding", details={"cosine": 0.1})})
        assert cache.identities() == [("embedding", None, None), ("openai", "m1", "self-rating")]
    finally:
        cache.close()
