"""Bank generation, the method's first phase: queries -> exam questions or nuggets, written as a bank file.

Generation sends one of the method's generation prompts per query (per facet when the query has facets,
TREC CAR style) to any :class:`~exam_harness.llm.backend.TextBackend`, parses the JSON list in
the answer (:func:`parse_generated_items`) and assigns the method's ids
(``query_id/md5(text)``, ``query_id/facet_id/md5(text)`` with facets).

Merging into an existing bank file never overwrites human work. The rule:

* every item already in the file stays exactly as it is (text, weight, answers, id);
* every generated id ever written to a bank file is listed in a sidecar
  ``<bank file>.generated-ids`` (plain text, one id per line). An id listed there but absent from
  the bank was **deleted by a person** and is never added again;
* a person who edits an item's text keeps the item; in the hand-written format an item without an
  explicit ``id:`` takes the id of its new text (the loader's rule), so the old generated id
  disappears from the bank and counts as deleted: the original text does not come back either;
* only generated items whose id is neither in the bank nor in the sidecar are appended.

By default a bank that already has items of the requested kind is not generated again (no calls
spent); ``refresh=True`` regenerates and merges by the rule above. Without a sidecar (a bank
written by hand) nothing is known to be deleted.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from exam_harness.core.errors import GradingError, InputError
from exam_harness.core.models import Query, QueryBank, TestPoint, TestPointKind, test_point_id
from exam_harness.graders.base import GradeFailure
from exam_harness.io.banks import load_bank
from exam_harness.io.generated_banks import check_bank_path, read_generated_ids, write_bank, write_generated_ids
from exam_harness.io.handbank import facet_query_text
from exam_harness.llm.backend import PromptParts, TextBackend
from exam_harness.llm.prompts import (
    NUGGET_GENERATION,
    NUGGET_GENERATION_FACET,
    NUGGET_INSTRUCTION,
    QUESTION_GENERATION,
    QUESTION_GENERATION_FACET,
    QUESTION_INSTRUCTION,
)

BankKind = Literal["questions", "nuggets"]
BANK_KINDS: tuple[BankKind, ...] = ("questions", "nuggets")
DEFAULT_MAX_NEW_TOKENS = 1024


def point_kind(kind: BankKind) -> TestPointKind:
    return "question" if kind == "questions" else "nugget"


def _check_kind(kind: str) -> BankKind:
    if kind not in BANK_KINDS:
        raise InputError("unknown bank kind", field="kind", value=kind, expected="'questions' or 'nuggets'")
    return kind


# --- prompts ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class GenerationTarget:
    """One bank to generate: a query, or one facet of a query."""

    query: Query  # as the bank will hold it (facet banks: text "query / facet", facets {fid: text})
    query_text: str
    facet_id: str | None = None
    facet_text: str | None = None

    @property
    def key(self) -> str:
        return f"{self.query.id}/{self.facet_id}" if self.facet_id else self.query.id


def generation_targets(queries: Sequence[Query]) -> list[GenerationTarget]:
    """A query with facets yields one target per facet (as TREC CAR's banks); otherwise one."""
    targets: list[GenerationTarget] = []
    for query in queries:
        if not query.facets:
            targets.append(GenerationTarget(Query(id=query.id, text=query.text), query.text))
            continue
        for fid, ftext in query.facets.items():
            bank_query = Query(id=query.id, text=facet_query_text(query.text, ftext), facets={fid: ftext})
            targets.append(GenerationTarget(bank_query, query.text, fid, ftext))
    return targets


def generation_prompt(kind: BankKind, query_text: str, facet_text: str | None = None) -> str:
    """The method's generation prompt with its JSON instruction filled in."""
    _check_kind(kind)
    instruction = QUESTION_INSTRUCTION if kind == "questions" else NUGGET_INSTRUCTION
    if facet_text is None:
        template = QUESTION_GENERATION if kind == "questions" else NUGGET_GENERATION
        return template.format(query_text=query_text, instruction=instruction)
    template = QUESTION_GENERATION_FACET if kind == "questions" else NUGGET_GENERATION_FACET
    return template.format(query_title=query_text, query_subtopic=facet_text, instruction=instruction)


# --- parsing the answer ----------------------------------------------------------------------


class GenerationParseError(ValueError):
    """The model's answer holds no list of items."""


_FENCE = re.compile(r"```[a-zA-Z0-9_-]*[ \t]*\n?(.*?)```", re.DOTALL)
_LIST_LINE = re.compile(r"^\s*(?:[-*\u2022]|\d{1,3}[.)]|\(\d{1,3}\))\s+(.+?)\s*$")
_TEXT_KEYS = ("text", "question_text", "question", "nugget_text", "nugget", "item")


def parse_generated_items(text: str, kind: BankKind = "questions") -> list[str]:
    """The items of a generation answer, stripped, blank ones and repeats dropped, in order.

    Accepts, in this order: JSON inside code fences; the whole answer as JSON; the first
    parseable JSON or Python literal (single quotes, ``['a', 'b']``) anywhere in the text; and,
    failing all of these, a bulleted or numbered list of at least two lines. The value may be a
    list, or an object with a ``questions``/``nuggets`` key (the requested kind first), or an
    object with a single list value; list entries may be strings or objects with a text field.
    """
    kind = _check_kind(kind)
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    for candidate in candidates:
        for value in _literals(candidate):
            items = _items_of(value, kind)
            if items:
                return items
    lines = [m.group(1) for line in text.splitlines() if (m := _LIST_LINE.match(line))]
    items = _clean(line.strip("\"'") for line in lines)
    if len(items) >= 2:
        return items
    shown = " ".join(text.split())
    raise GenerationParseError(
        f"no list of {kind} found in the model's answer: {shown[:200] + '...' if len(shown) > 200 else shown!r}"
    )


def _literals(text: str) -> Iterable[Any]:
    """Values parsed from the whole text, then from every bracketed span in it, JSON first."""
    stripped = text.strip()
    yield from _parse_value(stripped)
    for start, ch in enumerate(text):
        if ch in "[{":
            end = _matching_bracket(text, start)
            if end is not None:
                yield from _parse_value(text[start : end + 1])


def _parse_value(text: str) -> Iterable[Any]:
    if not text:
        return
    try:
        yield json.loads(text)
        return
    except (json.JSONDecodeError, RecursionError):
        pass
    try:
        yield ast.literal_eval(text)
        return
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        pass
    if text.startswith("[") and text.endswith("]"):
        items = _lenient_list(text[1:-1])
        if items:
            yield items


_QUOTED_ITEM = re.compile(r"""\s*(['"])(.*?)\1\s*(?:,|$)""", re.DOTALL)


def _lenient_list(inner: str) -> list[str] | None:
    """Quoted items of a list no parser accepts, e.g. ``['What's new?', 'Why?']`` (an unescaped
    apostrophe): an item ends at its opening quote followed by a comma or the end."""
    items: list[str] = []
    pos, inner = 0, inner.strip()
    while pos < len(inner):
        match = _QUOTED_ITEM.match(inner, pos)
        if match is None:
            return None
        items.append(match.group(2))
        pos = match.end()
    return items


def _matching_bracket(text: str, start: int) -> int | None:
    """Index of the bracket closing ``text[start]``, skipping quoted strings; None if unbalanced."""
    pairs = {"[": "]", "{": "}"}
    stack: list[str] = []
    quote: str | None = None
    i = start
    while i < len(text):
        ch = text[i]
        if quote is not None:
            if ch == "\\":
                i += 2
                continue
            if ch == quote and not _is_apostrophe(text, i):
                quote = None
        elif ch in "\"'" and not _is_apostrophe(text, i):
            quote = ch
        elif ch in pairs:
            stack.append(pairs[ch])
        elif ch in "]}":
            if not stack or stack.pop() != ch:
                return None
            if not stack:
                return i
        i += 1
    return None


def _is_apostrophe(text: str, i: int) -> bool:
    """A ``'`` inside a word ("what's") opens or closes no string."""
    return text[i] == "'" and 0 < i < len(text) - 1 and text[i - 1].isalnum() and text[i + 1].isalnum()


def _items_of(value: Any, kind: BankKind) -> list[str]:
    if isinstance(value, (list, tuple)):
        return _clean(_item_text(v) for v in value)
    if isinstance(value, dict):
        other: BankKind = "nuggets" if kind == "questions" else "questions"
        for key in (kind, other, kind[:-1], other[:-1]):
            for k, v in value.items():
                if isinstance(k, str) and k.strip().lower() == key and isinstance(v, (list, tuple)):
                    return _clean(_item_text(x) for x in v)
        lists = [v for v in value.values() if isinstance(v, (list, tuple))]
        if len(lists) == 1:
            return _clean(_item_text(x) for x in lists[0])
    return []


def _item_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        for key in _TEXT_KEYS:
            text = value.get(key)
            if isinstance(text, str):
                return text
        texts = [v for v in value.values() if isinstance(v, str)]
        return texts[0] if len(texts) == 1 else None
    return None


def _clean(texts: Iterable[str | None]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for text in texts:
        if text is None:
            continue
        text = " ".join(text.split())
        if text and text not in seen:
            seen.add(text)
            out.append(text)
    return out


# --- generating ----------------------------------------------------------------------------


@dataclass(frozen=True)
class GenerationFailure:
    key: str  # bank key: query id or query_id/facet_id
    message: str


@dataclass
class GenerationOutcome:
    banks: list[QueryBank] = field(default_factory=list)
    failures: list[GenerationFailure] = field(default_factory=list)
    raw_answers: dict[str, str] = field(default_factory=dict)  # bank key -> the model's answer


def run_generation(
    queries: Sequence[Query],
    *,
    kind: BankKind = "questions",
    backend: TextBackend,
    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
    skip_keys: frozenset[str] | set[str] = frozenset(),
) -> GenerationOutcome:
    """Generate one bank per target (see :func:`generation_targets`) in one backend batch.

    Failed calls and unparseable answers become :class:`GenerationFailure` entries; they never
    produce a bank. Targets whose bank key is in ``skip_keys`` are not sent.
    """
    kind = _check_kind(kind)
    targets = [t for t in generation_targets(queries) if t.key not in skip_keys]
    prompts = [PromptParts(generation_prompt(kind, t.query_text, t.facet_text), "") for t in targets]
    outcome = GenerationOutcome()
    if not prompts:
        return outcome
    results = backend.generate(prompts, max_new_tokens=max_new_tokens)
    if len(results) != len(prompts):
        raise GradingError(f"backend {backend.model_id!r} answered {len(results)} of {len(prompts)} prompts")
    for target, result in zip(targets, results):
        if isinstance(result, GradeFailure):
            outcome.failures.append(GenerationFailure(target.key, result.message))
            continue
        outcome.raw_answers[target.key] = result.text
        try:
            texts = parse_generated_items(result.text, kind)
        except GenerationParseError as exc:
            outcome.failures.append(GenerationFailure(target.key, str(exc)))
            continue
        points = tuple(
            TestPoint(
                id=test_point_id(target.query.id, text, target.facet_id),
                query_id=target.query.id,
                kind=point_kind(kind),
                text=text,
                facet_id=target.facet_id,
            )
            for text in texts
        )
        source = f"generated:{backend.model_id}"
        outcome.banks.append(QueryBank(query=target.query, facet_id=target.facet_id, test_points=points, source=source))
    return outcome


def generate_banks(
    queries: Sequence[Query],
    *,
    kind: BankKind = "questions",
    backend: TextBackend,
    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
) -> list[QueryBank]:
    """Generate a bank per query (per facet for queries with facets); raise GradingError naming
    every query whose call failed or whose answer held no list (the others are not returned:
    use :func:`run_generation` to keep partial results)."""
    outcome = run_generation(queries, kind=kind, backend=backend, max_new_tokens=max_new_tokens)
    if outcome.failures:
        lines = "\n".join(f"  {f.key}: {f.message}" for f in outcome.failures)
        total = len(outcome.failures) + len(outcome.banks)
        raise GradingError(f"bank generation failed for {len(outcome.failures)} of {total} banks:\n{lines}")
    return outcome.banks


# --- merging into a bank file ----------------------------------------------------------------


@dataclass
class MergeResult:
    banks: list[QueryBank]
    added: dict[str, int] = field(default_factory=dict)  # bank key -> items appended
    withheld: dict[str, int] = field(default_factory=dict)  # bank key -> items deleted earlier by a person
    new_ids: set[str] = field(default_factory=set)


def merge_banks(
    existing: Sequence[QueryBank], generated: Sequence[QueryBank], generated_before: set[str] | frozenset[str]
) -> MergeResult:
    """Merge generated banks into existing ones by the module's rule (existing items untouched,
    ids generated before but absent now stay deleted, the rest appended)."""
    present = {tp.id for bank in existing for tp in bank.test_points}
    by_key = {bank.key: i for i, bank in enumerate(existing)}
    banks = list(existing)
    result = MergeResult(banks)
    for bank in generated:
        fresh: list[TestPoint] = []
        for tp in bank.test_points:
            if tp.id in present:
                continue
            if tp.id in generated_before:
                result.withheld[bank.key] = result.withheld.get(bank.key, 0) + 1
                continue
            fresh.append(tp)
            present.add(tp.id)
        if not fresh:
            continue
        result.added[bank.key] = len(fresh)
        result.new_ids.update(tp.id for tp in fresh)
        if bank.key in by_key:
            old = banks[by_key[bank.key]]
            banks[by_key[bank.key]] = old.model_copy(update={"test_points": old.test_points + tuple(fresh)})
        else:
            by_key[bank.key] = len(banks)
            banks.append(bank.model_copy(update={"test_points": tuple(fresh)}))
    return result


@dataclass
class BankFileUpdate:
    path: Path
    outcome: GenerationOutcome
    merge: MergeResult
    skipped: list[str]  # bank keys that already had items of this kind


def generate_into_file(
    path: Path,
    queries: Sequence[Query],
    *,
    kind: BankKind = "questions",
    backend: TextBackend,
    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
    refresh: bool = False,
) -> BankFileUpdate:
    """Generate banks for ``queries`` and merge them into the bank file at ``path`` (created when
    absent), then update its sidecar. The file is written only when something was added."""
    path = Path(path)
    kind = _check_kind(kind)
    check_bank_path(path)
    existing = load_bank(path) if path.exists() else []
    before = read_generated_ids(path)
    skipped: list[str] = []
    if not refresh:
        wanted = point_kind(kind)
        has_kind = {b.key for b in existing if any(tp.kind == wanted for tp in b.test_points)}
        skipped = [t.key for t in generation_targets(queries) if t.key in has_kind]
    outcome = run_generation(queries, kind=kind, backend=backend, max_new_tokens=max_new_tokens, skip_keys=set(skipped))
    merge = merge_banks(existing, outcome.banks, before)
    if merge.new_ids:
        write_bank(path, merge.banks)
        write_generated_ids(path, before | merge.new_ids)
    return BankFileUpdate(path, outcome, merge, skipped)
