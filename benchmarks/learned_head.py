"""A learned answerability head on the bundled MiniLM's frozen vectors, against today's support model, held out
(issue 35, item 7).

    python benchmarks/learned_head.py [--data ../shared/data] [--vectors DIR] [--folds 5] [--seed 0]
                                      [--rank 16] [--l2 0.001] [--steps 300] [--lr 0.05]

The head scores a (test point, passage) pair with a bilinear form of their vectors, ``q · (diag(d) + U Vᵀ) · s``
(``U``, ``V``: 384 x ``rank``; about 50 KB at rank 16): its best value over the passage's spans, its value on the
whole passage, today's support logit and the word overlap, combined linearly. It starts as today's model (weight 1
on today's logit, 0 elsewhere) and is fit by full-batch Adam (seeded) to the published LLM grades (FLAN-T5-large
self-ratings, a pair counts when rated >= 4) of the training queries; its pass cut is the logit of best Cohen's kappa
against those grades on the training pairs. Today's model is the shipped support model
(exam_harness/graders/support_model.json) with its shipped grade-4 cut, as a user gets it.

Held-out settings: train on DL19 (43 queries, generated questions), measure on LLMJudge dev (25 queries, the query as
the test point), and the reverse; ``--folds`` query folds within each collection. Per setting: kappa against the
held-out LLM grades (pair level) and against NIST (passage level: a passage passes when one of its query's test points
passes; relevance >= 2), and the LLM grades' own kappa against NIST beside them. Today's model was fit on DL19's NIST judgments, so its DL19 NIST figures are in sample.

Then the head fit on all of DL19 grades the user-style banks (tests/data/heat_pump_bank.json, tests/data/
sourdough_bank.json) as the grader would use it: a pair the answer key decides stays grade 5, a passage stating only
another number than the gold answer's stays capped (NUMBER_CAP), and otherwise the pair passes when (``head:
questions``) the head passes it for a test point without gold answers, today's answer model deciding the others, or
(``head: all``) also when the head passes a test point with gold answers that today's answer model fails. Per bank:
precision, recall of the answers word for word and in other words, kappa against the labels, false passes (wrong-number
distractors among them).

Vectors: each collection's texts are encoded with the embedding grader's own spans (``EmbeddingGrader.spans_of``) on
first use, which takes the better part of an hour on two cores; ``--vectors DIR`` reads them from (or writes them to)
``DIR/<collection>-vectors.npz`` and ``DIR/<collection>-spans.json``. Without ``--data`` (or when it is absent) the
script says so and exits 0. Last line: ``decision: ...`` (the head is kept only if it beats today's model on NIST
kappa held out and on the banks' other-words recall without losing precision or kappa).
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from exam_harness.analysis.calibration import query_folds  # noqa: E402
from exam_harness.core.models import Grade  # noqa: E402
from exam_harness.graders.base import GraderConfig, GradingRequest  # noqa: E402
from exam_harness.graders.embedding import MAX_WINDOW_SCAN_CHARS, NUMBER_CAP, EmbeddingGrader  # noqa: E402
from exam_harness.graders.matching import other_number  # noqa: E402
from exam_harness.graders.support import content_words, shipped_model, word_overlap  # noqa: E402

Array = Any  # numpy arrays and torch tensors (torch has no type stubs here)
PASS_RATING = 4  # an LLM self-rating counted as "answers"
RELEVANT = 2  # NIST relevance counted as relevant
CUT_GRID = [-8.0 + 0.05 * i for i in range(281)]  # head logits searched for the pass cut


# --- collections -----------------------------------------------------------------------------------------------


@dataclass
class QueryPairs:
    """One query's pairs: every test point against every judged passage of the query."""

    qid: str
    points: Array  # test points x dim: the test points' vectors
    spans: Array  # spans x dim: every passage's spans, the whole passage first
    segment: Array  # spans: the passage (column) of each span
    first: Array  # passages: the row of each passage's whole text in ``spans``
    today: Array  # test points x passages: today's support logit
    words: Array  # test points x passages: the share of the test point's content words in the passage
    llm: Array  # test points x passages: the LLM self-rating, -1 where none
    relevant: Array  # passages: NIST relevance >= RELEVANT


def rows(path: Path) -> Iterator[Any]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            yield json.loads(line)


def graded_path(data: Path, name: str) -> Path:
    return data / ("dl19/dl19-graded-flan-t5-large-selfrating.jsonl.gz" if name == "dl19"
                   else "llmjudge/llmjudge-dev-graded.jsonl.gz")


def test_points(data: Path, name: str) -> tuple[dict[str, str], dict[str, list[tuple[str, str]]]]:
    """(query id -> query text, query id -> its test points (id, text)): DL19's generated questions; LLMJudge's
    query itself (its questions' texts are not published)."""
    queries: dict[str, str] = {}
    points: dict[str, list[tuple[str, str]]] = {}
    if name == "dl19":
        queries = json.loads((data / "dl19/dl19-queries.json").read_text(encoding="utf-8"))
        for r in rows(data / "dl19/dl19-genq-questions-v1.jsonl.gz"):
            points[r["query_id"]] = [(q["question_id"], q["question_text"]) for q in r["questions"]]
        return queries, points
    for qid, passages in rows(graded_path(data, name)):
        for p in passages:
            for j in p["paragraph_data"]["judgments"]:
                if j["query"] == qid:
                    queries.setdefault(qid, j["titleQuery"])
        points[qid] = [(f"{qid}/query", queries[qid])]
    return queries, points


def vectors(grader: EmbeddingGrader, data: Path, name: str, cache: Path | None) -> tuple[Array, dict[str, int],
                                                                                           dict[str, list[str]]]:
    """(matrix, readable text -> row, passage id -> its spans) of a collection, from ``cache`` when it holds them."""
    import numpy as np

    if cache is not None and (cache / f"{name}-vectors.npz").exists():
        stored = np.load(cache / f"{name}-vectors.npz", allow_pickle=True)
        spans = json.loads((cache / f"{name}-spans.json").read_text(encoding="utf-8"))["spans"]
        return stored["matrix"], {t: i for i, t in enumerate(stored["texts"].tolist())}, spans
    queries, points = test_points(data, name)
    texts = {grader.readable(t): None for t in [*queries.values(), *(t for ps in points.values() for _, t in ps)]}
    spans = {}
    for _, passages in rows(graded_path(data, name)):
        for p in passages:
            if p["paragraph_id"] not in spans:
                spans[p["paragraph_id"]] = grader.spans_of(p["text"])
                texts.update(dict.fromkeys(spans[p["paragraph_id"]]))
    order = sorted(texts, key=len, reverse=True)
    print(f"{name}: encoding {len(order)} texts (pass --vectors DIR to keep them)", file=sys.stderr, flush=True)
    matrix = np.asarray(grader.encode(order), dtype=np.float32)
    if cache is not None:
        cache.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(cache / f"{name}-vectors.npz", matrix=matrix, texts=np.array(order, dtype=object))
        (cache / f"{name}-spans.json").write_text(json.dumps({"queries": queries, "spans": spans}), encoding="utf-8")
    return matrix, {t: i for i, t in enumerate(order)}, spans


def today_logit(span: Array, passage: Array, words: Array, query: Array) -> Array:
    """Today's support logit for test points without gold answers (the shipped question model)."""
    model = shipped_model()
    weights = dict(zip(model.signals, model.weights))
    signals = {"span": span, "passage": passage, "words": words, "query": query}
    return model.intercept + sum(weights[n] * signals[n] for n in model.signals)


def load_collection(grader: EmbeddingGrader, data: Path, name: str, cache: Path | None) -> list[QueryPairs]:
    import numpy as np

    matrix, row, spans_of = vectors(grader, data, name, cache)
    queries, points = test_points(data, name)
    out: list[QueryPairs] = []
    for qid, passages in rows(graded_path(data, name)):
        ids = [t for t, _ in points[qid]]
        point_words = [content_words(t[:MAX_WINDOW_SCAN_CHARS]) for _, t in points[qid]]
        q = np.stack([matrix[row[grader.readable(t)]] for _, t in points[qid]])
        u = matrix[row[grader.readable(queries[qid])]]
        blocks, words, llm, relevant = [], [], [], []
        for p in passages:
            blocks.append(np.stack([matrix[row[s]] for s in spans_of[p["paragraph_id"]]]))
            passage_words = content_words(p["text"][:MAX_WINDOW_SCAN_CHARS])
            words.append([word_overlap(w, passage_words) for w in point_words])
            relevant.append(max(j["relevance"] for j in p["paragraph_data"]["judgments"] if j["query"] == qid)
                            >= RELEVANT)
            ratings: dict[str, int] = {}
            for g in p["exam_grades"]:
                info = g["prompt_info"]
                if info.get("is_self_rated") and g.get("prompt_type", "question") == "question":
                    ratings = {s["question_id"]: int(s["self_rating"]) for s in g["self_ratings"]}
            # LLMJudge's one test point (the query) answers when one of its questions is answered
            llm.append([ratings.get(t, -1) for t in ids] if name == "dl19" else [max(ratings.values(), default=-1)])
        spans = np.concatenate(blocks)
        segment = np.concatenate([[i] * len(b) for i, b in enumerate(blocks)])
        first = np.cumsum([0] + [len(b) for b in blocks])[:-1]
        cosines = q @ spans.T
        best = np.stack([cosines[:, segment == i].max(axis=1) for i in range(len(blocks))], axis=1)
        word_share = np.array(words).T
        query_cos = np.broadcast_to(spans[first] @ u, best.shape)
        out.append(QueryPairs(qid, q, spans, segment, first, today_logit(best, cosines[:, first], word_share, query_cos),
                              word_share, np.array(llm).T, np.array(relevant)))
    return out


# --- the head --------------------------------------------------------------------------------------------------


@dataclass
class Head:
    diagonal: Array  # dim
    left: Array  # dim x rank
    right: Array  # dim x rank
    weights: Array  # best span, whole passage, today's logit, words
    bias: Array

    def parameters(self) -> list[Array]:
        return [self.diagonal, self.left, self.right, self.weights, self.bias]

    def bilinear(self, points: Array, spans: Array) -> Array:
        return (points * self.diagonal + (points @ self.left) @ self.right.T) @ spans.T

    def logits(self, pairs: QueryPairs) -> Array:
        import torch

        form = self.bilinear(torch.as_tensor(pairs.points), torch.as_tensor(pairs.spans))
        n_points, n_passages = form.shape[0], len(pairs.first)
        segment = torch.as_tensor(pairs.segment).expand(n_points, -1)
        best = torch.full((n_points, n_passages), -1e9).scatter_reduce(1, segment, form, reduce="amax")
        whole = form[:, torch.as_tensor(pairs.first)]
        features = [best, whole, torch.as_tensor(pairs.today, dtype=torch.float32),
                    torch.as_tensor(pairs.words, dtype=torch.float32)]
        return sum(w * f for w, f in zip(self.weights, features)) + self.bias

    def penalty(self) -> Array:
        return ((self.diagonal - 1) ** 2).sum() + (self.left ** 2).sum() + (self.right ** 2).sum()

    def scores(self, pairs: QueryPairs) -> Array:
        import torch

        with torch.no_grad():
            return self.logits(pairs).numpy()

    def size_bytes(self) -> int:
        return sum(4 * int(p.numel()) for p in self.parameters())


def fit_head(train: Sequence[QueryPairs], rank: int, l2: float, steps: int, lr: float, seed: int) -> Head:
    """A head fit to the LLM grades of ``train`` (binary cross-entropy of rated >= PASS_RATING, full batch)."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    dim = train[0].points.shape[1]
    head = Head(torch.ones(dim), 0.01 * torch.randn(dim, rank, generator=generator),
                0.01 * torch.randn(dim, rank, generator=generator), torch.tensor([0.0, 0.0, 1.0, 0.0]),
                torch.tensor(0.0))
    for p in head.parameters():
        p.requires_grad_(True)
    optimiser = torch.optim.Adam(head.parameters(), lr=lr)
    targets = [(torch.as_tensor(t.llm >= PASS_RATING, dtype=torch.float32), torch.as_tensor(t.llm >= 0))
               for t in train]
    total = sum(int(mask.sum()) for _, mask in targets)
    for _ in range(steps):
        optimiser.zero_grad()
        loss = l2 * head.penalty()
        for pairs, (target, mask) in zip(train, targets):
            z = head.logits(pairs)
            loss = loss + torch.nn.functional.binary_cross_entropy_with_logits(z[mask], target[mask],
                                                                               reduction="sum") / total
        loss.backward()
        optimiser.step()
    for p in head.parameters():
        p.requires_grad_(False)
    return head


# --- figures ---------------------------------------------------------------------------------------------------


def kappa(predicted: Array, truth: Array) -> float:
    """Cohen's kappa of two yes/no raters."""
    import numpy as np

    p, t = np.asarray(predicted, bool), np.asarray(truth, bool)
    agree = float((p == t).mean())
    chance = float(p.mean() * t.mean() + (1 - p.mean()) * (1 - t.mean()))
    return (agree - chance) / (1 - chance) if chance < 1 else float("nan")


def best_cut(scores: Array, truth: Array) -> float:
    ks = [kappa(scores >= c, truth) for c in CUT_GRID]
    return CUT_GRID[max(range(len(ks)), key=lambda i: -1.0 if math.isnan(ks[i]) else ks[i])]


Scorer = Callable[[QueryPairs], Array]


def pair_figures(test: Sequence[QueryPairs], score: Scorer, cut: float) -> tuple[float, float]:
    """(kappa against the LLM grades over the rated pairs, kappa against NIST over the passages)."""
    import numpy as np

    rated = [(score(t)[t.llm >= 0], t.llm[t.llm >= 0] >= PASS_RATING) for t in test]
    llm = kappa(np.concatenate([s for s, _ in rated]) >= cut, np.concatenate([y for _, y in rated]))
    passages = np.concatenate([score(t).max(axis=0) for t in test])
    nist = kappa(passages >= cut, np.concatenate([t.relevant for t in test]))
    return llm, nist


@dataclass
class Setting:
    name: str
    today: list[tuple[float, float]]  # per fold (llm kappa, nist kappa)
    head: list[tuple[float, float]]
    llm: list[float]  # per fold: the LLM grades' own kappa against NIST


def held_out(name: str, splits: Sequence[tuple[Sequence[QueryPairs], Sequence[QueryPairs]]],
             args: argparse.Namespace) -> Setting:
    import numpy as np

    today_cut = math.log(shipped_model().cut_points[3] / (1 - shipped_model().cut_points[3]))
    setting = Setting(name, [], [], [])
    for train, test in splits:
        head = fit_head(train, args.rank, args.l2, args.steps, args.lr, args.seed)
        cut = best_cut(np.concatenate([head.scores(t)[t.llm >= 0] for t in train]),
                       np.concatenate([t.llm[t.llm >= 0] >= PASS_RATING for t in train]))
        setting.today.append(pair_figures(test, lambda t: t.today, today_cut))
        setting.head.append(pair_figures(test, head.scores, cut))
        setting.llm.append(pair_figures(test, lambda t: t.llm, PASS_RATING)[1])
    return setting


def mean_sd(values: Sequence[float]) -> str:
    mean = sum(values) / len(values)
    if len(values) < 2:
        return f"{mean:.3f}"
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))
    return f"{mean:.3f}±{sd:.3f}"


# --- the user banks --------------------------------------------------------------------------------------------


@dataclass
class BankPairs:
    name: str
    requests: list[GradingRequest]
    labels: list[bool]
    kinds: list[str]  # word-for-word / other-words for answering pairs, else the pair's (or passage's) kind
    pairs: list[QueryPairs]  # one per request (a 1 x 1 query), for the head
    today: list[bool]  # today's grade >= 4
    keyed: list[bool]  # the answer key decided (grade 5)
    capped: list[bool]  # another number than the gold answer's: at most NUMBER_CAP
    gold: list[bool]


def load_bank(grader: EmbeddingGrader, name: str) -> BankPairs:
    import numpy as np

    from tests import heat_pump_bank, sourdough_bank

    if name == "heat_pump":
        heat = heat_pump_bank.load()
        requests, labels = heat.requests, heat.labels
        kinds = [heat.pair_kinds[(r.passage.id, r.test_point.id)] for r in requests]
    else:
        dough = sourdough_bank.load()
        requests, labels = dough.requests, dough.labels
        kinds = [dough.kinds[r.passage.id] if labels[(r.passage.id, r.test_point.id)] else
                 "distractor" if dough.kinds[r.passage.id] == "distractor" else "other"
                 for r in requests]
    grader.prepare(requests)
    grades = []
    for result in grader.grade_batch(requests):
        if not isinstance(result, Grade):  # a failed grade is no verdict: stop rather than count it
            raise SystemExit(f"{name}: the embedding grader failed a pair: {result.message}")
        grades.append(result)
    texts = {t: grader.readable(t) for r in requests for t in (r.test_point.text, r.query.text)}
    spans = {r.passage.text: grader.spans_of(r.passage.text) for r in requests}
    order = list(dict.fromkeys([*texts.values(), *(s for group in spans.values() for s in group)]))
    matrix = np.asarray(grader.encode(order), dtype=np.float32)
    row = {t: i for i, t in enumerate(order)}
    pairs = []
    for r in requests:
        q = matrix[[row[texts[r.test_point.text]]]]
        s = matrix[[row[x] for x in spans[r.passage.text]]]
        cosines = q @ s.T
        words = np.array([[word_overlap(content_words(r.test_point.text[:MAX_WINDOW_SCAN_CHARS]),
                                        content_words(r.passage.text[:MAX_WINDOW_SCAN_CHARS]))]])
        query = np.array([[float(s[0] @ matrix[row[texts[r.query.text]]])]])
        today = today_logit(cosines.max(axis=1, keepdims=True), cosines[:, :1], words, query)
        pairs.append(QueryPairs(r.query.id, q, s, np.zeros(len(s), dtype=np.int64), np.array([0]), today, words,
                                np.array([[-1]]), np.array([False])))
    capped = [bool(r.test_point.gold_answers) and other_number(r.passage.text[:MAX_WINDOW_SCAN_CHARS],
                                                               r.test_point.gold_answers, r.test_point.text) is not None
              for r in requests]
    return BankPairs(name, requests, [labels[(r.passage.id, r.test_point.id)] for r in requests], kinds, pairs,
                     [g.grade >= 4 for g in grades], [g.details.get("decided_by") == "answer-key" for g in grades],
                     capped, [bool(r.test_point.gold_answers) for r in requests])


def bank_verdicts(bank: BankPairs, head: Head, cut: float, gold_too: bool) -> list[bool]:
    """The pairs the grader with the head passes: the answer key and the number cap as today's grader applies them."""
    out = []
    for pairs, today, keyed, capped, gold in zip(bank.pairs, bank.today, bank.keyed, bank.capped, bank.gold):
        if keyed:
            out.append(True)
        elif capped and NUMBER_CAP < 4:
            out.append(False)
        elif gold and not gold_too:
            out.append(today)
        else:
            out.append((gold and today) or bool(head.scores(pairs)[0, 0] >= cut))
    return out


def bank_figures(bank: BankPairs, verdicts: Sequence[bool]) -> dict[str, str]:
    def count(kind: str) -> str:
        hits = [v for v, k, lab in zip(verdicts, bank.kinds, bank.labels) if lab and k == kind]
        return f"{sum(hits)}/{len(hits)}"

    passed = sum(verdicts)
    right = sum(v and lab for v, lab in zip(verdicts, bank.labels))
    false_kinds = [k for v, k, lab in zip(verdicts, bank.kinds, bank.labels) if v and not lab]
    wrong_numbers = sum(v and c and not lab for v, c, lab in zip(verdicts, bank.capped, bank.labels))
    distractors = sum(k.startswith("distractor") for k in false_kinds)
    return {"precision": f"{right / passed:.3f}" if passed else "-", "word for word": count("word-for-word"),
            "other words": count("other-words"), "kappa": f"{kappa(verdicts, bank.labels):.3f}",
            "false passes": str(len(false_kinds)), "distractors": str(distractors), "wrong numbers": str(wrong_numbers)}


# --- main ------------------------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=ROOT / ".." / "shared" / "data")
    parser.add_argument("--vectors", type=Path, default=None, help="a folder of precomputed vectors (read or written)")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rank", type=int, default=16)
    parser.add_argument("--l2", type=float, default=1e-3)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--lr", type=float, default=0.05)
    args = parser.parse_args()
    missing = [p for p in (graded_path(args.data, "dl19"), graded_path(args.data, "llmjudge")) if not p.exists()]
    if missing:
        print(f"skipped: {', '.join(map(str, missing))} not found (pass --data ../shared/data)")
        return 0
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import numpy as np
    import torch

    torch.set_num_threads(1)
    grader = EmbeddingGrader(GraderConfig())
    collections = {name: load_collection(grader, args.data, name, args.vectors) for name in ("dl19", "llmjudge")}
    print(f"head: rank {args.rank}, l2 {args.l2}, {args.steps} Adam steps at {args.lr}, seed {args.seed}; "
          f"today: the shipped support model, grade-4 cut {shipped_model().cut_points[3]}")
    settings = [held_out("DL19 -> LLMJudge", [(collections["dl19"], collections["llmjudge"])], args),
                held_out("LLMJudge -> DL19", [(collections["llmjudge"], collections["dl19"])], args)]
    for name, queries in collections.items():
        folds = query_folds([t.qid for t in queries], args.folds, args.seed)
        settings.append(held_out(f"{name} query folds ({args.folds})", [
            ([t for t in queries if t.qid not in fold], [t for t in queries if t.qid in fold]) for fold in folds], args))
    print(f"\n| held out | κ vs LLM, today | κ vs LLM, head | κ vs NIST, today | κ vs NIST, head | LLM grades vs NIST |\n|{'---|' * 6}")
    for s in settings:
        print(f"| {s.name} | {mean_sd([f[0] for f in s.today])} | {mean_sd([f[0] for f in s.head])} | "
              f"{mean_sd([f[1] for f in s.today])} | {mean_sd([f[1] for f in s.head])} | {mean_sd(s.llm)} |")
    nist_better = all(sum(f[1] for f in s.head) > sum(f[1] for f in s.today) for s in settings)

    head = fit_head(collections["dl19"], args.rank, args.l2, args.steps, args.lr, args.seed)
    cut = best_cut(np.concatenate([head.scores(t)[t.llm >= 0] for t in collections["dl19"]]),
                   np.concatenate([t.llm[t.llm >= 0] >= PASS_RATING for t in collections["dl19"]]))
    print(f"\nbanks: the head fit on all of DL19 ({head.size_bytes() // 1024} KB of float32), cut {cut:.2f}")
    columns = ("precision", "word for word", "other words", "kappa", "false passes", "distractors", "wrong numbers")
    print(f"| bank | grader | {' | '.join(columns)} |\n|{'---|' * (len(columns) + 2)}")
    banks_better = True
    for name in ("heat_pump", "sourdough"):
        bank = load_bank(grader, name)
        today = bank_figures(bank, bank.today)
        for label, figures in (("today", today), ("head: questions", bank_figures(bank, bank_verdicts(bank, head, cut, False))),
                               ("head: all", bank_figures(bank, bank_verdicts(bank, head, cut, True)))):
            print(f"| {name} | {label} | {' | '.join(figures[c] for c in columns)} |")
            if label == "head: all":
                gained = int(figures["other words"].split("/")[0]) > int(today["other words"].split("/")[0])
                kept = (float(figures["precision"]) >= float(today["precision"])
                        and float(figures["kappa"]) >= float(today["kappa"]))
                banks_better = banks_better and gained and kept
    keep = nist_better and banks_better
    print(f"\ndecision: {'keep the head' if keep else 'keep today' + chr(39) + 's support model'} "
          f"(NIST kappa held out {'better' if nist_better else 'not better'} in every setting; banks' other-words "
          f"recall {'up' if banks_better else 'not up'} without a loss of precision or kappa)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
