"""The bad input corpus (tests/bad_inputs/cases.yaml), run end to end.

Each case copies its files over a small valid project and runs the exam through the pytest plugin
(in-process pytester) or ``exam-harness evaluate`` (``exam_harness.cli.main``). An error case must
end with exit code 4, one message naming what the manifest lists (file:line, field, bad value,
what is valid), no traceback, the previous report untouched and no grade in the cache. A case
marked ``outcome: ok`` must run to a fresh report with the listed scores.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import sqlite3
import traceback
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

import exam_harness.graders.answer_key  # pre-imported: see tests/conftest.py
import exam_harness.graders.llm  # noqa: F401
from exam_harness.cli import main as cli_main
from tests.helpers import report_means
from tests.paths import TESTS

pytest_plugins = ["pytester"]

CORPUS = TESTS / "bad_inputs"
BASE = CORPUS / "_base"
MANIFEST = CORPUS / "cases.yaml"
PREVIOUS_REPORT = "PREVIOUS REPORT\n"
CACHE = ".cache/grades.sqlite"
EVALUATE_ARGV = ["evaluate", "eval/paragraphs.jsonl", "--k", "2", "--bootstrap", "0", "--no-progress",
                 "--json", "reports/eval.json"]
BIG_PASSAGE_BYTES = 10 * 1024 * 1024

# Grade 5 when the passage contains the marker [x] of test point "<query>/x", else 0.
CONFTEST = '''
from exam_harness.graders.base import Grader
from exam_harness.core.models import Grade, GraderSpec

class MarkerGrader(Grader):
    name = "marker"
    def __init__(self, config):
        self.config = config
    def spec(self):
        return GraderSpec(name="marker", version="1", default_min_grade=4)
    def grade_batch(self, requests):
        out = []
        for r in requests:
            hit = "[" + r.test_point.id.rsplit("/", 1)[1] + "]" in r.passage.text
            out.append(Grade(grade=5 if hit else 0, grader="marker"))
        return out

def pytest_exam_register_graders(registry):
    registry.register("marker", MarkerGrader, "test grader")
'''

INI = """\
[pytest]
exam_grader = marker
exam_banks = banks
exam_runs = runs
exam_cache = {cache}
exam_report_dir = reports
filterwarnings = ignore::pytest.PytestAssertRewriteWarning
"""

USES = {"control", "hand-bank", "workbench-bank", "run", "collection", "responses", "paragraphs", "official",
        "evaluate", "cli", "ini"}
KEYS = {"id", "use", "files", "remove", "command", "args", "ini", "generate", "outcome", "expect", "covers",
        "absent_queries", "xfail"}


@dataclass(frozen=True)
class Case:
    id: str
    use: str
    files: tuple[str, ...] = ()
    remove: tuple[str, ...] = ()
    command: str = "exam"
    args: tuple[str, ...] = ()
    ini: dict[str, str] = field(default_factory=dict)
    generate: str | None = None
    outcome: str = "error"
    expect: tuple[str, ...] = ()
    covers: dict[str, float] = field(default_factory=dict)
    absent_queries: tuple[str, ...] = ()
    xfail: str | None = None

    @property
    def folder(self) -> Path:
        return CORPUS / self.id


def load_cases() -> list[Case]:
    entries = yaml.safe_load(MANIFEST.read_text(encoding="utf-8"))
    cases = []
    for entry in entries:
        unknown = set(entry) - KEYS
        assert not unknown, f"{entry.get('id')}: unknown manifest keys {unknown}"
        values: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in entry.items()}
        values["ini"] = {str(k): str(v) for k, v in entry.get("ini", {}).items()}
        cases.append(Case(**values))
    return cases


CASES = load_cases()


def params() -> list[Any]:
    out = []
    for case in CASES:
        marks = [pytest.mark.xfail(strict=True, reason=case.xfail)] if case.xfail else []
        out.append(pytest.param(case, id=case.id, marks=marks))
    return out


# ---------------------------------------------------------------------------- the project
def make_project(pytester: pytest.Pytester, case: Case) -> Path:
    root = pytester.path
    shutil.copytree(BASE, root, dirs_exist_ok=True)
    pytester.makeconftest(CONFTEST)
    lines = [line for line in INI.format(cache=CACHE).splitlines() if line.split(" = ")[0] not in case.ini]
    lines += [f"{k} = {v}" for k, v in case.ini.items()]
    (root / "tox.ini").write_text("\n".join(lines) + "\n")
    for rel in case.remove:
        (root / rel).unlink()
    for rel in case.files:
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(case.folder / rel, target)
    if case.generate is not None:
        assert case.generate in GENERATORS, f"unknown generator {case.generate!r}"
        GENERATORS[case.generate](root)
    (root / "reports").mkdir()
    (root / "reports" / "exam-report.json").write_text(PREVIOUS_REPORT)
    # the set a previous session wrote (the harness replaces only files its manifest names)
    (root / "reports" / ".exam-report-set.json").write_text('{"files": ["exam-report.json"]}\n')
    return root


def write_big_passage(root: Path) -> None:
    """A 10 MB single passage whose only marker [a] is at its very end: it must load whole."""
    filler = "lorem ipsum dolor sit amet " * (BIG_PASSAGE_BYTES // 27 + 1)
    with (root / "runs" / "collection.tsv").open("a", encoding="utf-8") as out:
        out.write("pbig\t" + filler[:BIG_PASSAGE_BYTES] + " answers [a]\n")
    (root / "runs" / "big.run").write_text("q1 Q0 pbig 1 1.0 big\n")


# ---------------------------------------------------------------------------- hostile inputs past the limits
# (exam_harness/io/limits.py), written by the test so that no large file is committed
DEEP = "[" * 100_000 + "]" * 100_000  # nested far past MAX_NESTING_DEPTH (64)
VALID_BANK_LINE = '{"query_id": "q3", "query_text": "third query", "items": [{"nugget_text": "x"}]}\n'
VALID_RESPONSE = '{"query_id": "q1", "run": "gen", "response": "It answers [a]."}\n'
VALID_PARAGRAPHS = '["q1", [{"paragraph_id": "p7", "text": "t", "paragraph_data": {"rankings": [{"method": "wb", "rank": 1}]}}]]\n'


def write(root: Path, rel: str, data: str | bytes) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))


def gzip_of(unit: bytes, size: int) -> bytes:
    """``size`` bytes of ``unit`` repeated, gzipped in blocks (never all in memory): a gzip bomb."""
    packer = zlib.compressobj(1, zlib.DEFLATED, 31)
    block = unit * ((1 << 20) // len(unit))
    return b"".join([*(packer.compress(block) for _ in range(size // len(block))), packer.flush()])


def yaml_block_nesting(levels: int) -> str:
    return "queries:\n" + "".join("  " * depth + "- \n" for depth in range(1, levels))


GENERATORS: dict[str, Callable[[Path], None]] = {
    "big-passage": write_big_passage,
    "deep-yaml-bank": lambda root: write(root, "banks/deep.yaml", "queries: " + DEEP + "\n"),
    "deep-yaml-block-bank": lambda root: write(root, "banks/deep.yaml", yaml_block_nesting(200)),
    "deep-json-bank": lambda root: write(root, "banks/deep.json", '{"queries": ' + DEEP + "}\n"),
    "many-values-json-bank": lambda root: write(root, "banks/many.json", '{"queries": [' + "0, " * 1_000_000 + "0]}\n"),
    "many-test-points-yaml-bank": lambda root: write(
        root, "banks/many.yaml", "queries:\n  - id: q3\n    text: third query\n    questions:\n"
        + "".join(f"      - question {i}\n" for i in range(10_001))),
    "deep-workbench-bank": lambda root: write(root, "banks/deep.jsonl", VALID_BANK_LINE + DEEP + "\n"),
    "many-test-points-workbench-bank": lambda root: write(
        root, "banks/many.jsonl", '{"query_id": "q3", "query_text": "third query", "items": ['
        + ", ".join(f'{{"nugget_text": "nugget {i}"}}' for i in range(10_001)) + "]}\n"),
    "gzip-bomb-workbench-bank": lambda root: write(root, "banks/bomb.jsonl.gz", gzip_of(b"\n", 64 << 20)),
    "long-run-line": lambda root: write(root, "runs/long.run", "q1 Q0 p1 1 1.0 long\nq1 Q0 p2 2 1.0 long" + " " * (65 << 10) + "\n"),
    "gzip-bomb-run": lambda root: write(root, "runs/bomb.run.gz", gzip_of(b"x", 64 << 20)),
    "long-collection-line": lambda root: write(root, "runs/collection.tsv", (BASE / "runs/collection.tsv").read_bytes()
                                               + b"p9\t" + b"x" * (32 << 20) + b"\n"),
    "long-passage-collection": lambda root: write(root, "runs/collection.tsv", (BASE / "runs/collection.tsv").read_bytes()
                                                  + b"p9\t" + b"a" * ((16 << 20) + 1) + b"\n"),
    "deep-collection-jsonl": lambda root: write(root, "runs/extra.collection.jsonl", '{"id": "p6", "text": ' + DEEP + "}\n"),
    "long-response": lambda root: write(root, "runs/gen.responses.jsonl",
                                        '{"query_id": "q1", "run": "gen", "response": "' + "a " * (1 << 19) + 'x"}\n'),
    "deep-responses": lambda root: write(root, "runs/gen.responses.jsonl", VALID_RESPONSE + DEEP + "\n"),
    "deep-paragraphs": lambda root: write(root, "runs/wb.jsonl", VALID_PARAGRAPHS + '["q1", ' + DEEP + "]\n"),
    "long-passage-paragraphs": lambda root: write(root, "runs/wb.jsonl", '["q1", [{"paragraph_id": "p7", "text": "'
                                                  + "a" * ((16 << 20) + 1) + '"}]]\n'),
    "deep-official": lambda root: write(root, "official.json", '{"good": ' + DEEP + "}\n"),
    "big-official": lambda root: write(root, "official.json", b'{"good": 1, "weak": 2, "x": "' + b"x" * (32 << 20) + b'"}'),
    "deep-evaluate-paragraphs": lambda root: write(root, "eval/paragraphs.jsonl", (BASE / "eval/paragraphs.jsonl").read_text()
                                                   + '["q2", ' + DEEP + "]\n"),
}


@dataclass
class Outcome:
    ret: int
    out: str
    err: str

    @property
    def text(self) -> str:
        return self.out + self.err


def run_case(pytester: pytest.Pytester, case: Case) -> Outcome:
    if case.command == "exam":
        result = pytester.runpytest("banks", "-p", "no:cacheprovider", *case.args)
        return Outcome(int(result.ret), result.stdout.str(), result.stderr.str())
    assert case.command == "evaluate", case.command
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            ret = cli_main([*EVALUATE_ARGV, *case.args])
        except SystemExit as exc:  # argparse
            ret = exc.code if isinstance(exc.code, int) else 1
        except Exception:
            traceback.print_exc(file=err)
            ret = -1
    return Outcome(int(ret), out.getvalue(), err.getvalue())


def cache_rows(root: Path) -> int:
    path = root / CACHE
    if not path.exists():
        return 0
    with contextlib.closing(sqlite3.connect(path)) as db:
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        return int(db.execute("SELECT COUNT(*) FROM grades").fetchone()[0]) if "grades" in tables else 0


def error_message(case: Case, outcome: Outcome) -> str:
    """The one error message: pytest's ``ERROR: ...`` or the CLI's ``exam-harness evaluate: error: ...``."""
    prefix = "ERROR:" if case.command == "exam" else "exam-harness evaluate: error:"
    starts = [i for i, line in enumerate(outcome.err.splitlines()) if line.startswith(prefix)]
    assert len(starts) == 1, f"expected one {prefix!r} message on stderr:\n{outcome.text}"
    return "\n".join(outcome.err.splitlines()[starts[0]:])


# ---------------------------------------------------------------------------- checks
def check_error(root: Path, case: Case, outcome: Outcome) -> None:
    assert "Traceback" not in outcome.text and "INTERNALERROR" not in outcome.text, outcome.text
    message = error_message(case, outcome)
    missing = [s for s in case.expect if s not in message]
    assert not missing, f"message lacks {missing}: {message}"
    assert outcome.ret == 4, f"exit code {outcome.ret}, expected 4 (usage error): {message}"
    reports = sorted(p.name for p in (root / "reports").iterdir())
    assert reports == [".exam-report-set.json", "exam-report.json"], f"report folder changed: {reports}"
    assert (root / "reports" / "exam-report.json").read_text() == PREVIOUS_REPORT
    assert cache_rows(root) == 0
    for rel in case.files:  # inputs are never rewritten (e.g. a foreign file given as --exam-cache)
        assert (root / rel).read_bytes() == (case.folder / rel).read_bytes(), rel


def check_ok(root: Path, case: Case, outcome: Outcome) -> None:
    assert "Traceback" not in outcome.text and "INTERNALERROR" not in outcome.text, outcome.text
    assert outcome.ret == 0, outcome.text
    missing = [s for s in case.expect if s not in outcome.out]
    assert not missing, f"output lacks {missing}:\n{outcome.out}"
    if case.command == "evaluate":
        assert json.loads((root / "reports" / "eval.json").read_text())["leaderboards"]
        return
    path = root / "reports" / "exam-report.json"
    assert path.stat().st_size < 1_000_000, "the report must not carry passage texts"
    report = json.loads(path.read_text())
    covers = report_means(report)
    assert covers == pytest.approx(case.covers, abs=1e-3)
    scored = {q["query_id"] for q in report["per_query"]}
    assert not scored & set(case.absent_queries)
    assert cache_rows(root) > 0


@pytest.mark.parametrize("case", params())
def test_bad_input(pytester: pytest.Pytester, case: Case) -> None:
    root = make_project(pytester, case)
    outcome = run_case(pytester, case)
    if case.outcome == "error":
        check_error(root, case, outcome)
    else:
        assert case.outcome == "ok", case.outcome
        check_ok(root, case, outcome)


# ---------------------------------------------------------------------------- the manifest itself
def test_manifest_matches_the_corpus_folders() -> None:
    ids = [case.id for case in CASES]
    assert len(ids) == len(set(ids)), "duplicate case ids"
    folders = {p.name for p in CORPUS.iterdir() if p.is_dir() and p.name != "_base"}
    assert folders == {case.id for case in CASES if case.files}, "every case folder is listed and vice versa"
    for case in CASES:
        assert case.use in USES, case.id
        assert case.outcome in ("error", "ok"), case.id
        assert case.command in ("exam", "evaluate"), case.id
        on_disk = sorted(str(p.relative_to(case.folder)) for p in case.folder.rglob("*") if p.is_file())
        assert on_disk == sorted(case.files), f"{case.id}: files on disk {on_disk}"
        if case.outcome == "error":
            assert case.expect, f"{case.id}: an error case must say what its message contains"


def test_corpus_is_large_and_varied() -> None:
    bad = [case for case in CASES if case.use != "control"]
    assert len(bad) >= 200
    kinds = {case.use for case in bad}
    assert kinds == USES - {"control"}, f"missing kinds: {USES - {'control'} - kinds}"
    names = " ".join(case.id for case in bad)
    for topic in ("truncated-gzip", "latin1", "duplicate", "missing-from-collection", "negative-rank",
                   "non-numeric-rank", "empty-file", "no-test-points", "whitespace", "big-passage",
                   "query-not-in-bank", "alias-bomb", "deep-nesting", "deep-flow-nesting", "deep-block-nesting",
                   "too-many-test-points", "too-many-values", "line-too-long", "passage-too-long", "too-long",
                   "gzip-bomb", "corrupt-gzip", "nul", "control-character", "bom-on-line", "utf8-bom", "number-too-long"):
        assert topic in names, topic
    generated = {case.generate for case in CASES if case.generate}
    assert generated == set(GENERATORS), f"generators without a case: {set(GENERATORS) - generated}"
