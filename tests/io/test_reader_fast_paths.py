"""The fast path of the JSON-lines reader gives what its checking path gives.

``iter_json_lines`` parses with pydantic-core and falls back to ``json.loads`` (with the checks that
name what is wrong) for any line it refuses. Each test reads the same generated file both ways (the
fast path switched off by monkeypatching) and compares the values read, or the error messages: JSON
lines, and paragraph files read through them.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from exam_harness.core.errors import InputError
from exam_harness.io import textio
from exam_harness.io.workbench import read_paragraph_file
from tests.io.support import _json, json_lines

checked = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                          HealthCheck.too_slow])

_ENTRY = {"answers": [["q1/a", "yes"], ["q1/b", None], ["q1/c", "2"]], "llm": "m",
          "prompt_info": {"prompt_class": "C", "is_self_rated": True}, "correctAnswered": ["q1/a"],
          "self_ratings": [{"question_id": "q1/a", "self_rating": 5}, {"question_id": "q1/b", "self_rating": 0},
                           {"question_id": "q1/c", "self_rating": 2}]}
# lines whose exam_grades are self-ratings, as the DL19 file holds them
SELF_RATED_SEED: list[Any] = [
    ["q1", [{"paragraph_id": "p1", "text": "t", "exam_grades": [_ENTRY, {**_ENTRY, "llm": "other"}]},
            {"paragraph_id": "p2", "text": "u",
             "exam_grades": [{**_ENTRY, "self_ratings": [{"nugget_id": "q1/n", "self_rating": 1},
                                                         {"question_id": "q1/a", "self_rating": 4}]}]}]],
    ["q2", [{"paragraph_id": "p1", "text": "t", "exam_grades": [_ENTRY, _ENTRY]}]],
]


def _outcome(read: Callable[[], Any]) -> tuple[str, str]:
    try:
        return "read", repr(read())
    except InputError as exc:
        return "error", str(exc)


def _both_ways(data: bytes, read: Callable[[Path], Any], slow: Callable[[pytest.MonkeyPatch], None],
               monkeypatch: pytest.MonkeyPatch) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "runs.jsonl"
        path.write_bytes(data)
        fast = _outcome(lambda: read(path))
        with monkeypatch.context() as patch:
            slow(patch)
            assert _outcome(lambda: read(path)) == fast


def _no_fast_json(patch: pytest.MonkeyPatch) -> None:
    def refuse(_data: bytes) -> Any:
        raise ValueError("fast path off")

    patch.setattr(textio, "from_json", refuse)


@checked
@given(data=st.one_of(json_lines(SELF_RATED_SEED), st.binary(max_size=300),
                      st.lists(st.sampled_from([b"[", b"]", b"{", b"}", b'"', b"\\", b"\\ud800", b"\\udc00", b"1e400",
                                                b"NaN", b"-Infinity", b"1" * 4400, b"\xef\xbb\xbf", b"\xff", b"\xed\xa0\x80",
                                                b"\r", b"\n", b" ", b",", b":", b"null", b'"a"', b"0.1"]),
                               max_size=30).map(b"".join)))
@example(data=b'\xef\xbb\xbf["q1", []]\n')  # a byte-order mark: the checked path reads it
@example(data=b'["\\ud83d\\ude00", "\\ud800"]\n["x"]\n')  # a lone surrogate escape
@example(data=b"[" + b"1" * 4400 + b"]\n")  # more digits than Python converts
@example(data=b"[" * 70 + b"]" * 70 + b"\n")  # deeper than MAX_NESTING_DEPTH, within the parser's bound
def test_json_lines_read_alike_both_ways(data: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    _both_ways(data, lambda path: list(textio.iter_json_lines(path)), _no_fast_json, monkeypatch)


def _read_paragraphs(path: Path) -> Any:
    part = read_paragraph_file(path)
    return part.recorded, part.runs, part.passages, part.judgments


@checked
@given(data=json_lines(SELF_RATED_SEED).map(lambda data: b'["q0", []]\n' + data))
@example(data=b'["q1", []]\n' + _json(SELF_RATED_SEED[0]) + b"\n" + _json(SELF_RATED_SEED[1]) + b"\n")
def test_paragraph_files_read_alike_both_ways(data: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    _both_ways(data, _read_paragraphs, _no_fast_json, monkeypatch)


def test_the_fast_path_is_taken(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The tests above compare two paths only if the fast one runs: json.loads is not called."""
    path = tmp_path / "runs.jsonl"
    path.write_bytes(_json(SELF_RATED_SEED[0]) + b"\n")
    monkeypatch.setattr(json, "loads", None)  # the module textio calls
    assert list(textio.iter_json_lines(path)) == [(1, SELF_RATED_SEED[0])]
