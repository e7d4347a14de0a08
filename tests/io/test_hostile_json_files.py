"""The JSON files a user hands over beside the main inputs (a support model, fitted cut points, a system's manifest
beside its run, a topic file's lines) are read through the same bounded path as every other JSON input: a
document nested 100,000 deep, a number of 5,000 digits, bytes that are not UTF-8 or a FIFO are an error naming the
file (and line), never a RecursionError, a raw decoding error or a read that waits forever. Before: each was read
with ``json.loads(path.read_text())`` (or ``json.loads(line)``), and every case below failed."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from exam_harness.core.errors import ConfigError, InputError
from tests.io.support import finished

DEEP = b"{\"a\": " * 100_000 + b"1" + b"}" * 100_000
HOSTILE = {
    "deep": (DEEP, "nesting deeper than"),
    "long number": (b'{"a": ' + b"7" * 5_000 + b"}", "a number with more digits than can be read"),
    "not UTF-8": (b'{"a": "\xff"}', "not valid UTF-8"),
}


def _support_model(path: Path) -> Any:
    from exam_harness.graders.support import read_support_model

    return read_support_model(path)


def _cut_points(path: Path) -> Any:
    from exam_harness.graders.reranker_cuts import read_fitted_cut_points

    return read_fitted_cut_points(path)


READERS: dict[str, Callable[[Path], Any]] = {"support model": _support_model, "fitted cut points": _cut_points}


@pytest.mark.parametrize("reader", list(READERS))
@pytest.mark.parametrize("case", [*HOSTILE, "fifo"])
def test_a_hostile_model_file_is_a_config_error_naming_it(tmp_path: Path, reader: str, case: str) -> None:
    path = tmp_path / "model.json"
    if case == "fifo":
        os.mkfifo(path)
        message = "is not a regular file"
    else:
        path.write_bytes(HOSTILE[case][0])
        message = HOSTILE[case][1]
    with pytest.raises(ConfigError, match=f"cannot read the {reader}: .*model.json.*{message}"):
        finished(lambda: READERS[reader](path), path, timeout=10.0)  # before: the FIFO was waited on


@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_hostile_system_manifest_beside_the_runs_is_a_note(tmp_path: Path, case: str) -> None:
    from exam_harness.graders.judge_guards import read_manifests

    (tmp_path / "bad.system.json").write_bytes(HOSTILE[case][0])
    (tmp_path / "good.system.json").write_text('{"model": "gpt-4o"}')
    manifests, notes = read_manifests([tmp_path])
    assert manifests == {"good": {"model": "gpt-4o"}}
    assert len(notes) == 1 and "bad.system.json" in notes[0] and HOSTILE[case][1] in notes[0]


@pytest.mark.parametrize("case", ["deep", "long number"])
def test_a_hostile_topic_line_is_an_input_error_naming_it(tmp_path: Path, case: str) -> None:
    from exam_harness.features.trec_rag.answers import read_track_topics

    path = tmp_path / "topics.jsonl"
    path.write_bytes(b'{"id": "1", "title": "a topic"}\n' + HOSTILE[case][0] + b"\n")
    with pytest.raises(InputError, match=rf"topics\.jsonl:2: .*{HOSTILE[case][1]}"):
        read_track_topics(path)


def test_a_hostile_batch_output_line_is_a_problem_and_its_request_is_sent_again() -> None:
    """A provider's (or a vLLM server's) batch output file: such a line was a RecursionError or ValueError that
    stopped collecting the whole job; now it is a problem like any line that is not JSON."""
    from exam_harness.llm.batch import read_outputs

    good = '{"custom_id": "a", "response": {"status_code": 200, "body": {"x": 1}}}'
    text = "\n".join([good, DEEP.decode(), HOSTILE["long number"][0].decode()]) + "\n"
    answers, problems = read_outputs([("out.jsonl", text)])
    assert list(answers) == ["a"] and answers["a"].body == {"x": 1}
    assert problems == ["out.jsonl, line 2: nested deeper than 64 levels",
                        "out.jsonl, line 3: a number with more digits than can be read"]


def test_a_custom_prompt_file_that_is_a_fifo_or_not_utf8_is_a_config_error(tmp_path: Path) -> None:
    """Before: ``read_text`` waited on a FIFO and let a UnicodeDecodeError out."""
    from exam_harness.graders.llm import custom_mode

    fifo = tmp_path / "prompt.txt"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match=r"custom prompt file cannot be read: .*prompt\.txt: is not a regular file"):
        finished(lambda: custom_mode(fifo), fifo, timeout=10.0)
    latin = tmp_path / "latin.txt"
    latin.write_bytes("Frage: {question}\nKontext: {context}\nAntwort (\xe4):".encode("latin-1"))
    with pytest.raises(ConfigError, match=r"custom prompt file cannot be read: .*latin\.txt:3: not valid UTF-8"):
        custom_mode(latin)


@pytest.mark.parametrize("case", ["deep", "fifo"])
def test_a_hostile_report_set_manifest_is_read_as_none(tmp_path: Path, case: str) -> None:
    """The report folder is the user's: a manifest nested 100,000 deep (a RecursionError before) or a FIFO in its
    place (waited on before) reads as no manifest, as one that is not JSON did."""
    from exam_harness.io.report_set import MANIFEST, set_files

    manifest = tmp_path / MANIFEST
    if case == "fifo":
        os.mkfifo(manifest)
    else:
        manifest.write_bytes(DEEP)
    assert finished(lambda: set_files(tmp_path), manifest, timeout=10.0) == []


def test_a_generated_ids_sidecar_that_is_a_fifo_or_not_utf8_is_an_input_error(tmp_path: Path) -> None:
    """The sidecar ``generate`` keeps beside a bank (before: a FIFO was waited on, bytes not in UTF-8 were a
    UnicodeDecodeError)."""
    from exam_harness.io.generated_banks import read_generated_ids, sidecar_path

    bank = tmp_path / "bank.yaml"
    sidecar = sidecar_path(bank)
    sidecar.write_bytes(b"# ids\nq1/abc\nq1/\xe4\n")
    with pytest.raises(InputError, match=r"generated-ids:3: not valid UTF-8"):
        read_generated_ids(bank)
    sidecar.unlink()
    os.mkfifo(sidecar)
    with pytest.raises(InputError, match="is not a regular file"):
        finished(lambda: read_generated_ids(bank), sidecar, timeout=10.0)
