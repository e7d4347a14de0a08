"""``exam-harness calibrate``: the minimum grade and the embedding cut points chosen by Cohen's kappa against
human judgments, cross-validated over folds of queries (exam_harness/analysis/calibration.py, cli/calibrate.py)."""

from __future__ import annotations

import configparser
import json
import math
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tomllib

from exam_harness.analysis.calibration import (
    CalibrationSettings,
    Sample,
    calibrate,
    choose_threshold,
    cut_points_around,
    embedding_cosines,
    kappa_at,
    query_folds,
)
from exam_harness.analysis.judged_labels import max_grade_labels
from exam_harness.cli import main
from exam_harness.cli.calibrate import ini_settings, ini_text, pyproject_text
from exam_harness.config.options import ExamOptions, specs
from exam_harness.core.errors import ConfigError, InputError
from exam_harness.graders.base import GraderConfig, read_grader_options
from exam_harness.graders.embedding import ANSWER_KEY_DECIDED, EmbeddingGrader
from exam_harness.graders.support import read_support_model, shipped_model
from tests.helpers import write_bank, write_exam

PLANTED_TAU = 3
PLANTED_COSINE = 0.55


Planted = tuple[dict[tuple[str, str], int], dict[tuple[str, str], float], dict[str, list[str]],
                dict[str, dict[str, int]]]


def planted(seed: int = 7, queries: int = 30, passages: int = 40, points: int = 4, noise: float = 0.05) -> Planted:
    """Synthetic grades with a planted threshold: each passage has a latent score u in [0, 1); it is judged
    relevant (2 or 3) iff u >= 0.5, and its best test point gets cosine u + 0.05 + noise (the others less),
    graded 0..5 by the shipped cut points' spacing around a grade-3 cut of 0.55; so the label rule
    'max grade >= 3' and the cut point 0.55 reproduce the judgments up to the noise."""
    rng = random.Random(seed)
    grades: dict[tuple[str, str], int] = {}
    cosines: dict[tuple[str, str], float] = {}
    test_points: dict[str, list[str]] = {}
    judgments: dict[str, dict[str, int]] = {}
    cuts = cut_points_around(PLANTED_COSINE, PLANTED_TAU, 0.1)
    for q in range(queries):
        qid = f"q{q}"
        test_points[qid] = [f"{qid}/t{t}" for t in range(points)]
        judgments[qid] = {}
        for p in range(passages):
            pid = f"{qid}-p{p}"
            u = rng.random()
            judgments[qid][pid] = (3 if u >= 0.8 else 2) if u >= 0.5 else rng.choice((0, 1))
            for t, tid in enumerate(test_points[qid]):
                cosine = u + 0.05 + rng.gauss(0, noise) - 0.15 * t
                cosines[(pid, tid)] = cosine
                grades[(pid, tid)] = sum(cosine >= c for c in cuts)
    return grades, cosines, test_points, judgments


def test_calibrate_recovers_a_planted_minimum_grade_and_cut_point() -> None:
    grades, cosines, tps, judgments = planted()
    report = calibrate(grades, tps, judgments, CalibrationSettings(cut_min_grade=PLANTED_TAU), cosines=cosines,
                       current_cut_points=[0.3, 0.4, 0.5, 0.6, 0.7])
    search = report.max_grade_rule.search
    assert search.chosen == PLANTED_TAU and {f.chosen for f in search.folds} == {PLANTED_TAU}
    assert search.in_sample_kappa is not None and search.in_sample_kappa > 0.8
    # the held-out kappa is reported, and below the in-sample one (it is not chosen on its own passages)
    assert search.held_out.mean is not None and 0.75 < search.held_out.mean <= search.in_sample_kappa + 0.02
    assert search.held_out.sd is not None and search.held_out.sd > 0 and len(search.folds) == 5
    cut = report.cut_points
    assert cut is not None and cut.min_grade == PLANTED_TAU
    assert abs(float(cut.search.chosen) - 0.55) <= 0.02
    assert all(abs(float(f.chosen) - 0.55) <= 0.03 for f in cut.search.folds)
    assert cut.chosen == cut_points_around(float(cut.search.chosen), PLANTED_TAU, 0.1)
    assert cut.chosen[PLANTED_TAU - 1] == cut.search.chosen and cut.chosen[0] < cut.chosen[-1]
    # the current cut points put grade 3 at 0.5: worse than the calibrated 0.55
    assert cut.current_view.kappa is not None and cut.search.in_sample_kappa is not None
    assert cut.current_view.kappa < cut.search.in_sample_kappa


def test_folds_are_by_query_and_each_choice_is_made_without_its_fold() -> None:
    grades, _, tps, judgments = planted(noise=0.3)  # noisy: each training set has its own kappa
    report = calibrate(grades, tps, judgments, CalibrationSettings(k_folds=4, seed=3))
    folds = [set(f) for f in report.folds]
    assert set().union(*folds) == set(judgments) and sum(map(len, folds)) == len(judgments)
    assert all(not (a & b) for i, a in enumerate(folds) for b in folds[i + 1:])  # no query in two folds
    labels = max_grade_labels(grades, tps, judgments)
    keys = list(labels)
    sample = Sample.of(keys, [labels[k] for k in keys], [judgments[q][p] >= 2 for q, p in keys])
    for result, fold in zip(report.max_grade_rule.search.folds, folds):
        assert set(result.queries) == fold
        train_queries = set(judgments) - fold
        assert not train_queries & fold  # no query in both train and test
        assert result.passages == sum(len(judgments[q]) for q in fold)
        # the fold's choice is what the training queries alone choose, and its kappa is the fold's own
        train = sample.where(np.isin(sample.queries, sorted(train_queries)))
        chosen, kappa = choose_threshold(train, [1, 2, 3, 4, 5])
        assert result.chosen == chosen and result.train_kappa == pytest.approx(kappa)
        held = sample.where(np.isin(sample.queries, sorted(fold)))
        assert result.held_out_kappa == pytest.approx(kappa_at(held, chosen))


def test_query_folds_are_seeded_and_checked() -> None:
    queries = [f"q{i}" for i in range(11)]
    folds = query_folds(reversed(queries), 3, seed=1)
    assert folds == query_folds(queries, 3, seed=1) and folds != query_folds(queries, 3, seed=2)
    assert sorted(len(f) for f in folds) == [3, 4, 4]
    with pytest.raises(ConfigError, match="at least 12 queries"):
        query_folds(queries, 12, seed=0)
    with pytest.raises(ConfigError, match="at least 2"):
        query_folds(queries, 1, seed=0)


def test_passages_without_grades_are_left_out() -> None:
    grades = {("a", "q/1"): 2, ("a", "q/2"): 4, ("c", "q/1"): 0, ("d", "r/1"): 5, ("e", "r/1"): 0}
    judgments = {"q": {"a": 2, "b": 3, "c": 0}, "r": {"d": 2, "e": 0}}
    report = calibrate(grades, {"q": ["q/1", "q/2"], "r": ["r/1"]}, judgments, CalibrationSettings(k_folds=2))
    # b has no grade: left out, never read as grade 0 (which would count it as a miss)
    assert report.passages == 4 and report.judged_without_grades == 1 and report.relevant == 2
    assert report.max_grade_rule.search.in_sample_kappa == 1.0


def test_kappa_by_hand_and_ties() -> None:
    # values 1..4, relevant for 3 and 4 and for 1: at threshold 3, tp=2, fp=0, fn=1, tn=1
    # p_o = 3/4, p_e = (2/4)(3/4) + (2/4)(1/4) = 1/2, kappa = (3/4 - 1/2) / (1/2) = 1/2
    sample = Sample.of([("q", "a"), ("q", "b"), ("q", "c"), ("q", "d")], [1, 2, 3, 4], [True, False, True, True])
    assert kappa_at(sample, 3) == pytest.approx(0.5)
    # a plateau of equal kappa (no value between 2.1 and 2.9) gives its middle candidate
    assert choose_threshold(sample, [2.1, 2.3, 2.5, 2.7, 2.9])[0] == 2.5
    with pytest.raises(ConfigError, match="all relevant or all not relevant"):
        choose_threshold(Sample.of([("q", "a"), ("q", "b")], [1, 2], [False, False]), [1, 2, 3])


def test_embedding_cosines_read_the_raw_responses() -> None:
    reason = "“a span” support 0.4804 (span 0.6100, passage 0.5200, words 0.5000)"
    cos = embedding_cosines({("p", "t1"): reason, ("p", "t2"): f"{ANSWER_KEY_DECIDED} in a window; support 0.1 "
                             "(span 0.1, passage 0.1, words 0.0)", ("p", "t3"): None})
    assert cos == {("p", "t1"): 0.4804, ("p", "t2"): math.inf}
    with pytest.raises(InputError, match=r"'p'.*'t4'.*raw_response"):
        embedding_cosines({("p", "t4"): "yes"})


def _check_ini_values(settings: dict[str, str | list[str]]) -> tuple[tuple[int, ...], dict[str, str]]:
    """Each ini value through the converter its option uses (config/options.py), as pytest would read it: the
    minimum grades and the grader options."""
    converters = {spec.ini_name: spec.convert for _, spec in specs(front="pytest")}
    values: dict[str, tuple[Any, ...]] = {}
    for key, value in settings.items():
        items = value if isinstance(value, list) else [value]
        values[key] = tuple(converters[key](item) for item in items)
    return values["exam_min_grade"], dict(values.get("exam_grader_options", ()))


def test_ini_snippet_parses_as_the_options_expect() -> None:
    grades, cosines, tps, judgments = planted()
    report = calibrate(grades, tps, judgments, CalibrationSettings(cut_min_grade=4), cosines=cosines,
                       current_cut_points=[0.3, 0.4, 0.5, 0.6, 0.7])
    options = ExamOptions(grader="embedding", grader_option=(("span", "sentence"),))
    settings = ini_settings(report, options, "grader")
    ini = configparser.ConfigParser()
    ini.read_string(ini_text(settings))
    from_ini = {k: v.strip().splitlines() if k == "exam_grader_options" else v for k, v in ini["pytest"].items()}
    from_toml = tomllib.loads(pyproject_text(settings))["tool"]["pytest"]["ini_options"]
    assert from_ini == from_toml == settings
    taus, grader_options = _check_ini_values(settings)
    assert taus == (4,) and settings["exam_grader"] == "embedding"
    read = read_grader_options("embedding", EmbeddingGrader.options, grader_options)
    assert list(read["cut_points"]) == report.cut_points.chosen and read["span"] == "sentence"  # type: ignore[union-attr]


@pytest.fixture
def exam(tmp_path: Path) -> Path:
    return write_exam(tmp_path / "data")[0]


def test_cli_calibrates_recorded_grades_end_to_end(
    exam: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "calibration.json"
    assert main(["calibrate", str(exam), "--k", "2", "--folds", "2", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "against 8 judged passages of 2 queries (3 judged ≥ 2)" in printed
    assert "held-out κ" in printed and "Merged 3-way table" in printed and "[pytest]" in printed
    doc = json.loads(out.read_text())
    # hand-made exam: max grades q1 5 4 3 0, q2 4 0 5 1 vs judged 2 1 0 0 / 3 0 2 0 -> tau 4 agrees best:
    # tp 3, fp 1 (p2), tn 4 -> kappa 0.75 (the figure evaluate prints for this exam); tau 5: 0.714
    max_grade = doc["rules"][0]
    assert max_grade["rule"] == "max-grade" and max_grade["search"]["in_sample_kappas"][3] == pytest.approx(0.75)
    assert [sorted(f) for f in doc["folds"]] in ([["q1"], ["q2"]], [["q2"], ["q1"]])
    assert doc["settings"] == {"exam_min_grade": str(max_grade["search"]["chosen"])}
    assert tomllib.loads(doc["pyproject"])["tool"]["pytest"]["ini_options"] == doc["settings"]
    assert doc["grader"]["source"] == "recorded" and doc["cut_points"] is None
    # merged: grades 4-5 hold p1 (judged 2), p2 (1), p5 (3), p7 (2); 1-3 hold p3, p8 (0); 0 holds p4, p6 (0):
    # p_o = 3/8, p_e = (4*1 + 2*2 + 2*5)/64, kappa = 6/46
    merged = doc["merged"]["table"]
    assert merged["counts"] == {"2": {"2": 1, "1": 2, "0": 1}, "1": {"2": 0, "1": 0, "0": 2},
                                "0": {"2": 0, "1": 0, "0": 2}}
    assert merged["kappa"] == pytest.approx(6 / 46) and len(doc["merged"]["folds"]) == 2


def test_cli_takes_judgments_from_a_qrels_file(exam: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    qrels = tmp_path / "judged.qrels"
    # judged apart from the file's own: p2 and p3 relevant now, q2's p7 and p8 not judged; 'gone' has no text
    qrels.write_text("q1 0 p1 2\nq1 0 p2 2\nq1 0 p3 3\nq1 0 p4 0\nq2 0 p5 2\nq2 0 p6 0\nq2 0 gone 2\n")
    out = tmp_path / "c.json"
    assert main(["calibrate", str(exam), "--judgments", str(qrels), "--folds", "2", "--json", str(out)]) == 0
    captured = capsys.readouterr()
    assert "1 passages judged in" in captured.err and "6 judged passages of 2 queries (4 judged ≥ 2)" in captured.out
    doc = json.loads(out.read_text())
    # max grades p1..p6: 5 4 3 0 4 0, relevant p1 p2 p3 p5: tau 1, 2 and 3 split perfectly (the middle of the
    # tie is chosen); tau 4 misses p3: p_o 5/6, p_e 1/2, kappa 2/3
    kappas = doc["rules"][0]["search"]["in_sample_kappas"]
    assert doc["passages"] == 6 and kappas[:3] == [1.0, 1.0, 1.0] and kappas[3] == pytest.approx(2 / 3)
    assert doc["rules"][0]["search"]["chosen"] == 2
    bad = tmp_path / "bad.qrels"
    bad.write_text("q1 0 p1 2\nq1 0 p2 high\n")
    assert main(["calibrate", str(exam), "--judgments", str(bad), "--folds", "2"]) == 4
    err = capsys.readouterr().err
    assert f"{bad}:2" in err and "'label'" in err and "'high'" in err
    other = tmp_path / "other.qrels"
    other.write_text("Q1 0 p1 2\n")
    assert main(["calibrate", str(exam), "--judgments", str(other), "--folds", "2"]) == 4
    assert "name no query of the exam" in capsys.readouterr().err


def test_cli_usage_errors(exam: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["calibrate", str(exam), "--folds", "3"]) == 4  # two queries only
    assert "--folds 3 needs at least 3 queries" in capsys.readouterr().err
    assert main(["calibrate", str(exam), "--folds", "1"]) == 4
    assert main(["calibrate", str(exam), "--grid", "0.8:0.3:0.01"]) == 4
    assert "LOW <= HIGH" in capsys.readouterr().err


@pytest.mark.slow  # loads the bundled MiniLM model
def test_cli_calibrates_the_embedding_grader_cut_points(
    exam: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bank = write_bank(tmp_path / "bank.jsonl", {"q1": {"q1/a": "What is the first letter?", "q1/b": "Which letter "
                      "comes second?"}, "q2": {"q2/a": "What are gamma and delta?"}})
    out = tmp_path / "c.json"
    code = main(["calibrate", str(exam), "--bank", str(bank), "--grader", "embedding", "--cache", "none",
                 "--folds", "2", "--grid", "0.0:0.9:0.05", "--json", str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "Embedding cut points" in printed and "exam_grader_options" in printed
    doc = json.loads(out.read_text())
    cut = doc["cut_points"]
    assert cut["current"] == list(shipped_model().cut_points) and cut["min_grade"] == 4
    assert len(cut["chosen"]) == 5 and cut["chosen"][3] == cut["search"]["chosen"]
    taus, grader_options = _check_ini_values(doc["settings"])
    assert taus == (4,) and read_grader_options("embedding", EmbeddingGrader.options, grader_options)[
        "cut_points"] == tuple(cut["chosen"])
    # The support model refit on these judgments: written, named in the settings, readable by the grader.
    model = tmp_path / "team-support.json"
    code = main(["calibrate", str(exam), "--bank", str(bank), "--grader", "embedding", "--cache", "none",
                 "--folds", "2", "--fit-support", str(model), "--json", str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    assert f"wrote {model}" in printed and "held-out κ" in printed
    fitted = read_support_model(model)
    assert "relevance >= 2" in fitted.fitted_on and fitted.notes["passages"] > 0
    _, grader_options = _check_ini_values(json.loads(out.read_text())["settings"])
    assert grader_options == {"support_model": str(model)}
    assert EmbeddingGrader(GraderConfig(options=grader_options)).support_model == fitted


@pytest.mark.realdata
@pytest.mark.slow  # reads the 2 MB DL19 file
def test_calibrate_recorded_dl19_grades(shared_data: Path, tmp_path: Path) -> None:
    out = tmp_path / "dl19.json"
    graded = shared_data / "dl19" / "dl19-graded-flan-t5-large-selfrating.jsonl.gz"
    assert main(["calibrate", str(graded), "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["queries"] == 43 and doc["passages"] == 9260 and doc["relevant"] == 2501
    for rule in doc["rules"]:
        search = rule["search"]
        held = search["held_out"]
        assert 1 <= search["chosen"] <= 5 and 0.0 < held["mean"] < 0.6 and held["sd"] > 0
        assert held["mean"] <= search["in_sample_kappa"] + 0.02  # held out does not beat in-sample on average
    max_grade, at_least_2 = doc["rules"][0]["search"], doc["rules"][1]["search"]
    # the published strict table's kappa (test_evaluation_realdata) and issue 11's min-answers figures
    assert max_grade["chosen"] == 4 and max_grade["in_sample_kappa"] == pytest.approx(0.2924, abs=1e-4)
    assert at_least_2["in_sample_kappas"][0] == pytest.approx(0.343, abs=1e-3)
    assert at_least_2["in_sample_kappas"][3] == pytest.approx(0.361, abs=1e-3)
    assert doc["settings"] == {"exam_min_grade": "4"}
