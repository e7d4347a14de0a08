"""A test point's free-form ``metadata`` (JSON only, frozen) through every native bank format, and the errors
a bank gets for a value JSON cannot hold (file, line and field named)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exam_harness.core.errors import InputError
from exam_harness.core.json_values import FrozenJSON, thaw_json
from exam_harness.core.models import Query, QueryBank, TestPoint
from exam_harness.io.banks import load_bank
from exam_harness.io.generated_banks import write_bank

TEXT = st.text(st.characters(codec="utf-8"), max_size=12)  # no lone surrogate: it is no UTF-8
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False, allow_infinity=False) | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4), max_leaves=12)
METADATA = st.dictionaries(TEXT, JSON_VALUES, max_size=5)


def bank_of(metadata: dict[str, Any], bank_metadata: dict[str, Any] | None = None,
            facet_metadata: dict[str, Any] | None = None) -> list[QueryBank]:
    """A query's own bank (its metadata ``bank_metadata``) and, where ``facet_metadata`` is given, a facet bank."""
    points = (TestPoint(id="q1/a", query_id="q1", kind="question", text="Who?", metadata=metadata),
              TestPoint(id="q1/n", query_id="q1", kind="nugget", text="a nugget", importance="okay", metadata=metadata))
    banks = [QueryBank(query=Query(id="q1", text="a query"), test_points=points, metadata=bank_metadata or {})]
    if facet_metadata is not None:
        banks.append(QueryBank(query=Query(id="q1", text="a query / a facet", facets={"f": "a facet"}), facet_id="f",
                               metadata=facet_metadata, test_points=(
                                   TestPoint(id="q1/f/b", query_id="q1", kind="question", text="When?", facet_id="f"),)))
    return banks


@pytest.mark.parametrize("name", ["bank.json", "bank.yaml", "bank.jsonl"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(metadata=METADATA, bank_metadata=METADATA, facet_metadata=METADATA)
def test_any_json_metadata_survives_write_and_read(tmp_path: Path, name: str, metadata: dict[str, Any],
                                                   bank_metadata: dict[str, Any], facet_metadata: dict[str, Any]) -> None:
    """A test point's metadata and a bank's own (the query's and a facet's, each its own) come back whole."""
    banks = bank_of(metadata, bank_metadata, facet_metadata)
    write_bank(tmp_path / name, banks)
    read = load_bank(tmp_path / name)
    assert [b.test_points for b in read] == [b.test_points for b in banks]
    assert thaw_json(read[0].test_points[0].metadata) == json.loads(json.dumps(metadata))  # the same JSON, not only equal
    assert hash(read[0].test_points[0]) == hash(banks[0].test_points[0])
    assert [thaw_json(b.metadata) for b in read] == json.loads(json.dumps([bank_metadata, facet_metadata]))
    assert [b.metadata for b in read] == [b.metadata for b in banks] and hash(read[0].metadata) == hash(banks[0].metadata)


def test_metadata_is_frozen_and_json_only() -> None:
    point = bank_of({"trace": [1, {"a": None}]})[0].test_points[0]
    assert isinstance(point.metadata, FrozenJSON) and point.metadata["trace"] == (1, {"a": None})
    with pytest.raises(TypeError):
        point.metadata["trace"] = 2  # type: ignore[index]
    assert {point} == {point.model_copy()}
    same_in_python = [FrozenJSON({"n": 1}), FrozenJSON({"n": 1.0}), FrozenJSON({"n": True})]
    assert len(set(same_in_python)) == 3 and same_in_python[0] != same_in_python[1]  # as in a file: 1, 1.0, true
    assert FrozenJSON({"a": [1, {"b": None}]}) == {"a": [1, {"b": None}]} != {"a": [1, {"b": {0}}]}
    assert TestPoint.model_validate_json(point.model_dump_json()) == point
    with pytest.raises(ValueError, match=r"metadata\.when\[1\]: a set is not a JSON value"):
        TestPoint(id="q1/a", query_id="q1", kind="question", text="Who?", metadata={"when": [1, {2}]})  # type: ignore[list-item]
    with pytest.raises(ValueError, match=r"metadata\.x: nan is no JSON number"):
        TestPoint(id="q1/a", query_id="q1", kind="question", text="Who?", metadata={"x": float("nan")})


@pytest.mark.parametrize(("name", "text", "line", "field", "why"), [
    ("bank.yaml", "queries:\n  - id: q1\n    text: t\n    nuggets:\n      - text: n\n        metadata:\n"
     "          made: 2024-01-01\n", 7, "metadata.made", "a date is not a JSON value"),
    ("bank.yaml", "queries:\n  - id: q1\n    text: t\n    nuggets:\n      - text: n\n        metadata:\n"
     "          trace: [1, .nan]\n", 7, "metadata.trace[1]", "nan is no JSON number"),
    ("bank.yaml", "queries:\n  - id: q1\n    text: t\n    nuggets:\n      - {text: n, metadata: [1]}\n", 5, "metadata",
     "must be a mapping"),
    ("bank.json", '{"queries": [{"id": "q1", "text": "t", "nuggets": [\n{"text": "n", "metadata": {"s": NaN}}]}]}', 2,
     "metadata.s", "nan is no JSON number"),
    ("bank.jsonl", '{"query_id": "q1", "query_text": "t", "items": [{"nugget_text": "n", "metadata": {"s": [Infinity]}}]}\n',
     1, "items[0].metadata.s[0]", "inf is no JSON number"),
    ("bank.jsonl", '{"query_id": "q1", "query_text": "t", "items": [{"nugget_text": "n", "metadata": "x"}]}\n',
     1, "items[0].metadata", "must be a JSON object"),
    # a bank's own metadata (a query's, a facet's, a Workbench line's)
    ("bank.yaml", "queries:\n  - id: q1\n    text: t\n    metadata:\n      made: 2024-01-01\n    nuggets: [n]\n", 5,
     "metadata.made", "a date is not a JSON value"),
    ("bank.yaml", "queries:\n  - id: q1\n    text: t\n    facets:\n      - id: f\n        text: ft\n"
     "        metadata: {runs: [.inf]}\n        nuggets: [n]\n", 7, "metadata.runs[0]", "inf is no JSON number"),
    ("bank.yaml", "queries:\n  - id: q1\n    text: t\n    metadata: {a: 1}\n    facets:\n      - id: f\n"
     "        text: ft\n        nuggets: [n]\n", 4, "metadata", "has metadata but no questions or nuggets of its own"),
    ("bank.jsonl", '{"query_id": "q1", "query_text": "t", "metadata": {"s": NaN}, "items": [{"nugget_text": "n"}]}\n',
     1, "metadata.s", "nan is no JSON number"),
    ("bank.jsonl", '{"query_id": "q1", "query_text": "t", "metadata": [1], "items": [{"nugget_text": "n"}]}\n',
     1, "metadata", "must be a JSON object"),
])
def test_a_value_json_cannot_hold_names_file_line_and_field(tmp_path: Path, name: str, text: str, line: int,
                                                            field: str, why: str) -> None:
    (tmp_path / name).write_text(text)
    with pytest.raises(InputError) as caught:
        load_bank(tmp_path / name)
    error = caught.value
    assert (Path(error.path or "").name, error.line, error.field) == (name, line, field)
    assert why in error.message


def test_a_secret_test_points_metadata_is_left_out_where_outputs_quote_it() -> None:
    """Metadata may quote a secret test point (a nugget's reasoning): the view outputs quote has none of it."""
    from exam_harness.core.models import ExamData
    from exam_harness.exam.inputs import ExamView

    points = {tp.id: tp for tp in bank_of({"reasoning": "the moon pulls the sea"})[0].test_points}
    view = ExamView(data=ExamData(), test_points={"q1": list(points)}, pooled={}, points=points)
    shown = view.without_secrets(lambda tid: tid == "q1/a").points
    assert not shown["q1/a"].metadata and shown["q1/n"].metadata == points["q1/n"].metadata


def test_a_text_with_a_next_line_character_survives_the_yaml_writer(tmp_path: Path) -> None:
    """PyYAML writes U+0085 inside a quoted text as a line break (read back as a space): the writer escapes it."""
    banks = [QueryBank(query=Query(id="q1", text="a\x85query"), test_points=(
        TestPoint(id="q1/a", query_id="q1", kind="question", text="Who\x85?", metadata={"k\x85": "v\x85"}),))]
    write_bank(tmp_path / "bank.yaml", banks)
    (read,) = load_bank(tmp_path / "bank.yaml")
    assert (read.query.text, read.test_points) == ("a\x85query", banks[0].test_points)


def test_a_secret_banks_own_metadata_is_never_quoted_in_an_error(tmp_path: Path) -> None:
    """A secret bank's own metadata may quote its test points: an error about it names the place, not the value
    (the public bank's error quotes it, so the check can fail)."""
    for secret in (False, True):
        (tmp_path / "bank.yaml").write_text(f"secret: {str(secret).lower()}\nqueries:\n  - id: q1\n    text: t\n"
                                            "    metadata: {note: 2024-05-01}\n    nuggets: [n]\n")
        with pytest.raises(InputError) as caught:
            load_bank(tmp_path / "bank.yaml")
        assert (caught.value.line, caught.value.field) == (5, "metadata.note")
        assert ("2024-05-01" in str(caught.value)) is not secret


def test_generating_into_a_bank_keeps_its_own_metadata(tmp_path: Path) -> None:
    """A generated bank merged into an existing file keeps the existing bank's metadata (and a new bank has none)."""
    from exam_harness.features.generate.generation import merge_banks

    existing = bank_of({}, {"creator": "NIST", "notes": [1, None]})
    generated = [QueryBank(query=Query(id="q1", text="a query"), test_points=(
        TestPoint(id="q1/g", query_id="q1", kind="question", text="Where?"),)),
        QueryBank(query=Query(id="q2", text="another"), test_points=(
            TestPoint(id="q2/g", query_id="q2", kind="question", text="Why?"),))]
    merged = merge_banks(existing, generated, set()).banks
    write_bank(tmp_path / "bank.yaml", merged)
    assert [b.metadata for b in load_bank(tmp_path / "bank.yaml")] == [{"creator": "NIST", "notes": [1, None]}, {}]
