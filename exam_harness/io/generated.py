"""Generated responses: ``*.responses.jsonl`` lines ``{"query_id", "run" (or "system"), "response"}``.

Each response is segmented into passages of about :data:`SEGMENT_TOKENS` whitespace tokens, cut at
sentence ends where possible, and ranked in order (rank 1, 2, ...). A response of at most
:data:`SEGMENT_TOKENS` tokens stays one passage. Segment ids are content-derived,
``gen-<first 16 hex digits of md5(segment text)>``, so identical text always gets the same id and
is graded once; a segment repeated verbatim within one response is ranked once. The full response
text is kept (nugget F-score needs its length). A line that also holds ``"references"`` and ``"answer":
[{"text", "citations"}]`` (a live system's cited answer, as its recording writes it) gives a cited answer
too, read by the one reading of cited answers (:func:`exam_harness.io.cited.cited_response`), so support
evaluation (``exam-harness evaluate --support``) scores its citations.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import exam_harness.io.limits as limits
from exam_harness.core.errors import InputError
from exam_harness.core.models import RankedPassage, Run
from exam_harness.io.limits import quoted
from exam_harness.io.parts import FilePart, check_run_name, check_word, model_errors
from exam_harness.io.textio import iter_json_lines

SEGMENT_TOKENS = 400
_TOKEN = re.compile(r"\S+")
# a token that ends a sentence: closing punctuation, optionally followed by quotes or brackets
_SENTENCE_END = re.compile(r"[.!?][\"'\u201d\u2019)\]]*$")


def segment_id(text: str) -> str:
    return "gen-" + hashlib.md5(text.encode("utf-8")).hexdigest()[:16]


def _sentence_ends(text: str, spans: list[tuple[int, int]]) -> list[bool]:
    """Whether a segment may end after each token: a sentence end or a paragraph break follows."""
    ends: list[bool] = []
    for i, (start, end) in enumerate(spans):
        if i + 1 == len(spans):
            ends.append(True)
            continue
        gap = text[end : spans[i + 1][0]]
        if gap.count("\n") >= 2:
            ends.append(True)
            continue
        token = text[start:end]
        nxt = text[spans[i + 1][0]]
        # "e.g. the" is no sentence end: the next sentence must not start in lower case
        ends.append(bool(_SENTENCE_END.search(token)) and not nxt.islower())
    return ends


def segment_response(text: str, max_tokens: int = SEGMENT_TOKENS) -> list[str]:
    """Split ``text`` into passages of at most ``max_tokens`` whitespace tokens.

    The number of segments is the least that fits (``ceil(tokens / max_tokens)``); segments are
    filled to about the even share, closing at a sentence end once that share is reached. A sentence
    longer than ``max_tokens`` is cut between tokens into pieces of the even share. Segments are substrings of ``text``.
    """
    spans = [m.span() for m in _TOKEN.finditer(text)]
    if not spans:
        return []
    if len(spans) <= max_tokens:
        return [text[spans[0][0] : spans[-1][1]]]
    target = math.ceil(len(spans) / math.ceil(len(spans) / max_tokens))
    ends = _sentence_ends(text, spans)
    # sentences as [first token, last token + 1)
    sentences: list[tuple[int, int]] = []
    start = 0
    for i, is_end in enumerate(ends):
        if is_end:
            sentences.append((start, i + 1))
            start = i + 1
    segments: list[tuple[int, int]] = []
    cur_start, cur_end = 0, 0
    for s_start, s_end in sentences:
        if s_end - cur_start > max_tokens and cur_end > cur_start:
            segments.append((cur_start, cur_end))
            cur_start = s_start
        # an overlong sentence: cut it into pieces of the even share, keep its tail open
        while s_end - cur_start > max_tokens:
            segments.append((cur_start, cur_start + target))
            cur_start += target
        cur_end = s_end
        if cur_end - cur_start >= target:
            segments.append((cur_start, cur_end))
            cur_start = cur_end
    if cur_end > cur_start:
        segments.append((cur_start, cur_end))
    return [text[spans[a][0] : spans[b - 1][1]] for a, b in segments]


def _failer(path: Path, lineno: int) -> Callable[..., InputError]:
    def fail(message: str, field: str, value: object = None, expected: str | None = None) -> InputError:
        return InputError(message, path=path, line=lineno, field=field, value=value, expected=expected)

    return fail


def read_responses(path: Path) -> FilePart:
    """Read a responses file into generated runs, their segment passages and the full responses."""
    part = FilePart(path=path)
    seen: dict[tuple[str, str], int] = {}
    rankings: dict[str, dict[str, list[RankedPassage]]] = {}
    for lineno, record in iter_json_lines(path):
        fail = _failer(path, lineno)

        if not isinstance(record, dict):
            raise fail("a response line must be a JSON object", "query_id", expected='{"query_id", "run", "response"}')
        if "run" in record and "system" in record:
            raise fail(
                "both 'run' and 'system' given", "system", record["system"], "'run' (or its alias 'system'), not both"
            )
        run_key = "run" if "run" in record else "system"
        run: Any = record.get(run_key)
        if (why := check_run_name(run, "run name")) is not None:  # the writers name files after it
            raise fail(why, run_key, run, "a run name: a plain name without whitespace")
        qid: Any = record.get("query_id")
        if isinstance(qid, int) and not isinstance(qid, bool):
            qid = str(qid)
        if (why := check_word(qid, "query_id")) is not None:
            raise fail(why, "query_id", qid, "a query id without whitespace")
        response = record.get("response")
        if not isinstance(response, str):
            raise fail("missing or non-text response", "response", response, "the generated text as a string")
        if len(response) > limits.MAX_RESPONSE_CHARS:  # checked before segmenting: tokens cost memory
            most = limits.count_text(limits.MAX_RESPONSE_CHARS)
            raise limits.over_limit(f"response longer than {most} characters", "MAX_RESPONSE_CHARS",
                                    f"responses of at most {most} characters", path=path, line=lineno,
                                    field="response")
        if (run, qid) in seen:
            raise fail(
                f"run {quoted(run)} has a second response for query {quoted(qid)} (first at line {seen[run, qid]})",
                "query_id",
                qid,
                "one response per query and run",
            )
        seen[run, qid] = lineno
        part.run_lines.setdefault(run, lineno)
        part.responses.setdefault(run, {})[qid] = response
        if isinstance(record.get("answer"), list):  # a live system's cited sentences, as its recording writes them
            from exam_harness.io.cited import cited_response

            part.answers.setdefault(run, {})[qid] = cited_response(record, path, lineno, run, qid)
        ranked: list[RankedPassage] = []
        ids: set[str] = set()
        for segment in segment_response(response):
            pid = segment_id(segment)
            if pid in ids:
                continue
            ids.add(pid)
            known = part.passages.get(pid)
            if known is not None and known[0] != segment:  # pragma: no cover - an md5 prefix collision
                raise fail(f"segment id {quoted(pid)} collides with line {known[1]}", "response", pid)
            part.passages.setdefault(pid, (segment, lineno))
            ranked.append(RankedPassage(passage_id=pid, rank=len(ranked) + 1, score=0.0))
        rankings.setdefault(run, {})[qid] = ranked
    if not rankings:
        # An empty file would silently drop its systems from the leaderboard and the CI gate.
        raise InputError(
            "responses file is empty: it has no responses", path=path,
            expected='one JSON object per line: {"query_id": ..., "run": ..., "response": ...}',
        )
    for run, per_query in rankings.items():
        with model_errors(path, part.run_lines[run], "run"):
            part.runs[run] = Run(name=run, rankings=per_query, generated=True, source=str(path))
    return part
