"""EXAM-Qrels: passage-level labels from grades, trec qrels files, and trec_eval measures.

Label variants (METHOD.md, Phase 4), for passage p of query q with bank R_q and minimum grade tau:
- ``max-grade``: max over r in R_q of grade(p, r) (multi-graded; trec_eval's relevance level = tau);
- ``count``: |{r : grade(p, r) >= tau}| (relevance level 1);
- ``at-least-m``: 1 if that count >= m else 0 (relevance level 1).

trec_eval semantics worth knowing (checked in tests/test_metrics_qrels.py):
- it orders a run by score and breaks ties by docid *descending*, so :func:`evaluate` turns our
  ranked lists into strictly decreasing scores and the rank order is kept exactly;
- ``relevance_level`` decides what counts as relevant for P, MAP, R-prec, MRR, recall, bpref; nDCG
  always uses the raw labels as gains (gain = label, discount 1/log2(rank+1));
- it reports only queries present in both the qrels and the run. :func:`mean_over_queries`
  averages over the queries you name instead (every query of the bank), a missing query scoring 0.
"""

from __future__ import annotations

import difflib
import math
import os
import re
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from exam_harness.errors import ConfigError, InputError
from exam_harness.metrics._checks import Grades, check_min_grade, check_missing, grade_of

Qrels = dict[str, dict[str, int]]
PerQuery = Mapping[str, Mapping[str, float]]

VARIANTS: tuple[str, ...] = ("max-grade", "count", "at-least-m")
DEFAULT_MEASURES: tuple[str, ...] = ("P@20", "map", "ndcg@10", "ndcg@20", "rprec", "mrr")


# --- labels -------------------------------------------------------------------------------------


def _check_variant(variant: str) -> None:
    if variant not in VARIANTS:
        close = difflib.get_close_matches(variant, VARIANTS, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise InputError(
            f"unknown qrels label variant.{hint}",
            field="variant",
            value=variant,
            expected=", ".join(VARIANTS),
        )


def relevance_level(variant: str, min_grade: int) -> int:
    """The trec_eval relevance level that binarises a variant's labels: tau for max-grade, else 1."""
    _check_variant(variant)
    check_min_grade(min_grade)
    return min_grade if variant == "max-grade" else 1


def qrels_labels(
    grades: Grades,
    test_points: Mapping[str, Sequence[str]],
    passages_per_query: Mapping[str, Iterable[str]],
    *,
    variant: str,
    min_grade: int,
    m: int = 2,
    missing: str = "error",
) -> Qrels:
    """Label every passage of ``passages_per_query`` (query -> passage ids) from its grades.

    Queries absent from the bank, or with an empty bank, get no labels (nothing to examine).
    """
    _check_variant(variant)
    check_min_grade(min_grade)
    check_missing(missing)
    if isinstance(m, bool) or not isinstance(m, int) or m < 1:
        raise InputError("at-least-m needs a positive m", field="m", value=m, expected="an integer >= 1")
    qrels: Qrels = {}
    for qid, pids in passages_per_query.items():
        bank = list(dict.fromkeys(test_points.get(qid, ())))
        if not bank:
            continue
        labels: dict[str, int] = {}
        for pid in pids:
            if pid in labels:
                continue
            row = [grade_of(grades, pid, tp, qid, missing) for tp in bank]
            if variant == "max-grade":
                labels[pid] = max(row)
            else:
                count = sum(1 for g in row if g >= min_grade)
                labels[pid] = count if variant == "count" else int(count >= m)
        qrels[qid] = labels
    return qrels


# --- qrels files --------------------------------------------------------------------------------


def _check_id(value: str, what: str) -> None:
    if not value or any(ch.isspace() for ch in value):
        raise InputError(
            f"{what} cannot be written to a qrels file",
            field=what,
            value=value,
            expected="a non-empty id without whitespace",
        )


def write_qrels(path: str | Path, qrels: Mapping[str, Mapping[str, int]]) -> Path:
    """Write ``qid 0 pid label`` lines sorted by (qid, pid), atomically (temp file + os.replace)."""
    path = Path(path)
    lines: list[str] = []
    for qid in sorted(qrels):
        _check_id(qid, "query_id")
        for pid in sorted(qrels[qid]):
            _check_id(pid, "passage_id")
            label = qrels[qid][pid]
            if isinstance(label, bool) or not isinstance(label, int):
                raise InputError(
                    f"qrels label of passage {pid!r} for query {qid!r} is not an integer",
                    field="label",
                    value=label,
                    expected="an int",
                )
            lines.append(f"{qid} 0 {pid} {label}\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as out:
            out.writelines(lines)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def read_qrels(path: str | Path) -> Qrels:
    """Read a trec qrels file (``qid iteration pid label``); blank lines are skipped."""
    path = Path(path)
    qrels: Qrels = {}
    with path.open(encoding="utf-8") as src:
        for lineno, line in enumerate(src, start=1):
            fields = line.split()
            if not fields:
                continue
            if len(fields) != 4:
                raise InputError(
                    f"expected 4 fields, found {len(fields)}",
                    path=path,
                    line=lineno,
                    field="line",
                    value=line.rstrip("\n"),
                    expected="'query_id iteration passage_id label'",
                )
            qid, _, pid, label_text = fields
            try:
                label = int(label_text)
            except ValueError:
                raise InputError(
                    "relevance label is not an integer", path=path, line=lineno, field="label", value=label_text,
                    expected="an integer such as 0, 1, 2",
                ) from None
            labels = qrels.setdefault(qid, {})
            if pid in labels:
                raise InputError(
                    f"passage judged twice for query {qid!r}", path=path, line=lineno, field="passage_id", value=pid,
                    expected="one line per (query, passage)",
                )
            labels[pid] = label
    return qrels


# --- measures -----------------------------------------------------------------------------------

# canonical family name -> (trec_eval name or prefix, takes a cut-off)
_FAMILIES: dict[str, tuple[str, bool]] = {
    "P": ("P_", True),
    "recall": ("recall_", True),
    "ndcg": ("ndcg_cut_", True),
    "map": ("map_cut_", True),
}
_PLAIN: dict[str, str] = {"map": "map", "ndcg": "ndcg", "rprec": "Rprec", "mrr": "recip_rank", "bpref": "bpref"}
# accepted spellings (lower-cased) -> canonical name
_ALIASES: dict[str, str] = {
    "p": "P", "prec": "P", "precision": "P", "recall": "recall", "r": "recall", "ndcg": "ndcg", "ndcg_cut": "ndcg",
    "map": "map", "ap": "map", "map_cut": "map", "rprec": "rprec", "r-prec": "rprec", "r-precision": "rprec",
    "mrr": "mrr", "recip_rank": "mrr", "rr": "mrr", "bpref": "bpref",
}
AVAILABLE: tuple[str, ...] = ("P@k", "recall@k", "ndcg@k", "map@k", "map", "ndcg", "rprec", "mrr", "bpref")


@dataclass(frozen=True)
class Measure:
    """A trec_eval measure; ``str()`` gives the canonical name, which parses back to an equal Measure."""

    name: str
    trec_name: str

    def __str__(self) -> str:
        return self.name


def _unknown(text: str) -> ConfigError:
    base = re.split(r"[@_.]\d+$", text.strip())[0]
    close = difflib.get_close_matches(base.lower(), list(_ALIASES), n=1, cutoff=0.6)
    hint = ""
    if close:
        canon = _ALIASES[close[0]]
        suffix = text.strip()[len(base):]
        cut = re.sub(r"^[@_.]", "@", suffix)
        guess = canon + cut if cut and canon in _FAMILIES else canon
        hint = f" Did you mean {guess!r}?" + ("" if guess != canon or not cut else f" ({canon} takes no cut-off)")
    return ConfigError(f"unknown measure {text!r}.{hint} Available: {', '.join(AVAILABLE)} (k a positive integer)")


def parse_measure(text: str | Measure) -> Measure:
    """Parse ``P@20``, ``ndcg@10``, ``map``, ``rprec``, ``mrr`` ... (case-insensitive; trec_eval names too)."""
    if isinstance(text, Measure):
        return text
    raw = text.strip()
    match = re.fullmatch(r"(?P<base>[A-Za-z_\-]+?)(?:(?:@|_|\.)(?P<k>\d+))?", raw)
    if not match:
        raise _unknown(text)
    base = match.group("base").lower()
    canon = _ALIASES.get(base)
    if canon is None:
        raise _unknown(text)
    if match.group("k") is not None:
        k = int(match.group("k"))
        if canon not in _FAMILIES:
            raise _unknown(text)
        if k < 1:
            raise ConfigError(f"measure {text!r} needs a positive cut-off k, e.g. {canon}@10")
        prefix, _ = _FAMILIES[canon]
        return Measure(f"{canon}@{k}", f"{prefix}{k}")
    if canon not in _PLAIN:
        raise _unknown(text)
    return Measure(canon, _PLAIN[canon])


# --- evaluation ---------------------------------------------------------------------------------


def run_scores(query_id: str, ranked: Sequence[str]) -> dict[str, float]:
    """Strictly decreasing scores that make trec_eval keep the given rank order exactly."""
    n = len(ranked)
    scores: dict[str, float] = {}
    for i, pid in enumerate(ranked):
        if pid in scores:
            raise InputError(
                f"passage ranked twice for query {query_id!r}", field="ranking", value=pid,
                expected="each passage at most once per query",
            )
        scores[pid] = float(n - i)
    return scores


def evaluate(
    qrels: Mapping[str, Mapping[str, int]],
    rankings: Mapping[str, Mapping[str, Sequence[str]]],
    measures: Iterable[str | Measure] = DEFAULT_MEASURES,
    *,
    relevance_level: int = 1,
) -> dict[str, dict[str, dict[str, float]]]:
    """run -> query -> canonical measure name -> value, computed by pytrec_eval.

    Only queries in both the qrels and the run appear (trec_eval's rule); average with
    :func:`mean_over_queries` to count every query.
    """
    import pytrec_eval  # C extension; imported on use so the package imports fast

    parsed = [parse_measure(m) for m in measures]
    if not parsed:
        raise ConfigError(f"no measures given. Available: {', '.join(AVAILABLE)}")
    by_trec = {m.trec_name: m.name for m in parsed}
    if isinstance(relevance_level, bool) or not isinstance(relevance_level, int):
        raise InputError("relevance level must be an integer", field="relevance_level", value=relevance_level,
                         expected="an int such as 1 or the minimum grade")
    evaluator = pytrec_eval.RelevanceEvaluator(
        {qid: dict(labels) for qid, labels in qrels.items()}, set(by_trec), relevance_level=relevance_level
    )
    result: dict[str, dict[str, dict[str, float]]] = {}
    for run, ranking in rankings.items():
        run_dict = {qid: run_scores(qid, ranked) for qid, ranked in ranking.items()}
        raw = evaluator.evaluate(run_dict)
        result[run] = {
            qid: {by_trec[t]: float(v) for t, v in values.items() if t in by_trec} for qid, values in raw.items()
        }
    return result


def mean_over_queries(
    per_query: PerQuery, queries: Iterable[str], measures: Iterable[str | Measure] | None = None
) -> dict[str, float]:
    """Mean of each measure over ``queries``; a query missing from ``per_query`` scores 0.

    ``measures`` defaults to the measures found in ``per_query``. No queries give 0.0.
    """
    qids = list(dict.fromkeys(queries))
    if measures is None:
        names = list(dict.fromkeys(name for values in per_query.values() for name in values))
    else:
        names = [parse_measure(m).name for m in measures]
    if not qids:
        return {name: 0.0 for name in names}
    return {name: math.fsum(per_query.get(q, {}).get(name, 0.0) for q in qids) / len(qids) for name in names}


def measure_per_query(per_query: PerQuery, queries: Iterable[str], measure: str | Measure) -> dict[str, float]:
    """One measure's value for each of ``queries`` (0.0 where missing), for significance tests."""
    name = parse_measure(measure).name
    return {q: float(per_query.get(q, {}).get(name, 0.0)) for q in dict.fromkeys(queries)}
