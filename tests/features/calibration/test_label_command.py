"""``exam-harness label`` draws a seeded, stratified sample (issue 35, item 1): the sample holds a judge's
confident errors in proportion where the old near-the-cut order shows none, it is blind by default, it resumes
where it stopped with the same sample, it labels generated answers too, and the label file stays readable."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from exam_harness.analysis.label_file import read_label_file, samples_of
from exam_harness.analysis.label_sample import JudgeGrades, draw, finish
from exam_harness.analysis.labels import order_pairs, read_labels
from exam_harness.cli import main
from exam_harness.core.errors import InputError

pytest_plugins = ["pytester"]

ANSWERS = "".join(json.dumps(row) + "\n" for row in (
    {"query_id": "q1", "run": "gen", "response": "It answers [a] and [b]."},
    {"query_id": "q2", "run": "gen", "response": "It answers nothing."}))


def _judge(seed: int = 0, pairs: int = 2000) -> tuple[JudgeGrades, dict[tuple[str, str], bool]]:
    """A judge whose grade-5 pairs are 10% wrong (confident false passes), and the truth."""
    rng = np.random.default_rng(seed)
    grades = rng.choice(6, pairs, p=[0.6, 0.1, 0.08, 0.07, 0.05, 0.1])
    grade_of = {(f"p{i}", f"q{i % 20}/t"): int(g) for i, g in enumerate(grades)}
    truth = {}
    for pair, grade in grade_of.items():
        wrong = rng.random() < (0.1 if grade == 5 else 0.05)
        truth[pair] = (grade >= 4) != wrong
    return JudgeGrades("judge", grade_of, 4), truth


def test_the_sample_holds_the_judges_confident_errors_in_proportion() -> None:
    judge, truth = _judge()
    population = [p for p, g in judge.grades.items() if g == 5]
    true_share = sum(not truth[p] for p in population) / len(population)
    shares = []
    for seed in range(20):
        found = draw(judge.grades, "pair", seed, judge, [], [], 200)
        lines = finish(found, [], {p: truth[p] for p in found.asked}, query_of=lambda t: t.split("/")[0],
                       source_of=lambda _p: "passage", shown=False)
        top = [line for line in lines if line.stratum == "grade 5"]
        assert len(top) >= 25  # a stratum of a tenth of the pairs holds about a seventh of the sample
        shares.append(sum(not line.label for line in top) / len(top))
    assert abs(float(np.mean(shares)) - true_share) < 0.025
    # the old order (least sure first) labels no grade-5 pair, so it shows none of those errors
    old = order_pairs(judge.grades, {}, 4, None, unsure=200, confident=0)
    assert not any(judge.grades[p] == 5 for p in old)


def test_the_judges_disagreement_is_a_stratum_of_its_own() -> None:
    first = JudgeGrades("a", {("p1", "t"): 5, ("p2", "t"): 5, ("p3", "t"): 0}, 4)
    other = JudgeGrades("b", {("p1", "t"): 0, ("p2", "t"): 5, ("p3", "t"): 0}, 4)
    found = draw(first.grades, "pair", 0, first, [other], [], 3)
    assert dict(found.strata) == {("p1", "t"): "grade 5, judges disagree", ("p2", "t"): "grade 5",
                                  ("p3", "t"): "grade 0"}


@pytest.fixture
def exam(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The marker project as the CLI reads it, with a run of generated answers beside the ranked runs."""
    (project.path / "runs" / "gen.responses.jsonl").write_text(ANSWERS)
    monkeypatch.chdir(project.path)
    return ["runs/collection.tsv", "runs/good.run", "runs/weak.run", "runs/gen.responses.jsonl", "--bank",
            "banks/exam.yaml", "--grader", "marker", "--cache", ".cache/grades.sqlite", "--no-progress"]


def _label(args: list[str], keys: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> str:
    monkeypatch.setattr(sys, "stdin", io.StringIO(keys))
    assert main(["label", *args]) == 0
    return capsys.readouterr().out


def test_label_is_blind_by_default_and_shows_the_judge_when_asked(exam: list[str], monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    printed = _label([*exam, "--size", "3"], "y\nn\ny\n", monkeypatch, capsys)
    assert "answers it? [y/n/m/s/u/q]" in printed and "grader:" not in printed and "blind" in printed
    lines = read_label_file(Path("labels.jsonl"))
    assert len(lines) == 3 and all(line.shown is False for line in lines)
    printed = _label([*exam, "--size", "1", "--seed", "1", "--show-judge", "--out", "shown.jsonl"], "y\n",
                     monkeypatch, capsys)
    assert "grader: " in printed
    assert read_label_file(Path("shown.jsonl"))[0].shown is True


def test_a_bank_folder_is_read_as_pytest_reads_it(exam: list[str], monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """``--bank banks`` (the folder pytest collects) asks the pairs ``--bank banks/exam.yaml`` asks."""
    folder = [*exam[:exam.index("--bank")], "--bank", "banks", *exam[exam.index("--bank") + 2:]]
    _label([*folder, "--size", "4", "--out", "folder.jsonl"], "y\nn\ny\nn\n", monkeypatch, capsys)
    _label([*exam, "--size", "4", "--out", "file.jsonl"], "y\nn\ny\nn\n", monkeypatch, capsys)
    assert Path("folder.jsonl").read_bytes() == Path("file.jsonl").read_bytes()
    assert len(read_label_file(Path("folder.jsonl"))) == 4


def test_unsure_on_the_line_prompt_is_m_as_on_the_screen(exam: list[str], monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """One key map for the line prompt and the labelling screen: m (unsure) leaves the pair unlabelled and moves
    on, u undoes the last answer."""
    printed = _label([*exam, "--size", "3"], "m\ny\nu\nn\ny\n", monkeypatch, capsys)
    assert "answer y (answers)" not in printed  # m is a key of the prompt, not a wrong one
    _label([*exam, "--size", "3", "--out", "skipped.jsonl"], "s\nn\ny\n", monkeypatch, capsys)
    labels = read_label_file(Path("labels.jsonl"))
    assert [label.label for label in labels] == [False, True]  # the y undone, answered n; the first pair unsure
    assert Path("labels.jsonl").read_bytes() == Path("skipped.jsonl").read_bytes()  # unsure leaves it as a skip


def test_screen_on_without_a_terminal_is_refused(project: pytest.Pytester) -> None:
    """``--screen on`` with standard input and output a pipe: refused before grading, not a screen drawn into it."""
    exe = Path(sys.executable).with_name("exam-harness")
    done = subprocess.run([str(exe), "label", "runs/collection.tsv", "runs/good.run", "--bank", "banks/exam.yaml",
                           "--grader", "marker", "--cache", ".cache/grades.sqlite", "--screen", "on"],
                          cwd=project.path, input="y\n", capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 4, done.stderr
    assert "the labelling screen needs a terminal" in done.stderr and "(or --screen off)" in done.stderr
    assert "\x1b[" not in done.stdout
    assert not (project.path / ".cache" / "grades.sqlite").exists()  # nothing was graded


def test_label_resumes_with_the_same_sample(exam: list[str], monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    _label([*exam, "--size", "3"], "y\nn\nq\n", monkeypatch, capsys)  # quits after two
    first = read_label_file(Path("labels.jsonl"))
    assert len(first) == 2
    printed = _label([*exam, "--size", "6"], "n\n" * 6, monkeypatch, capsys)
    assert "4 new labels" in printed  # the two labelled pairs are not asked again
    resumed = read_label_file(Path("labels.jsonl"))
    assert [line.pair for line in resumed[:2]] == [line.pair for line in first]
    # one session of six draws the same sample
    _label([*exam, "--size", "6", "--out", "once.jsonl"], "y\nn\n" + "n\n" * 4, monkeypatch, capsys)
    once = read_label_file(Path("once.jsonl"))
    assert [line.pair for line in once] == [line.pair for line in resumed]
    assert [line.inclusion for line in once] == [line.inclusion for line in resumed]
    (sample,) = samples_of(resumed).values()
    assert sample.labelled == 6 and sample.population > 6
    for line in resumed:  # each line's inclusion is its stratum's labelled share
        assert line.stratum_size is not None and line.inclusion == pytest.approx(
            sum(1 for x in resumed if x.stratum == line.stratum) / line.stratum_size)


def test_label_asks_generated_answers_as_answers(exam: list[str], monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    printed = _label([*exam, "--size", "60"], "n\n" * 60, monkeypatch, capsys)
    assert "answer of run gen: It answers [a] and [b]." in printed
    sources = {line.source for line in read_label_file(Path("labels.jsonl"))}
    assert sources == {"answer", "passage"}


def test_a_test_point_unit_asks_every_pair_of_its_pool(exam: list[str], monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    _label([*exam, "--unit", "test-point", "--size", "1"], "y\nq\n", monkeypatch, capsys)  # quits inside the unit
    lines = read_label_file(Path("labels.jsonl"))
    assert len(lines) == 1 and lines[0].inclusion is None  # not in the sample until its pairs are all labelled
    assert samples_of(lines)[lines[0].sample or ""].labelled == 0
    _label([*exam, "--unit", "test-point", "--size", "1"], "n\n" * 20, monkeypatch, capsys)
    lines = read_label_file(Path("labels.jsonl"))
    (_point,) = {line.test_point_id for line in lines}
    assert len(lines) > 1 and all(line.inclusion is not None for line in lines)
    assert samples_of(lines)[lines[0].sample or ""].labelled == 1


def test_old_label_files_read_as_labels_of_no_sample_and_new_ones_by_the_old_reader(tmp_path: Path) -> None:
    old = tmp_path / "old.jsonl"
    old.write_text('{"query_id": "q", "test_point_id": "q/a", "passage_id": "p1", "label": true}\n')
    (label,) = read_label_file(old)
    assert label.sample is None and label.inclusion is None and label.label is True
    new = tmp_path / "new.jsonl"
    new.write_text(json.dumps({"query_id": "q", "test_point_id": "q/a", "passage_id": "p1", "label": False,
                               "sample": "pairs/seed=0/x", "unit": "pair", "population": 9, "stratum": "grade 0",
                               "stratum_size": 4, "stratum_labelled": 1, "inclusion": 0.25, "note": "kept"}) + "\n")
    assert read_labels(new) == {("p1", "q/a"): False}
    assert read_label_file(new)[0].to_json()["note"] == "kept"


def test_an_edited_inclusion_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    row = {"query_id": "q", "test_point_id": "q/a", "label": True, "sample": "pairs/seed=0/x", "unit": "pair",
           "population": 9, "stratum": "grade 0", "stratum_size": 4, "stratum_labelled": 2, "inclusion": 0.5}
    path.write_text(json.dumps({**row, "passage_id": "p1"}) + "\n")
    with pytest.raises(InputError, match=r"labels.jsonl:1: stratum 'grade 0' .* holds 1 labelled pairs of 4"):
        samples_of(read_label_file(path))
    path.write_text(json.dumps({**row, "passage_id": "p1"}) + "\n" + json.dumps({**row, "passage_id": "p1",
                                                                                 "label": False}) + "\n")
    with pytest.raises(InputError, match=r"labels.jsonl:2: passage 'p1' .* labelled False here and True"):
        read_label_file(path)
