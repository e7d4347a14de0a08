"""Every judge on a bank a team labelled itself (issue 35): how well each one's verdicts agree with the labels,
where it goes wrong, what it costs, and whether it ranks the systems as the labels do.

    python benchmarks/judges.py [--targets 0.90,0.95,0.99] [--splits 10] [--only embedding,answer-key,...]
                                [--cascade-option audit=0.5 --cascade-option strata=2]

The bank is tests/data/heat_pump_bank.json (tests/heat_pump_bank.py): 40 questions x 77 passages = 3,080
pairs, each labelled; 80 answer, 40 of them word for word (the passage states a gold answer or the question's
key phrase) and 40 in other words; 13 wrong-number and 7 wrong-sense distractors; eight systems' runs. The
LLM is a local OpenAI-compatible server answering from the labels (tests/fake_openai_server.py): the ``openai``
grader over it is right by construction, so what the other judges lose against it is theirs.

Judges (a verdict is "grade >= the judge's default minimum grade"):

- ``embedding``: the offline default;
- ``answer-key``: on the pairs it grades (questions with gold answers);
- ``bm25``: Okapi BM25 of the passage against the question (the answer key's normalised words, k1 1.2, b 0.75),
  a pass above a cut chosen for the best kappa on a random half of the questions and measured on the other
  half, averaged over ``--splits`` halvings (its system ranking applies each split's cut to every pair);
- ``openai``: the label-answering server;
- ``cascade`` at each target: the default first judge, the label-answering server deciding.

Per judge: precision, recall of the pairs answering word for word and in other words, false passes by the pair's
kind (distractor-number, distractor-sense, same-query, off-topic), Cohen's kappa against the labels, LLM calls,
and Kendall's tau-b of the systems ranked by EXAM-Cover@5 under the judge's verdicts against the ranking under the
labels (answer-key: both over the questions with gold answers). A cascade also prints what it states and the
share of the decider's passes it really kept, and the seconds its filter and its decider took (timings: take
them on an idle machine).
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from exam_harness.graders.base import Grader, GraderConfig  # noqa: E402
from exam_harness.graders.matching import normalise  # noqa: E402
from exam_harness.graders.registry import default_registry  # noqa: E402
from exam_harness.grading.cache import GradeCache  # noqa: E402
from exam_harness.grading.passes import GradingOutcome, run_grading_pass  # noqa: E402
from tests.fake_openai_server import FakeOpenAIServer  # noqa: E402
from tests.heat_pump_bank import ANSWERING, HeatPumpBank, Pair, load  # noqa: E402

FALSE_KINDS = ("distractor-number", "distractor-sense", "same-query", "other-query", "off-topic")
JUDGES = ("embedding", "answer-key", "bm25", "openai", "cascade")


@dataclass
class Row:
    judge: str
    verdicts: dict[Pair, bool]  # the pairs the judge graded
    calls: float = 0
    tau_b: float | None = None
    notes: list[str] = field(default_factory=list)
    averaged: int = 1  # verdicts measured on this many halvings (bm25): counts are per halving


def kappa(verdicts: Mapping[Pair, bool], labels: Mapping[Pair, bool]) -> float:
    """Cohen's kappa of two yes/no raters over the pairs of ``verdicts``."""
    n = len(verdicts)
    agree = sum(v == labels[p] for p, v in verdicts.items()) / n
    yes_v = sum(verdicts.values()) / n
    yes_l = sum(labels[p] for p in verdicts) / n
    chance = yes_v * yes_l + (1 - yes_v) * (1 - yes_l)
    return (agree - chance) / (1 - chance) if chance < 1 else 1.0


def tau_b(bank: HeatPumpBank, verdicts: Mapping[Pair, bool], points: set[str] | None = None) -> float:
    """Kendall's tau-b of the systems ranked by EXAM-Cover@5 under ``verdicts`` against the labels' ranking
    (over the test points ``points`` only when given)."""
    from scipy.stats import kendalltau

    def restricted(v: Mapping[Pair, bool]) -> dict[Pair, bool]:
        return {p: x for p, x in v.items() if points is None or p[1] in points}

    systems = sorted(bank.runs)
    judged = [cover(bank, restricted(verdicts), s, points) for s in systems]
    truth = [cover(bank, restricted(bank.labels), s, points) for s in systems]
    return float(kendalltau(judged, truth).statistic)


def cover(bank: HeatPumpBank, verdicts: Mapping[Pair, bool], system: str, points: set[str] | None) -> float:
    shares = []
    for query in bank.queries:
        tps = [tp for tp in bank.test_points if tp.query_id == query.id and (points is None or tp.id in points)]
        if not tps:
            continue
        top = bank.runs[system][query.id][:5]
        shares.append(sum(any(verdicts.get((pid, tp.id), False) for pid in top) for tp in tps) / len(tps))
    return sum(shares) / len(shares)


def passes_of(outcome: GradingOutcome, min_grade: int) -> dict[Pair, bool]:
    if outcome.failures:
        raise SystemExit(f"{len(outcome.failures)} pairs could not be graded, e.g. {next(iter(outcome.failures.items()))}")
    return {pair: grade >= min_grade for pair, grade in outcome.grades.items()}


def graded(grader: Grader, bank: HeatPumpBank, requests: Sequence[object] | None = None) -> dict[Pair, bool]:
    try:
        outcome = run_grading_pass(grader, list(requests or bank.requests), GradeCache(None))  # type: ignore[arg-type]
        return passes_of(outcome, grader.spec().default_min_grade)
    finally:
        grader.close()


# --- BM25 -----------------------------------------------------------------------------------------------------


def bm25_scores(bank: HeatPumpBank, k1: float = 1.2, b: float = 0.75) -> dict[Pair, float]:
    docs = {p.id: normalise(p.text).split() for p in bank.passages}
    mean_length = sum(len(d) for d in docs.values()) / len(docs)
    frequency = Counter(w for d in docs.values() for w in set(d))
    idf = {w: math.log(1 + (len(docs) - n + 0.5) / (n + 0.5)) for w, n in frequency.items()}
    counts = {pid: Counter(d) for pid, d in docs.items()}
    out: dict[Pair, float] = {}
    for tp in bank.test_points:
        words = normalise(tp.text).split()
        for pid, doc in docs.items():
            tf = counts[pid]
            out[(pid, tp.id)] = sum(idf.get(w, 0.0) * tf[w] * (k1 + 1) / (tf[w] + k1 * (1 - b + b * len(doc) / mean_length))
                                    for w in words if tf[w])
    return out


def bm25_rows(bank: HeatPumpBank, splits: int) -> Row:
    scores = bm25_scores(bank)
    held_out: dict[Pair, bool] = {}
    taus: list[float] = []
    cuts: list[float] = []
    points = [tp.id for tp in bank.test_points]
    measured: list[dict[Pair, bool]] = []
    for seed in range(splits):
        tune = set(random.Random(seed).sample(points, len(points) // 2))
        tuning = {p: s for p, s in scores.items() if p[1] in tune}
        cut = max(sorted(set(tuning.values())), key=lambda c: kappa({p: s >= c for p, s in tuning.items()}, bank.labels))
        cuts.append(cut)
        measured.append({p: s >= cut for p, s in scores.items() if p[1] not in tune})
        taus.append(tau_b(bank, {p: s >= cut for p, s in scores.items()}))
    for i, part in enumerate(measured):  # every halving's held-out pairs, told apart by their halving
        held_out.update({(f"{i}:{p[0]}", p[1]): v for p, v in part.items()})
    row = Row("bm25 (cut tuned on half the questions)", held_out, tau_b=sum(taus) / len(taus), averaged=splits)
    row.notes.append(f"cuts {min(cuts):.2f}-{max(cuts):.2f} over {splits} halvings; figures on the held-out halves")
    return row


# --- the LLM judges -----------------------------------------------------------------------------------------------


def server_options(server: FakeOpenAIServer) -> dict[str, str]:
    return {"base_url": server.base_url, "api_key": "k", "backoff_base": "0.001", "backoff_max": "0.002"}


def calls(server: FakeOpenAIServer) -> int:
    return sum(1 for r in server.requests if r.path.endswith("completions"))


def openai_row(bank: HeatPumpBank) -> Row:
    with FakeOpenAIServer(bank.responder) as server:
        grader = default_registry().create("openai", GraderConfig(model="fake-model", options=server_options(server)))
        verdicts = graded(grader, bank)
        return Row("openai (the label judge)", verdicts, calls=calls(server), tau_b=tau_b(bank, verdicts))


def cascade_row(bank: HeatPumpBank, target: float, extra: Mapping[str, str]) -> Row:
    from exam_harness.graders.cascade import statement

    with FakeOpenAIServer(bank.responder) as server:
        sub = ";".join(f"{k}={v}" for k, v in server_options(server).items())
        grader = default_registry().create("cascade", GraderConfig(model="fake-model", options={
            "decider": "openai", "decider_options": sub, "target_recall": str(target), **extra}))
        started = time.perf_counter()
        outcome = run_grading_pass(grader, bank.requests, GradeCache(None))
        seconds = time.perf_counter() - started
        min_grade = grader.spec().default_min_grade
        verdicts = passes_of(outcome, min_grade)
        said = statement(outcome.answers, outcome.grades, min_grade, grader.spec())
        costs = outcome.judge_figures  # what the filter cost and the decider took (absent before issue 35)
        grader.close()
        shown = "".join(f", {k}={v}" for k, v in extra.items())
        row = Row(f"cascade, target {target:.2f}{shown}", verdicts, calls=calls(server), tau_b=tau_b(bank, verdicts))
    kept = sum(v and bank.labels[p] for p, v in verdicts.items())
    row.notes.append(f"states: {said}")
    row.notes.append(f"true: kept {kept} of the decider's {sum(bank.labels.values())} passes "
                     f"({100 * kept / sum(bank.labels.values()):.1f}%); the pass took {seconds:.1f}s")
    if costs:
        per_call = costs["decider_seconds"] / max(1.0, costs["decider_calls"])
        row.notes.append(f"filter {costs['filter_seconds']:.1f}s; decider {costs['decider_seconds']:.1f}s over "
                         f"{costs['decider_calls']:,.0f} calls ({per_call:.3f}s a call): the {costs['filtered']:,.0f} "
                         f"calls spared would have taken about {costs['filtered'] * per_call:.1f}s")
    return row


# --- the table ----------------------------------------------------------------------------------------------------


def describe(bank: HeatPumpBank, row: Row) -> str:
    def label(pair: Pair) -> bool:
        return bank.labels[(pair[0].split(":")[-1], pair[1])]

    def kind(pair: Pair) -> str:
        return bank.pair_kinds[(pair[0].split(":")[-1], pair[1])]

    passed = [p for p, v in row.verdicts.items() if v]
    right = sum(label(p) for p in passed)
    precision = right / len(passed) if passed else float("nan")
    recalls = []
    for how in ANSWERING:
        pairs = [p for p in row.verdicts if kind(p) == how]
        found = sum(row.verdicts[p] for p in pairs)
        recalls.append(f"{found / row.averaged:g}/{len(pairs) / row.averaged:g}")
    false = Counter(kind(p) for p in passed if not label(p))
    false_text = ", ".join(f"{n / row.averaged:g} {k}" for k in FALSE_KINDS if (n := false[k]))
    labels = {p: label(p) for p in row.verdicts}
    k = kappa(row.verdicts, labels)
    share = f" ({100 * row.calls / len(bank.requests):.0f}%)" if row.calls else ""
    tau = f"{row.tau_b:.3f}" if row.tau_b is not None else "-"
    line = (f"| {row.judge} | {precision:.3f} | {recalls[0]} | {recalls[1]} | "
            f"{sum(false.values()) / row.averaged:g}{f' ({false_text})' if false_text else ''} | {k:.3f} | "
            f"{row.calls:,.0f}{share} | {tau} |")
    return "\n".join([line, *(f"    {n}" for n in row.notes)])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--targets", default="0.90,0.95,0.99")
    parser.add_argument("--splits", type=int, default=10)
    parser.add_argument("--cascade-option", action="append", default=[], metavar="KEY=VALUE",
                        help="a cascade grader option for its rows (e.g. audit=0.5); repeatable")
    parser.add_argument("--only", default=",".join(JUDGES), help=f"a comma-separated subset of {', '.join(JUDGES)}")
    args = parser.parse_args()
    only = set(args.only.split(","))
    bank = load()
    print(f"heat pump bank: {len(bank.requests):,} pairs, {sum(bank.labels.values())} answering "
          f"({sum(k == 'other-words' for k in bank.pair_kinds.values())} in other words), {len(bank.runs)} systems")
    print("| judge | precision | recall, word for word | recall, other words | false passes | kappa | LLM calls | "
          "tau-b of the systems |")
    print("|---|---|---|---|---|---|---|---|")
    makers: list[tuple[str, Callable[[], Row]]] = []
    registry = default_registry()

    def embedding() -> Row:
        verdicts = graded(registry.create("embedding", GraderConfig()), bank)
        return Row("embedding (default)", verdicts, tau_b=tau_b(bank, verdicts))

    def answer_key() -> Row:
        points = {tp.id for tp in bank.test_points if tp.gold_answers}
        requests = [r for r in bank.requests if r.test_point.id in points]
        verdicts = graded(registry.create("answer-key", GraderConfig()), bank, requests)
        return Row("answer-key (pairs it grades)", verdicts, tau_b=tau_b(bank, verdicts, points))

    makers += [("embedding", embedding), ("answer-key", answer_key), ("bm25", lambda: bm25_rows(bank, args.splits)),
               ("openai", lambda: openai_row(bank))]
    extra = dict(option.split("=", 1) for option in args.cascade_option)
    makers += [("cascade", lambda t=float(t): cascade_row(bank, t, extra)) for t in args.targets.split(",")]
    for name, make in makers:
        if name in only:
            print(describe(bank, make()), flush=True)
    print("labels' EXAM-Cover@5: " + ", ".join(f"{s} {bank.cover(bank.labels, s):.3f}" for s in
                                                 sorted(bank.runs, key=lambda s: -bank.cover(bank.labels, s))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
