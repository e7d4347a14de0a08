"""One mechanism per extension point, the same in pytest and the command line: a conftest.py grader
and a conftest.py bank format (an unknown suffix) work in pytest, ``graders``, ``evaluate`` and ``analyze``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from exam_harness.cli import main
from tests.helpers import KEYWORD_BANK, KEYWORD_CONFTEST, evaluation_boards, write_bank, write_exam

pytest_plugins = ["pytester"]

# A bank format for files named *.qbank: "query_id<TAB>question" lines, one query per file name stem.
QBANK_CONFTEST = '''
from pathlib import Path
from exam_harness.core.models import Query, QueryBank, TestPoint, test_point_id

class QBank:
    def claims(self, path):
        return path.name.endswith(".qbank")

    def load(self, path):
        banks = {}
        for line in Path(path).read_text().splitlines():
            qid, question = line.split("\\t")
            tp = TestPoint(id=test_point_id(qid, question), query_id=qid, kind="question", text=question)
            banks.setdefault(qid, []).append(tp)
        return [QueryBank(query=Query(id=q, text=q), test_points=tuple(tps), source=str(path))
                for q, tps in banks.items()]

def pytest_exam_register_bank_formats(registry):
    registry.register("qbank", QBank(), "tab-separated questions")
'''


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working folder with the hand-made exam and a conftest.py registering the keyword grader."""
    write_exam(tmp_path / "data")
    (tmp_path / "conftest.py").write_text(KEYWORD_CONFTEST + QBANK_CONFTEST)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_graders_lists_a_conftest_grader_and_its_options(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["graders"]) == 0
    listing = capsys.readouterr().out
    assert "keyword" in listing and "test grader: the test point's last word in the passage" in listing
    assert "embedding" in listing
    assert main(["graders", "embedding"]) == 0
    assert "cut_points" in capsys.readouterr().out
    assert main(["graders", "keywrd"]) == 4
    assert "Did you mean 'keyword'?" in capsys.readouterr().err


def test_evaluate_and_analyze_grade_with_a_conftest_grader(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bank = write_bank(folder / "kw.jsonl", KEYWORD_BANK)
    common = ["data/exam.jsonl.gz", "--bank", str(bank), "--grader", "keyword", "--k", "2", "--no-progress"]
    assert main(["evaluate", *common, "--bootstrap", "0", "--json", "lb.json"]) == 0
    doc = json.loads((folder / "lb.json").read_text())
    assert doc["settings"]["grader"]["name"] == "keyword"
    assert evaluation_boards(doc)[0]["systems"] == pytest.approx({"A": 1.0, "B": 0.75, "C": 0.25})
    capsys.readouterr()
    assert main(["analyze", "verify", *common, "--query", "q1"]) == 0
    assert "q1/k-alpha" in capsys.readouterr().out


def test_a_command_imports_the_folder_s_conftest_once(folder: Path) -> None:
    """As pytest imports a conftest.py once per session, a command imports it once (it was imported by the
    parser's plugin manager and again by each registry the command asked for: twice by evaluate, three times by
    analyze), and a command run after it in the same process imports it afresh."""
    (folder / "conftest.py").write_text((folder / "conftest.py").read_text() + IMPORT_COUNTER)
    bank = write_bank(folder / "kw.jsonl", KEYWORD_BANK)
    common = ["data/exam.jsonl.gz", "--bank", str(bank), "--grader", "keyword", "--k", "2", "--no-progress"]
    assert main(["evaluate", *common, "--bootstrap", "0"]) == 0
    assert (folder / "imports.txt").read_text() == "x"
    assert main(["analyze", "spurious", *common]) == 0
    assert (folder / "imports.txt").read_text() == "xx"


IMPORT_COUNTER = '''
with open("imports.txt", "a") as _counter:
    _counter.write("x")
'''


def test_evaluate_reads_a_bank_of_a_plugin_format(folder: Path) -> None:
    (folder / "mine.qbank").write_text("q1\tWhat is alpha?\nq2\tWhat is delta?\n")
    code = main(["evaluate", "data/exam.jsonl.gz", "--bank", "mine.qbank", "--grader", "keyword", "--k", "2",
                 "--bootstrap", "0", "--no-progress", "--json", "lb.json"])
    assert code == 0
    cover = evaluation_boards(json.loads((folder / "lb.json").read_text()))[0]
    assert cover["measure"] == "exam-cover@2" and cover["systems"] == pytest.approx({"A": 1.0, "B": 1.0, "C": 0.0})


def test_pytest_collects_a_bank_of_a_plugin_format(pytester: pytest.Pytester) -> None:
    write_exam(pytester.path / "runs")
    (pytester.path / "runs" / "official.json").unlink()
    pytester.makeconftest(KEYWORD_CONFTEST + QBANK_CONFTEST)
    pytester.makeini("[pytest]\nexam_grader = keyword\nexam_k = 2\nexam_cache = none\n"
                     "filterwarnings = ignore::pytest.PytestAssertRewriteWarning\n")
    (pytester.path / "banks").mkdir()
    (pytester.path / "banks" / "mine.qbank").write_text("q1\tWhat is alpha?\nq2\tWhat is delta?\n")
    result = pytester.runpytest("banks", "-v")
    result.stdout.fnmatch_lines(["*banks/mine.qbank::q1::q1/*?A? PASSED*", "*4 passed, 2 missed*"])
    assert result.ret == 0


def _install(site: Path, project: str, module: str, source: str, requires: str | None) -> None:
    """A distribution installed into the folder ``site``: its module and a ``pytest11`` entry point."""
    (site / f"{module}.py").write_text(source)
    info = site / f"{project}-1.0.dist-info"
    info.mkdir()
    requirement = f"Requires-Dist: {requires}\n" if requires else ""
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project}\nVersion: 1.0\n{requirement}")
    (info / "entry_points.txt").write_text(f"[pytest11]\n{project} = {module}\n")


def test_the_command_line_loads_installed_plugins_of_packages_that_require_exam_harness(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    _install(site, "exam-keyword", "exam_keyword_plugin", KEYWORD_CONFTEST, "Exam_Harness[hf]>=0.1")
    # a pytest plugin of another kind (xdist, hypothesis, ...): not imported by the command line
    _install(site, "other-plugin", "other_pytest_plugin", "raise RuntimeError('imported')\n", "pytest>=8")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.chdir(tmp_path)  # no conftest.py here
    from exam_harness.extensions import cli_registries

    registries = cli_registries()
    assert "keyword" in registries.graders.names()
    assert "exam_keyword_plugin" in sys.modules and "other_pytest_plugin" not in sys.modules


# A measure written the way Measure subclasses are: postponed annotations and ClassVar class settings.
# dataclasses reads the string "ClassVar[str]" through sys.modules[cls.__module__].
DATACLASS_MEASURE_CONFTEST = '''
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from exam_harness.measures.base import Measure


@dataclass(frozen=True)
class Constant(Measure):
    family: ClassVar[str] = "constant"
    k: int | None = None

    def compute(self, ctx):
        return {}


def pytest_exam_register_measures(registry):
    registry.register("constant", Constant, "the same value everywhere")
'''


def test_the_command_line_imports_a_conftest_with_postponed_annotations_and_a_dataclass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "conftest.py").write_text(DATACLASS_MEASURE_CONFTEST)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "conftest", raising=False)  # restored after the test
    assert main(["graders"]) == 0, capsys.readouterr().err
    from exam_harness.extensions import cli_registries

    measure = cli_registries().measures.get("constant")
    assert measure.family == "constant" and str(measure.from_text({}, 3, "constant@3")) == "constant@3"
