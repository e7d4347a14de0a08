"""Hostile-input families of issues 31 and 28 (``benchmarks/adversarial.py --hostile``): each family
probes one mechanism in-process, offline, and says how many of its probes held and how long they took.

Families (each with its test in tests/adversarial/):

* ``numeric-bounds``: every numeric option of the schema and of every grader refuses 10**30, 1e400, inf, nan;
* ``usage-count``: a 400-digit ``usage`` token count is capped, finite, priced;
* ``ranking-score``: a live system's score of 10**400, NaN or inf fails its call instead of crashing;
* ``early-stop``: the early-stop note counts the calls made;
* ``m-of-k``: an ``@MofK`` gate whose K is not the judge's repeats is refused before grading;
* ``measure-names``: trec_eval's printed spellings name measures, an unknown one suggests the close one;
* ``citation-2024``: a 2024 TREC RAG citation by segment id is an input error;
* ``killed-save``: a killed save's temp file in the history folder is removed by the next save.

A family "held" when every probe did; the script's exit status is 1 when one did not.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

Probe = Callable[[], Iterator[tuple[str, bool]]]


def _refused(convert: Callable[[str], object], raw: str) -> bool:
    try:
        convert(raw)
    except ValueError:
        return True
    return False


def numeric_bounds() -> Iterator[tuple[str, bool]]:
    from exam_harness.config.options import Integer, Number, Optional, specs
    from exam_harness.graders.base import declared_options
    from exam_harness.graders.registry import default_registry

    converters: list[tuple[str, object]] = [(f"--{s.name}", s.convert) for _, s in specs()]
    registry = default_registry()
    for grader in registry.names():
        converters += [(f"{grader}:{o.name}", o.convert) for o in declared_options(registry.get(grader))]
    for where, convert in converters:
        inner = convert.convert if isinstance(convert, Optional) else convert
        if isinstance(inner, (Integer, Number)):
            absurd = ("1" + "0" * 30, "9" * 5000) if isinstance(inner, Integer) else ()
            for raw in (*absurd, "1e400", "inf", "nan"):
                yield f"{where}={raw[:8]}", _refused(inner, raw)


def usage_count() -> Iterator[tuple[str, bool]]:
    import math

    from exam_harness.llm.cost import MAX_TOKEN_COUNT, Prices, TokenUsage, grade_tokens

    tokens = grade_tokens({"prompt_tokens": 10**400, "completion_tokens": 3})
    yield "capped", tokens is not None and tokens[0] == MAX_TOKEN_COUNT
    cost = Prices(1.0, 1.0).cost(TokenUsage(*(tokens or (0.0, 0.0))))
    yield "priced finite", math.isfinite(cost)


def ranking_score() -> Iterator[tuple[str, bool]]:
    from exam_harness.systems.calling import _passage

    for score in (10**400, float("nan"), float("inf")):
        try:
            _passage(("d1", "text", score), 0)
        except ValueError:
            yield f"score {str(score)[:6]}", True
        else:
            yield f"score {str(score)[:6]}", False


def early_stop() -> Iterator[tuple[str, bool]]:
    import re

    import exam_harness
    from exam_harness.core.models import Query
    from exam_harness.systems import declare
    from exam_harness.systems.calling import call_all

    declare.clear()
    made: list[str] = []

    @exam_harness.system("hostile-down", concurrency=1)
    def down(query: Query) -> str:
        made.append(query.id)
        raise ConnectionError("refused")

    try:
        stopped = call_all(declare.declared()[0], [Query(id=f"q{i}", text="t") for i in range(12)], lambda c: None)
    finally:
        declare.clear()
    found = re.search(r"the other (\d+) queries were not called \((\d+) calls made", stopped or "")
    yield "counts add up", found is not None and int(found[2]) == len(made) and int(found[1]) == 12 - len(made)


def m_of_k() -> Iterator[tuple[str, bool]]:
    from exam_harness.config.gates import check_samples, parse_threshold
    from exam_harness.core.errors import ConfigError

    try:
        check_samples([parse_threshold("0.5@2of3")], 1)
    except ConfigError:
        yield "@2of3 with repeats=1", True
    else:
        yield "@2of3 with repeats=1", False


def measure_names() -> Iterator[tuple[str, bool]]:
    from exam_harness.config.gates import check_measures
    from exam_harness.core.errors import ConfigError
    from exam_harness.measures.parsing import parse_measure

    for printed, name in (("success_10", "success.10"), ("iprec_at_recall_0.10", "iprec_at_recall.0.10")):
        yield printed, str(parse_measure(printed)) == str(parse_measure(name))
    try:
        check_measures(["cover"], None, "--exam-compare-fail")
    except ConfigError as exc:
        yield "cover ~ exam-cover", "Did you mean 'exam-cover'?" in str(exc)


def citation_2024() -> Iterator[tuple[str, bool]]:
    from exam_harness.core.errors import InputError
    from exam_harness.io.runs import load_runs

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "run.jsonl"
        path.write_text(json.dumps({"run_id": "r", "topic_id": "t", "topic": "x", "references": ["s#1"], "response_length": 1,
                                    "answer": [{"text": "A.", "citations": ["s#1"]}]}) + "\n")
        try:
            load_runs([path])
        except InputError as exc:
            yield "segment id refused", "2025 form" in str(exc)
        else:
            yield "segment id refused", False


def killed_save() -> Iterator[tuple[str, bool]]:
    from exam_harness.results.history import _remove_stale_temp_files, entries

    with tempfile.TemporaryDirectory() as folder:
        history = Path(folder)
        (history / ".0001_main.json.abcd1234.tmp").write_text("{")
        (history / ".notes.tmp").write_text("mine")
        yield "never a kept report", entries(history) == []
        _remove_stale_temp_files(history)
        yield "temp file removed, user file kept", sorted(p.name for p in history.iterdir()) == [".notes.tmp"]


FAMILIES: dict[str, Probe] = {
    "numeric-bounds": numeric_bounds, "usage-count": usage_count, "ranking-score": ranking_score,
    "early-stop": early_stop, "m-of-k": m_of_k, "measure-names": measure_names, "citation-2024": citation_2024,
    "killed-save": killed_save,
}


def run_families() -> tuple[list[str], bool]:
    """One line per family: ``hostile[NAME]: held 12/12 probes in 3.1 ms`` (and the probes that broke)."""
    lines, all_held = [], True
    for name, probe in FAMILIES.items():
        started = time.perf_counter()
        results: list[tuple[str, bool]] = []
        try:
            results.extend(probe())
        except Exception as exc:  # a probe that crashes broke its family (main before the fixes: ImportError)
            results.append((f"raised {type(exc).__name__}: {str(exc)[:60]}", False))
        ms = (time.perf_counter() - started) * 1000
        broke = [label for label, held in results if not held]
        all_held = all_held and not broke and bool(results)
        held = len(results) - len(broke)
        lines.append(f"hostile[{name}]: held {held}/{len(results)} probes in {ms:.1f} ms"
                     + (f"; broke: {', '.join(broke[:5])}" if broke else ""))
    return lines, all_held
