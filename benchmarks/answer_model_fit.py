"""The default grader's answer model (for test points with gold answers): fit on one half of the obvious
cases, measured on the other half, written into a support model file.

    python benchmarks/answer_model_fit.py [--write exam_harness/graders/support_model.json]

The obvious cases (tests/data/obvious_cases.jsonl: a question with a gold answer, a passage that answers
it in other words, a passage that shares its words or its gold string but does not answer it) are dealt
by their line: odd lines (1, 3, 5, ...) with the own-bank triples of tests/data/battery_bank.json are the
fitting half, even lines (0, 2, 4, ...) the held-out half. The grader's answer signals of each passage
(statement, answer, gain; :mod:`exam_harness.graders.support`) are read, a logistic regression of
"answering" on them is fit on the fitting half, the grade-4 cut point is the support of highest accuracy
there, and the accuracy of "grade >= 4" (the answer key applied as the grader applies it) is printed on
both halves. ``--write`` puts the fit into a support model file under ``with_answers``.
Last line: ``answer model: held-out obvious cases <a>% right (<n> passages), fitting half <b>%``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from exam_harness.analysis.support_fit import cut_points_around  # noqa: E402
from exam_harness.core.models import Grade, Passage, Query, TestPoint  # noqa: E402
from exam_harness.graders.base import GraderConfig, GradingRequest  # noqa: E402
from exam_harness.graders.embedding import EmbeddingGrader  # noqa: E402
from exam_harness.graders.support import (  # noqa: E402
    Signals,
    SupportModel,
    fit_logistic,
    read_support_model,
    shipped_model,
    signals_of_reason,
)

DATA = ROOT / "tests" / "data"
ANSWER_SIGNALS = ("statement", "answer", "gain")
L2 = 1e-4  # the signals span a few tenths: the default penalty would flatten their weights
GRID = tuple(round(0.02 + 0.01 * i, 2) for i in range(97))


def triples() -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    """(fitting half, held-out half)."""
    lines = [json.loads(line) for line in (DATA / "obvious_cases.jsonl").read_text(encoding="utf-8").splitlines()]
    battery = json.loads((DATA / "battery_bank.json").read_text(encoding="utf-8"))
    own = [{"question": q["text"], "answers": q["answers"], "answering": q["answering"],
            "distractor": q["distractor"]} for q in battery["questions"]]
    return [c for i, c in enumerate(lines) if i % 2 == 1] + own, [c for i, c in enumerate(lines) if i % 2 == 0]


def requests_of(cases: list[dict[str, object]], tag: str) -> list[GradingRequest]:
    """Each case's answering and distractor passage against its question; the query is the question."""
    out = []
    for i, case in enumerate(cases):
        question, answers = str(case["question"]), tuple(str(a) for a in case["answers"])  # type: ignore[attr-defined]
        tp = TestPoint(id=f"{tag}{i}/1", query_id=f"{tag}{i}", kind="question", text=question, gold_answers=answers)
        out.extend(GradingRequest(Query(id=f"{tag}{i}", text=question), tp,
                                  Passage(id=f"{kind}-{tag}{i}", text=str(case[kind])))
                   for kind in ("answering", "distractor"))
    return out


def graded(grader: EmbeddingGrader, requests: list[GradingRequest]) -> list[Grade]:
    grader.prepare(requests)
    out = [g for g in grader.grade_batch(requests) if isinstance(g, Grade)]
    assert len(out) == len(requests)
    return out


def accuracy(requests: list[GradingRequest], grades: list[Grade], min_grade: int = 4) -> float:
    right = [(g.grade >= min_grade) == r.passage.id.startswith("answering") for r, g in zip(requests, grades)]
    return sum(right) / len(right)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", type=Path, default=None, help="The support model file to put the fit into "
                        "(its other fields are kept).")
    args = parser.parse_args()
    fitting, held_out = triples()
    fit_requests, test_requests = requests_of(fitting, "f"), requests_of(held_out, "h")
    grader = EmbeddingGrader(GraderConfig())
    import numpy as np

    signals = [_signals(g) for g in graded(grader, fit_requests)]
    x = np.asarray([[s.value(n) for n in ANSWER_SIGNALS] for s in signals])
    y = np.asarray([r.passage.id.startswith("answering") for r in fit_requests])
    weights, intercept = fit_logistic(x.tolist(), y.tolist(), l2=L2)
    support = 1 / (1 + np.exp(-(x @ np.asarray(weights) + intercept)))
    scores = [float(np.mean((support >= t) == y)) for t in GRID]
    best = max(scores)
    plateau = [t for t, s in zip(GRID, scores) if s == best]
    threshold = plateau[len(plateau) // 2]
    base = read_support_model(args.write) if args.write else shipped_model()
    answer_model = SupportModel(
        signals=ANSWER_SIGNALS, weights=tuple(round(w, 6) for w in weights), intercept=round(intercept, 6),
        cut_points=tuple(cut_points_around(threshold, 4)),
        fitted_on="obvious cases of the test suite, fitting half: odd lines of tests/data/obvious_cases.jsonl and "
                  "the triples of tests/data/battery_bank.json (answering against distractor passages); "
                  "benchmarks/answer_model_fit.py",
        answer_key_floor=base.answer_key_floor, notes={"passages": len(fit_requests), "l2": L2})
    model = SupportModel(base.signals, base.weights, base.intercept, base.cut_points, base.fitted_on,
                         base.answer_key_floor, base.notes, answer_model)
    with tempfile.TemporaryDirectory() as folder:
        path = args.write or Path(folder) / "support_model.json"
        path.write_text(json.dumps(model.to_json(), indent=1) + "\n", encoding="utf-8")
        refit = EmbeddingGrader(GraderConfig(options={"support_model": str(path)}))
        fit_share = accuracy(fit_requests, graded(refit, fit_requests))
        test_share = accuracy(test_requests, graded(refit, test_requests))
    print(f"weights {' '.join(f'{n} {w:.3f}' for n, w in zip(ANSWER_SIGNALS, weights))}, intercept "
          f"{intercept:.3f}; grade-4 cut point {threshold:g}")
    print(f"answer model: held-out obvious cases {test_share:.1%} right ({len(test_requests)} passages), "
          f"fitting half {fit_share:.1%}")
    return 0


def _signals(grade: Grade) -> Signals:
    found = signals_of_reason(grade.raw_response or "")
    assert found is not None
    return found[1]


if __name__ == "__main__":
    sys.exit(main())
