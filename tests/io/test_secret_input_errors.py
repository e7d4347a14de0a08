"""Input errors of a secret bank name file, line and field but never quote the bank's texts.

Each case is loaded twice, as a secret bank and as a public one: the public error quotes the text (so
the check can fail), the secret one shows the place and ``[redacted]`` instead.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from exam_harness.core.errors import InputError
from exam_harness.core.models import QueryBank
from exam_harness.core.redaction import MARK
from exam_harness.io.handbank import load_hand_bank
from exam_harness.io.workbench import load_workbench_bank

QUESTION = "What force pulls the ocean tides toward the moon?"
ANSWER = "gravity of the moon"


def hand_bank(secret: bool, question_lines: str) -> str:
    return (f"secret: {str(secret).lower()}\nqueries:\n  - id: tides\n    text: what causes tides\n"
            f"    questions:\n      - text: {QUESTION}\n{question_lines}")


def workbench_line(secret: bool, **item: object) -> str:
    record: dict[str, object] = {"query_id": "q1", "query_text": "tides",
                                 "items": [{"question_id": "q1/x", "question_text": QUESTION, **item}]}
    if secret:
        record["secret"] = True
    return json.dumps(record) + "\n"


Case = tuple[str, Callable[[bool], str], Callable[[Path], list[QueryBank]], str, str]
CASES: list[Case] = [
    ("weight-is-the-answer", lambda s: hand_bank(s, f"        answers: [{ANSWER}]\n        weight: {ANSWER}\n"),
     load_hand_bank, ":8:", ANSWER),
    ("required-is-the-answer", lambda s: hand_bank(s, f"        required: {ANSWER}\n"), load_hand_bank, ":7:", ANSWER),
    ("gold-answers-not-a-list", lambda s: workbench_line(s, gold_answers=ANSWER), load_workbench_bank, ":1:", ANSWER),
    ("question-text-a-list", lambda s: workbench_line(s, question_text=[QUESTION]), load_workbench_bank, ":1:",
     QUESTION[:30]),
]


@pytest.mark.parametrize(("name", "content", "load", "place", "text"), CASES, ids=[c[0] for c in CASES])
def test_a_secret_banks_error_names_the_place_without_its_text(
    tmp_path: Path, name: str, content: Callable[[bool], str], load: Callable[[Path], list[QueryBank]],
    place: str, text: str,
) -> None:
    suffix = ".yaml" if load is load_hand_bank else ".jsonl"
    public, secret = tmp_path / f"public{suffix}", tmp_path / f"secret{suffix}"
    public.write_text(content(False))
    secret.write_text(content(True))
    with pytest.raises(InputError) as shown:
        load(public)
    assert text.lower() in str(shown.value).lower()  # the public bank's error quotes it
    with pytest.raises(InputError) as hidden:
        load(secret)
    message = str(hidden.value)
    assert f"secret{suffix}{place}" in message and hidden.value.field is not None
    assert text.lower() not in message.lower() and MARK in message
    # what the public error said apart from the text is still said
    assert str(shown.value).split(":", 2)[2].split("[")[0] == message.split(":", 2)[2].split("[")[0]


def test_a_duplicate_id_never_quotes_an_earlier_secret_banks_text(tmp_path: Path) -> None:
    path = tmp_path / "bank.jsonl"
    later = {"query_id": "q2", "query_text": "moon",
             "items": [{"question_id": "q1/x", "question_text": "Which body raises the tide twice a day?"}]}
    path.write_text(workbench_line(True) + json.dumps(later) + "\n")
    with pytest.raises(InputError, match=r"bank\.jsonl:2: duplicate test point id \(first at line 1\)") as hidden:
        load_workbench_bank(path)
    assert "ocean" not in str(hidden.value)
    path.write_text(workbench_line(False) + json.dumps(later) + "\n")
    with pytest.raises(InputError, match="first at line 1 with text 'What force pulls the ocean"):
        load_workbench_bank(path)
