"""trec_eval measures computed by pytrec_eval over EXAM-Qrels.

trec_eval semantics worth knowing (checked in tests/measures/test_measures_qrels.py):
- it orders a run by score and breaks ties by docid *descending*, so :func:`trec_eval` turns our
  ranked lists into strictly decreasing scores and the rank order is kept exactly;
- ``relevance_level`` decides what counts as relevant for P, MAP, R-prec, MRR, recall, bpref; nDCG
  always uses the raw labels as gains (gain = label, discount 1/log2(rank+1));
- it reports only queries present in both the qrels and the run; the pipeline averages over every
  query of the exam instead, a missing query scoring 0.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, ClassVar

from exam_harness.core.errors import ConfigError, InputError
from exam_harness.measures.base import Measure, PerQuery, bound
from exam_harness.measures.qrels import QrelsCut, check_variant

if TYPE_CHECKING:
    from exam_harness.measures.context import ScoringContext

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
AVAILABLE: tuple[str, ...] = ("P@k", "recall@k", "ndcg@k", "map@k", "map", "ndcg", "rprec", "mrr", "bpref",
                              "any trec_eval measure as pytrec_eval takes it (success.10, set_F.0.5, infAP ...)")
# trec_eval measures whose per-query values are not what trec_eval averages (geometric means are averaged
# as logs) or not measures of a ranking at all: a mean over queries of these would misstate them
_NOT_AVERAGED: dict[str, str] = {
    "gm_map": "a geometric mean over queries", "gm_bpref": "a geometric mean over queries",
    "runid": "the run's name", "relstring": "a string of labels", "num_q": "a count of queries",
}


@dataclass(frozen=True)
class TrecName:
    """A trec_eval measure name; ``str()`` gives the canonical name, which parses back to an equal one."""

    name: str
    trec_name: str  # the key pytrec_eval reports the value under (P_20, set_F)
    request: str = field(default="", compare=False)  # what pytrec_eval is asked for (set_F.0.5); "": trec_name

    def __str__(self) -> str:
        return self.name

    @property
    def asked(self) -> str:
        return self.request or self.trec_name


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


def parse_trec_name(text: str | TrecName) -> TrecName:
    """Parse ``P@20``, ``ndcg@10``, ``map``, ``rprec``, ``mrr`` ... (case-insensitive; trec_eval names too),
    or any other trec_eval measure with its parameters as pytrec_eval takes them (``success.10``,
    ``set_F.0.5``, ``iprec_at_recall.0.10``, ``infAP``; ``success@10`` too), which prints as pytrec_eval's name."""
    if isinstance(text, TrecName):
        return text
    raw = text.strip()
    match = re.fullmatch(r"(?P<base>[A-Za-z_\-]+?)(?:(?:@|_|\.)(?P<k>\d+))?", raw)
    canon = _ALIASES.get(match.group("base").lower()) if match else None
    if canon is None or (match is not None and match.group("k") is not None and canon not in _FAMILIES):
        return _generic(raw)
    assert match is not None
    if match.group("k") is not None:
        k = int(match.group("k"))
        if canon not in _FAMILIES:
            raise _unknown(text)
        if k < 1:
            raise ConfigError(f"measure {text!r} needs a positive cut-off k, e.g. {canon}@10")
        prefix, _ = _FAMILIES[canon]
        return TrecName(f"{canon}@{k}", f"{prefix}{k}")
    if canon not in _PLAIN:
        raise _unknown(text)
    return TrecName(canon, _PLAIN[canon])


@lru_cache(maxsize=256)
def _generic(raw: str) -> TrecName:
    """Any measure of pytrec_eval.supported_measures, written ``name``, ``name.params`` or ``name@N``. The key
    its value comes under is found by asking pytrec_eval for it on a one-passage run (``set_F.0.5`` reports
    ``set_F``); a measure that reports several values (``P`` alone: P_5 ... P_1000) is refused."""
    import pytrec_eval  # C extension; imported on use so the package imports fast

    base, sep, params = re.sub(r"@(?=\d+$)", ".", raw).partition(".")
    supported = set(pytrec_eval.supported_measures)
    if base not in supported:
        # trec_eval prints a measure with its parameter after an underscore (success_10, iprec_at_recall_0.10):
        # that spelling, copied from its output, names the measure too (the longest supported name wins)
        named = [m for m in supported if raw.startswith(m + "_") and len(raw) > len(m) + 1]
        if not named:
            raise _unknown(raw)
        base = max(named, key=len)
        sep, params = ".", raw[len(base) + 1:]
    if base in _NOT_AVERAGED:
        raise ConfigError(f"measure {raw!r} is {_NOT_AVERAGED[base]} in trec_eval, not a per-query value a mean "
                          "over queries would reproduce; choose another measure")
    request = base + (sep + params if params else "")
    try:
        keys = sorted(pytrec_eval.RelevanceEvaluator({"q": {"d": 1}}, {request}).evaluate({"q": {"d": 1.0}})["q"])
    except Exception as exc:  # pytrec_eval rejects the parameters: its message says why
        raise ConfigError(f"measure {raw!r}: pytrec_eval does not take {request!r} ({exc})") from None
    if len(keys) != 1:
        choices = ", ".join(k.replace("_", ".", 1) if k.startswith(base + "_") else k for k in keys[:4])
        raise ConfigError(f"measure {raw!r} gives {len(keys)} values ({', '.join(keys[:6])}); name one with its "
                          f"parameter, e.g. {choices}")
    return TrecName(request, keys[0], request)



def run_scores(query_id: str, ranked: Sequence[str]) -> dict[str, float]:
    """Strictly decreasing scores that make trec_eval keep the given rank order exactly."""
    n = len(ranked)
    scores = dict(zip(ranked, map(float, range(n, 0, -1))))  # n - i for the i-th passage, built in C
    if len(scores) < n:  # a passage ranked twice: name it
        seen: set[str] = set()
        for pid in ranked:
            if pid in seen:
                raise InputError(
                    f"passage ranked twice for query {query_id!r}", field="ranking", value=pid,
                    expected="each passage at most once per query",
                )
            seen.add(pid)
    return scores


def run_dicts(rankings: Mapping[str, Mapping[str, Sequence[str]]]) -> dict[str, dict[str, dict[str, float]]]:
    """run -> query -> passage -> score: the rankings as pytrec_eval reads them (:func:`run_scores`)."""
    return {run: {qid: run_scores(qid, ranked) for qid, ranked in ranking.items()} for run, ranking in rankings.items()}


def trec_eval(
    qrels: Mapping[str, Mapping[str, int]],
    rankings: Mapping[str, Mapping[str, Sequence[str]]],
    measures: Iterable[str | TrecName],
    *,
    relevance_level: int = 1,
) -> dict[str, dict[str, dict[str, float]]]:
    """run -> query -> canonical measure name -> value, computed by pytrec_eval.

    Only queries in both the qrels and the run appear (trec_eval's rule); average with
    :func:`mean_over_queries` to count every query.
    """
    by_trec = checked_trec_names(measures, relevance_level)
    return _evaluate(qrels, run_dicts(rankings), by_trec, relevance_level)


def trec_eval_scored(
    qrels: Mapping[str, Mapping[str, int]],
    runs: Mapping[str, dict[str, dict[str, float]]],
    measures: Iterable[str | TrecName],
    *,
    relevance_level: int = 1,
) -> dict[str, dict[str, dict[str, float]]]:
    """:func:`trec_eval` of runs already converted by :func:`run_dicts` (convert once, evaluate over several
    qrels: the scoring context does so for its label variants)."""
    return _evaluate(qrels, runs, checked_trec_names(measures, relevance_level), relevance_level)


def checked_trec_names(measures: Iterable[str | TrecName], relevance_level: int) -> dict[str, str]:
    """trec_eval name -> canonical name of ``measures``, once they and ``relevance_level`` are checked."""
    parsed = [parse_trec_name(m) for m in measures]
    if not parsed:
        raise ConfigError(f"no measures given. Available: {', '.join(AVAILABLE)}")
    by_trec: dict[str, str] = {}
    for m in parsed:
        other = by_trec.setdefault(m.trec_name, m.name)
        if other != m.name:  # pytrec_eval reports both under one key (set_F.0.5 and set_F.1: set_F)
            raise ConfigError(f"measures {other!r} and {m.name!r} are both reported by pytrec_eval as "
                              f"{m.trec_name!r}, so one run of it cannot tell them apart; choose one")
    if isinstance(relevance_level, bool) or not isinstance(relevance_level, int):
        raise InputError("relevance level must be an integer", field="relevance_level", value=relevance_level,
                         expected="an int such as 1 or the minimum grade")
    return by_trec


def _evaluate(
    qrels: Mapping[str, Mapping[str, int]],
    runs: Mapping[str, dict[str, dict[str, float]]],
    by_trec: Mapping[str, str],
    relevance_level: int,
) -> dict[str, dict[str, dict[str, float]]]:
    raw = evaluate_raw(qrels, runs, [parse_trec_name(n).asked for n in by_trec.values()], relevance_level)
    return {run: {qid: {by_trec[t]: float(v) for t, v in values.items() if t in by_trec}
                  for qid, values in by_query.items()} for run, by_query in raw.items()}


def evaluate_raw(
    qrels: Mapping[str, Mapping[str, int]],
    runs: Mapping[str, dict[str, dict[str, float]]],
    trec_names: Iterable[str],
    relevance_level: int,
) -> dict[str, dict[str, dict[str, float]]]:
    """run -> query -> trec_eval name -> value as pytrec_eval gives them (``trec_names``: what to ask
    pytrec_eval for, :attr:`TrecName.asked`; one evaluator for every run). The scoring context reads these
    by trec_eval name rather than renaming every value."""
    import pytrec_eval  # C extension; imported on use so the package imports fast

    evaluator = pytrec_eval.RelevanceEvaluator(
        {qid: dict(labels) for qid, labels in qrels.items()}, set(trec_names), relevance_level=relevance_level
    )
    return {run: evaluator.evaluate(run_dict) for run, run_dict in runs.items()}


TITLES = {"map": "MAP", "rprec": "R-prec", "mrr": "MRR", "bpref": "bpref", "ndcg": "nDCG"}


@dataclass(frozen=True)
class TrecMeasure(Measure):
    """A trec_eval measure over EXAM-Qrels of one label variant: ``P(label=max-grade,tau=4,pool=judged,k=20)@20``.

    ``name`` is the canonical trec name (``P@20``, ``map``, ``ndcg@10`` ...) whose cut-off prints after
    ``@``; ``k`` is the depth at which runs are cut before trec_eval sees them. Queries of the exam
    that trec_eval does not report (a run that did not answer) score 0.
    """

    family: ClassVar[str] = "trec"
    at: ClassVar[str | None] = None
    # a ranking's precision against passage labels derived from grades: a generated answer is no ranking
    scores_generated: ClassVar[bool] = False
    printed: ClassVar[Mapping[str, str]] = {"min_grade": "tau"}
    bound_from: ClassVar[Mapping[str, str]] = {
        "label": "label", "min_grade": "min_grade", "m": "qrels_m", "pool": "pool", "k": "k"}
    name: str = "P@20"
    label: str | None = None
    min_grade: int | None = None
    m: int | None = None
    pool: str | None = None
    k: int | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        canonical = parse_trec_name(self.name).name
        if canonical != self.name:
            object.__setattr__(self, "name", canonical)
        if self.label is not None:
            check_variant(self.label)
            if self.label != "at-least-m":
                object.__setattr__(self, "m", None)  # m shapes only at-least-m labels

    @property
    def key(self) -> str:
        return self.name

    @property
    def title(self) -> str:
        base, _, cut = self.name.partition("@")
        return TITLES.get(base, base) + (f"@{cut}" if cut else "")

    def __str__(self) -> str:
        base, _, cut = self.name.partition("@")
        params = [f"{self.printed.get(n, n)}={getattr(self, n)}" for n in ("label", "min_grade", "m", "pool", "k")
                  if getattr(self, n) is not None]
        return base + (f"({','.join(params)})" if params else "") + (f"@{cut}" if cut else "")

    @classmethod
    def parse(cls, text: str, *, params: Mapping[str, str] | None = None, base: str | None = None) -> TrecMeasure:
        name = parse_trec_name(base if base is not None else text).name
        values: dict[str, object] = {"name": name}
        supported = {printed: info for printed, info in cls.supported_params().items() if info.field != "name"}
        for key, raw in (params or {}).items():
            info = supported.get(key)
            if info is None:
                raise ConfigError(f"measure {text!r}: unknown parameter {key!r}; valid: {', '.join(supported)}")
            if info.dtype is int:
                try:
                    values[info.field] = int(raw)
                except ValueError:
                    raise ConfigError(f"measure {text!r}: parameter {key}={raw!r} must be an integer") from None
            else:
                values[info.field] = raw
        try:
            return cls(**values)  # type: ignore[arg-type]
        except InputError as exc:
            raise ConfigError(f"measure {text!r}: {exc}") from None

    def compute(self, ctx: ScoringContext) -> PerQuery:
        return dict(ctx.trec_per_query(self.cut, self.name))

    def announce(self, ctx: ScoringContext) -> None:
        """Tell the context this measure is coming (one pytrec_eval pass per qrels for all of them)."""
        ctx.want_trec(self.cut, self.name)

    @property
    def cut(self) -> QrelsCut:
        """The qrels this (bound) measure reads."""
        label = bound(self, "label")
        m = bound(self, "m") if label == "at-least-m" else 0
        return QrelsCut(label, bound(self, "min_grade"), m, bound(self, "pool"), bound(self, "k"))
