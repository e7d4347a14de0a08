"""The scoring library on the published DL19/DL20 data (skipped when ../shared/data is absent)."""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path

import pytest
import pytrec_eval

from exam_harness.io.qrels import read_qrels, write_qrels
from exam_harness.measures import ExamCover, NExam, ScoringContext, ScoringInput, score
from exam_harness.measures.correlation import leaderboard_correlation
from exam_harness.measures.kappa import binarised, cohen_kappa, grade_judgment_table
from exam_harness.measures.qrels import QrelsCut, relevance_level
from exam_harness.measures.trec import trec_eval
from tests.paths import SHARED_DATA

DATA = SHARED_DATA
DL19 = DATA / "dl19"
pytestmark = [
    pytest.mark.realdata,
    pytest.mark.skipif(not DATA.is_dir(), reason="published data folder ../shared/data is absent"),
]


class DL19Data:
    def __init__(self) -> None:
        self.grades: dict[tuple[str, str], int] = {}
        self.test_points: dict[str, list[str]] = defaultdict(list)
        self.judgments: dict[str, dict[str, int]] = defaultdict(dict)
        ranked: dict[str, dict[str, list[tuple[int, str]]]] = defaultdict(lambda: defaultdict(list))
        with gzip.open(DL19 / "dl19-graded-flan-t5-large-selfrating.jsonl.gz", "rt", encoding="utf-8") as src:
            for line in src:
                qid, paragraphs = json.loads(line)
                for para in paragraphs:
                    pid = para["paragraph_id"]
                    for judgment in para["paragraph_data"]["judgments"]:
                        self.judgments[qid][pid] = judgment["relevance"]
                    for rank in para["paragraph_data"]["rankings"]:
                        ranked[rank["method"]][qid].append((rank["rank"], pid))
                    for grading in para["exam_grades"]:
                        for rating in grading["self_ratings"]:
                            self.grades[(pid, rating["question_id"])] = rating["self_rating"]
                            if rating["question_id"] not in self.test_points[qid]:
                                self.test_points[qid].append(rating["question_id"])
        self.rankings = {run: {q: [p for _, p in sorted(v)] for q, v in qs.items()} for run, qs in ranked.items()}
        self.official = json.loads((DL19 / "official-leaderboard.json").read_text())


@pytest.fixture(scope="module")
def dl19() -> DL19Data:
    return DL19Data()


def test_exam_cover_tracks_the_official_leaderboard(dl19: DL19Data) -> None:
    exam_input = ScoringInput(queries=list(dl19.test_points), test_points=dl19.test_points, rankings=dl19.rankings,
                              grades=dl19.grades)
    cover, n_cover = ExamCover(k=20, min_grade=5), NExam(k=20, min_grade=5, pool="top-k", empty="skip")
    result = score(exam_input, [cover, n_cover])
    assert all(len(values) == 43 for values in result[cover].per_query.values())
    exams, n_exams = result[cover].means, result[n_cover].means
    exam = leaderboard_correlation(exams, dl19.official)
    n_exam = leaderboard_correlation(n_exams, dl19.official)
    assert exam.n == 36 and exam.extra == ["UNH_exDL_bm25"]
    assert exam.spearman is not None and exam.kendall is not None and n_exam.spearman is not None
    assert exam.spearman > 0.8 and exam.kendall > 0.6
    assert n_exam.spearman > 0.75
    assert all(0.0 <= exams[r] <= n_exams[r] <= 1.0 for r in exams)


def test_exam_qrels_track_the_official_leaderboard(dl19: DL19Data) -> None:
    exam_input = ScoringInput(queries=list(dl19.test_points), test_points=dl19.test_points, rankings=dl19.rankings,
                              grades=dl19.grades, judged={q: list(dl19.judgments[q]) for q in dl19.test_points})
    qrels = ScoringContext(exam_input).qrels(QrelsCut("max-grade", 4, 2, "judged", 20))
    per_query = trec_eval(qrels, dl19.rankings, ["ndcg@10", "P@20"], relevance_level=relevance_level("max-grade", 4))
    means = {run: {m: sum(pq.get(q, {}).get(m, 0.0) for q in dl19.test_points) / len(dl19.test_points)
                   for m in ("ndcg@10", "P@20")} for run, pq in per_query.items()}
    ndcg = leaderboard_correlation({r: m["ndcg@10"] for r, m in means.items()}, dl19.official)
    prec = leaderboard_correlation({r: m["P@20"] for r, m in means.items()}, dl19.official)
    assert ndcg.spearman is not None and prec.spearman is not None
    assert ndcg.spearman > 0.9
    assert prec.spearman > 0.85

    labels = {(q, p): label for q, ls in qrels.items() for p, label in ls.items()}
    table = grade_judgment_table(labels, dl19.judgments)
    assert sum(sum(row.values()) for row in table.values()) == sum(len(j) for j in dl19.judgments.values())
    lenient = cohen_kappa(binarised(table, 1, 2))
    strict = cohen_kappa(binarised(table, 4, 2))
    assert 0.1 < lenient < strict < 0.5  # fair agreement, better with the strict cut


def test_published_rubric_qrels_round_trip(tmp_path: Path) -> None:
    src = DATA / "dl20" / "rubric-qrels" / "QuestionSelfRatedUnanswerablePromptWithChoices.qrel"
    qrels = read_qrels(src)
    with src.open() as f:
        assert qrels == pytrec_eval.parse_qrel(f)
    copy = write_qrels(tmp_path / "copy.qrels", qrels)
    assert read_qrels(copy) == qrels
    def lines(path: Path) -> list[str]:
        return sorted(" ".join(line.split()) for line in path.read_text().splitlines() if line.strip())

    assert lines(copy) == lines(src)
