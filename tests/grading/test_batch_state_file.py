"""The batch state file (``<cache>.batch.json``) is untrusted input (issue 39, finding 1 and 9's last sentence):
docs/batch.md invites moving it between machines, so a tampered job never makes a session upload a file it
names, fetch an id that is a path, or crash: the whole file is refused (exit status 4) with a message naming
it and the field, before anything is sent."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from exam_harness.cli import main
from tests.fake_batch_server import FakeBatchServer
from tests.paths import REPO

pytest.importorskip("openai")
pytest_plugins = ["pytester"]

NAME = "20261127T120000-0001.requests.jsonl"
KEY = "ab" * 32


@pytest.fixture
def server() -> Iterator[FakeBatchServer]:
    with FakeBatchServer() as srv:
        yield srv


def job(**fields: Any) -> dict[str, Any]:
    return {"name": NAME, "target": "server", "url": "/v1/chat/completions", "custom_ids": [KEY],
            "status": "written", "created": 0, "input_file_id": None, "batch_id": None, "output_file_id": None,
            "error_file_id": None, "completed": 0, "failed": 0, **fields}


def grade_args(server: FakeBatchServer, cache: Path) -> list[str]:
    args = ["grade", str(REPO / "runs" / "strong-ranker.run"), str(REPO / "runs" / "collection.tsv"), "--bank",
            str(REPO / "banks" / "example.yaml"), "--grader", "openai", "--cache", str(cache), "--no-progress"]
    for option in (f"base_url={server.base_url}", "model=fake-model", "api_key=test", "batch=true"):
        args += ["--grader-option", option]
    return args


def plant(tmp_path: Path, document: object) -> tuple[Path, Path]:
    """A secret file, and the cache whose state file is ``document``."""
    secret = tmp_path / "home" / ".ssh" / "id_rsa"
    secret.parent.mkdir(parents=True)
    secret.write_text("-----BEGIN OPENSSH PRIVATE KEY----- planted\n")
    cache = tmp_path / "grades.sqlite"
    text = document if isinstance(document, str) else json.dumps(document)
    (tmp_path / "grades.sqlite.batch.json").write_text(text.replace("SECRET", str(secret)))
    return secret, cache


TAMPERED_NAMES = ["SECRET", "../x", "../../home/.ssh/id_rsa", f"{NAME}/../../x", "a.requests.jsonl", ".", ""]


@pytest.mark.parametrize("name", TAMPERED_NAMES)
def test_a_job_naming_a_path_refuses_the_state_file_and_uploads_nothing(
        server: FakeBatchServer, tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]) -> None:
    secret, cache = plant(tmp_path, {"version": 1, "jobs": [job(name=name)]})
    for mode in ("submit", "collect", "status"):
        assert main([*grade_args(server, cache), "--batch", mode]) == 4
        err = capsys.readouterr().err
        assert f"{cache}.batch.json: not a batch state file this harness wrote" in err
        assert "[field 'jobs[0].name'" in err
    assert main(grade_args(server, cache)) == 4  # a plain grade pass too
    assert not server.record.uploads and not server.record.created and not server.requests
    assert "planted" in secret.read_text()


@pytest.mark.parametrize(("change", "field"), [
    ({"custom_ids": "abc"}, "jobs[0].custom_ids"),  # a string: an INTERNALERROR before (finding 9)
    ({"custom_ids": ["not a cache key"]}, "jobs[0].custom_ids.0"),
    ({"target": "shell"}, "jobs[0].target"),
    ({"url": "/v1/files"}, "jobs[0].url"),
    ({"batch_id": "../files/file_1"}, "jobs[0].batch_id"),
    ({"output_file_id": "x/../../v1/models"}, "jobs[0].output_file_id"),
    ({"status": "in progress; rm -rf"}, "jobs[0].status"),
    ({"completed": -1}, "jobs[0].completed"),
    ({"created": "yesterday"}, "jobs[0].created"),
    ({"command": "curl"}, "jobs[0].command"),
], ids=lambda v: str(v)[:30])
def test_any_field_that_the_harness_does_not_write_refuses_the_state_file(
        server: FakeBatchServer, tmp_path: Path, change: dict[str, Any], field: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    _, cache = plant(tmp_path, {"version": 1, "jobs": [job(**change)]})
    assert main([*grade_args(server, cache), "--batch", "collect"]) == 4
    err = capsys.readouterr().err
    assert f"{cache}.batch.json: not a batch state file this harness wrote" in err and f"[field '{field}'" in err
    assert "Traceback" not in err and not server.record.uploads and not server.requests


@pytest.mark.parametrize("document", ['{"version": 1, "jobs": "all"}', '{"version": true, "jobs": []}',
                                      '[1, 2]', '{"version": 1}', "not json", '{"version": 1, "jobs": [1]}'])
def test_a_state_file_of_another_shape_is_refused(server: FakeBatchServer, tmp_path: Path, document: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    _, cache = plant(tmp_path, document)
    assert main([*grade_args(server, cache), "--batch", "status"]) == 4
    assert "not a batch state file this harness wrote" in capsys.readouterr().err


def test_a_request_file_that_is_a_link_is_never_uploaded(server: FakeBatchServer, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """A job of the right shape whose request file in the batch folder is a link to a secret elsewhere."""
    secret, cache = plant(tmp_path, {"version": 1, "jobs": [job()]})
    folder = tmp_path / "grades.sqlite.batch"
    folder.mkdir()
    os.symlink(secret, folder / NAME)
    assert main([*grade_args(server, cache), "--batch", "submit"]) == 4
    assert "a link is never followed" in capsys.readouterr().err
    assert not server.record.uploads


def test_a_session_refuses_a_string_custom_ids_with_a_usage_error(pytester: pytest.Pytester) -> None:
    """Finding 9's last sentence: exit 3 (INTERNALERROR) before; now exit 4 naming the file and the field."""
    from tests.helpers import write_project

    bank = "queries:\n  - id: q1\n    text: first query\n    questions:\n      - {id: q1/a, text: question a}\n"
    project = write_project(pytester, bank, "id\ttext\np1\tGRADE=5 a passage\n", {"good.run": "q1 Q0 p1 1 2.0 good\n"})
    (project.path / ".cache").mkdir(exist_ok=True)
    state = project.path / ".cache" / "grades.sqlite.batch.json"
    state.write_text(json.dumps({"version": 1, "jobs": [job(custom_ids="abc")]}))
    with FakeBatchServer() as server:
        args = ["banks", "-p", "no:cacheprovider", "--exam-grader", "openai", "--exam-no-progress",
                "--exam-cache", ".cache/grades.sqlite"]
        for option in (f"base_url={server.base_url}", "model=fake-model", "api_key=test", "batch=true"):
            args += ["--exam-grader-option", option]
        result = project.runpytest(*args)
        assert not server.record.uploads
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    text = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in text
    assert "grades.sqlite.batch.json: not a batch state file this harness wrote" in text
    assert "[field 'jobs[0].custom_ids'" in text
