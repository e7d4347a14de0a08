"""Two guards the field asks of an LLM-judged evaluation (issue 30), as pure functions the session's summary
states as warnings:

- *circularity*: a system whose manifest (``runs/<name>.system.json``) names a model of the judge's family is
  graded by a relative of itself, which favours it;
- *a leaked bank*: a run whose outputs hold the bank's gold answers or nugget texts word for word far more
  often than the other runs' may have seen the bank.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from exam_harness.core.errors import InputError
from exam_harness.core.models import ExamData, QueryBank
from exam_harness.io.textio import read_json_file

# Model families by the names their models go by (lower-case); the first family whose pattern a name
# matches is its family. A name matching none has no family, and is never called circular.
FAMILIES: tuple[tuple[str, re.Pattern[str]], ...] = tuple((family, re.compile(pattern)) for family, pattern in (
    ("gpt", r"\bgpt[-_ ]?\d|\bo[134](?:-mini)?\b|chatgpt"),
    ("claude", r"\bclaude"),
    ("gemini", r"\bgemini|\bgemma"),
    ("llama", r"\bllama|\bumbrela-llama"),
    ("mistral", r"\bmistral|\bmixtral"),
    ("qwen", r"\bqwen"),
    ("t5", r"\bflan[-_]?t5|\bt5[-_]|\bmonot5"),
    ("deepseek", r"\bdeepseek"),
    ("phi", r"\bphi[-_]?\d"),
))
# A run holds the bank's texts "far more often" than the others when its share is at least this many times
# the median share of the other runs and at least LEAK_MIN_SHARE.
LEAK_RATIO = 3.0
LEAK_MIN_SHARE = 0.2


def family_of(model: str | None) -> str | None:
    """The model family a model name belongs to (``gpt-4o-mini`` -> ``gpt``), or None."""
    if not model:
        return None
    name = model.lower().rsplit("/", 1)[-1] if "/" in model else model.lower()
    for family, pattern in FAMILIES:
        if pattern.search(name) or pattern.search(model.lower()):
            return family
    return None


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


def circular_systems(manifests: Mapping[str, Any], judge_model: str | None) -> dict[str, str]:
    """System name -> the model of the judge's family its manifest names (any string value of it)."""
    family = family_of(judge_model)
    if family is None:
        return {}
    out: dict[str, str] = {}
    for system, manifest in manifests.items():
        for text in _strings(manifest):
            for word in re.findall(r"[\w./:-]+", text):
                if family_of(word) == family:
                    out[system] = word
                    break
            if system in out:
                break
    return out


def circularity_warning(manifests: Mapping[str, Any], judge_model: str | None) -> str | None:
    found = circular_systems(manifests, judge_model)
    if not found:
        return None
    named = ", ".join(f"{system!r} ({model})" for system, model in sorted(found.items()))
    return (f"WARNING: circular judging: the judge {judge_model!r} is of the same model family as the systems "
            f"{named}; a judge favours its relatives (grade them with a judge of another family as well)")


def _normal(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def verbatim_shares(outputs: Mapping[str, Mapping[str, str]], bank_texts: Mapping[str, Sequence[str]]
                    ) -> dict[str, float]:
    """Run -> the share of the bank's texts (gold answers, nugget texts; per query) found word for word in the
    run's output for that query (lower-case, punctuation ignored). ``outputs``: run -> query -> text."""
    shares: dict[str, float] = {}
    for run, by_query in outputs.items():
        found = total = 0
        for query, texts in bank_texts.items():
            output = f" {_normal(by_query.get(query, ''))} "
            for text in texts:
                wanted = _normal(text)
                if len(wanted) < 4:  # a word this short is found anywhere
                    continue
                total += 1
                found += f" {wanted} " in output
        shares[run] = found / total if total else 0.0
    return shares


def leaked_runs(shares: Mapping[str, float]) -> dict[str, tuple[float, float]]:
    """Run -> (its share, the median share of the other runs) for runs holding the bank's texts far more often."""
    out: dict[str, tuple[float, float]] = {}
    for run, share in shares.items():
        others = [s for r, s in shares.items() if r != run]
        if not others:
            continue
        median = statistics.median(others)
        if share >= LEAK_MIN_SHARE and share >= LEAK_RATIO * median:
            out[run] = (share, median)
    return out


def leak_warning(shares: Mapping[str, float]) -> str | None:
    found = leaked_runs(shares)
    if not found:
        return None
    named = ", ".join(f"{run!r} {100 * share:.0f}% (others' median {100 * median:.0f}%)"
                      for run, (share, median) in sorted(found.items()))
    return (f"WARNING: a leaked bank? the outputs of {named} hold the bank's gold answers or nugget texts word for "
            "word far more often than the other runs'; a system that saw the bank scores what it memorised")


def read_manifests(folders: Iterable[Path]) -> tuple[dict[str, Any], list[str]]:
    """System name -> its manifest, from the ``*.system.json`` files of ``folders``; and a note per manifest
    that could not be read (the check goes on without it)."""
    manifests: dict[str, Any] = {}
    notes: list[str] = []
    for folder in folders:
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.system.json")):
            try:
                manifests[path.name.removesuffix(".system.json")] = read_json_file(path)[1]
            except InputError as exc:
                notes.append(f"note: the circularity check skips {path}: {exc}")
    return manifests, notes


def guard_notes(data: ExamData, banks: Sequence[QueryBank], k: int, judge_model: str | None,
                run_folders: Iterable[Path]) -> list[str]:
    """The session's guard warnings: circular judging (manifests in ``run_folders``) and a leaked bank (each
    run's top-``k`` texts per query against the banks' gold answers and nugget texts)."""
    manifests, notes = read_manifests(run_folders)
    circular = circularity_warning(manifests, judge_model)
    bank_texts = {b.query.id: [text for tp in b.test_points
                               for text in (*tp.gold_answers, *((tp.text,) if tp.kind == "nugget" else ()))]
                  for b in banks}
    outputs = {name: {qid: " ".join(data.passages[pid].text for pid in run.top_k(qid, k) if pid in data.passages)
                      for qid in bank_texts}
               for name, run in data.runs.items()}
    leak = leak_warning(verbatim_shares(outputs, bank_texts)) if any(bank_texts.values()) else None
    return notes + [w for w in (circular, leak) if w is not None]
