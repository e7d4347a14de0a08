"""The one writer registry (exam_harness/report/writers.py): every built-in writer reads a document of
either kind without changing it, and the set's files are checked before anything is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from exam_harness.cli import main
from exam_harness.core.registry import Registry
from exam_harness.report.writers import (
    ON_REQUEST,
    Binary,
    Writer,
    WriterInput,
    WriterOutputError,
    encoded_files,
    report_set_names,
    requested_option,
)
from exam_harness.results.document import read_document
from tests.helpers import in_tree_writers, write_exam

pytest_plugins = ["pytester"]


def _every_writer_leaves(out: WriterInput) -> dict[str, list[str]]:
    """Each built-in and in-tree feature's writer's file names; the document is the same before and after each."""
    registry = in_tree_writers()
    before = out.document.model_dump()
    made = {}
    for name in registry.names():
        made[name] = sorted(registry.get(name).files(out))
        assert out.document.model_dump() == before, f"writer {name!r} changed the document"
    return made


def test_the_writers_read_a_session_report_without_changing_it(project: pytest.Pytester) -> None:
    assert project.runpytest("banks").ret == pytest.ExitCode.OK
    document = read_document(project.path / "reports" / "exam-report.json")
    made = _every_writer_leaves(WriterInput(document))
    assert made == {"qrels": [], "json": ["exam-report.json"], "trec-rag": [], "trec-rag-judgments": [], "trec-rag-answers": [],
                    "markdown": ["exam-summary.md"], "html": ["index.html"], "plots": [], "workbench": []}


def test_the_writers_read_an_evaluation_without_changing_it(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    exam, official = write_exam(tmp_path / "data")
    assert main(["evaluate", str(exam), "--official", str(official), "--k", "2", "--bootstrap", "0",
                 "--json", str(tmp_path / "doc.json")]) == 0
    # the Workbench writer writes the exam evaluate graded (WriterInput.exam), which a saved document lacks
    made = _every_writer_leaves(WriterInput(read_document(tmp_path / "doc.json")))
    assert made == {"qrels": [], "json": ["evaluation.json"], "trec-rag": [], "trec-rag-judgments": [], "trec-rag-answers": [],
                    "markdown": ["exam-summary.md"], "html": ["index.html"], "plots": ["leaderboards.png", "leaderboards.svg"],
                    "workbench": []}


def test_the_report_set_is_every_writer_but_those_on_request() -> None:
    registry = in_tree_writers()
    registry.register("csv", "tests.report.test_writers:CSV")
    assert report_set_names(registry) == ["qrels", "json", "trec-rag", "trec-rag-judgments", "trec-rag-answers", "csv"]
    # the built-ins on request, and the Workbench feature's writer, written where its option names its file
    assert set(ON_REQUEST) | {"workbench"} == set(registry.names()) - set(report_set_names(registry))
    assert [name for name in registry.names() if requested_option(registry, name) is not None] == ["workbench"]


class _Fixed:
    def __init__(self, files: dict[str, object]) -> None:
        self.made = files

    def files(self, out: WriterInput) -> dict[str, object]:
        return self.made


def test_two_writers_of_one_file_name_and_binary_content(project: pytest.Pytester) -> None:
    assert project.runpytest("banks").ret == pytest.ExitCode.OK
    out = WriterInput(read_document(project.path / "reports" / "exam-report.json"))
    registry: Registry[Writer] = Registry("writer")
    registry.register("a", _Fixed({"x.txt": "a"}))  # type: ignore[arg-type]
    registry.register("b", _Fixed({"x.txt": "b"}))  # type: ignore[arg-type]
    registry.register("image", _Fixed({"y.png": Binary(b"\x89PNG"), "z.gz": "text"}))  # type: ignore[arg-type]
    with pytest.raises(WriterOutputError, match=r"writers 'a' and 'b' both write 'x\.txt'"):
        encoded_files(registry, ["a", "b"], out)
    files = encoded_files(registry, ["image"], out)
    assert files["y.png"] == b"\x89PNG"
    import gzip

    data = files["z.gz"]
    assert isinstance(data, bytes) and gzip.decompress(data) == b"text"


CSV = _Fixed({"leaderboard.csv": "run\n"})
