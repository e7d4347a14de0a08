"""Peak memory of loading the largest input the limits allow, per input kind.

    .venv/bin/python benchmarks/limits_memory.py            # every kind (a few minutes, ~3 GB of disk in /tmp)
    .venv/bin/python benchmarks/limits_memory.py --kind paragraphs-dense --kind hand-yaml

Each input sits just inside the limits of exam_harness/io/limits.py that bind it (a line of
MAX_LINE_BYTES, a document of MAX_DOCUMENT_VALUES values, a passage of MAX_PASSAGE_CHARS, ...),
shaped to cost the most memory per byte (many small values) unless it says otherwise. It is loaded in
a fresh interpreter; the table gives the input size, the seconds, the growth of the peak resident
memory (VmHWM, the ru_maxrss of Linux, restarted after imports) over the resident memory before
loading, and that growth per input byte. Inputs past a
limit are refused before their memory is spent; tests/io/test_fuzz_loaders.py bounds those.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from exam_harness.io import limits  # noqa: E402

MIB = limits.MIB
LINE = limits.MAX_LINE_BYTES - 64  # room for the line's frame
VALUES = limits.MAX_DOCUMENT_VALUES - 100


def _chunks(make: Callable[[int], str], size: int, sep: str = ", ") -> Iterator[str]:
    """``make(0), make(1), ...`` joined by ``sep`` until ``size`` characters."""
    total, i = 0, 0
    while True:
        item = make(i)
        total += len(item) + len(sep)
        if total > size:
            return
        yield item
        i += 1


def hand_yaml(path: Path) -> None:
    # 10,000 questions (the most per bank), each with many short answers: MAX_DOCUMENT_VALUES values
    per = VALUES // 10_000 - 5
    answers = ", ".join(f"answer{j:04d}" for j in range(per))
    body = "".join(f"      - text: question {i}\n        answers: [{answers}]\n" for i in range(10_000))
    path.write_text("queries:\n  - id: q1\n    text: t\n    questions:\n" + body)


def hand_json(path: Path) -> None:
    per = VALUES // 10_000 - 3
    answers = json.dumps([f"answer{j:04d}" for j in range(per)])
    questions = ", ".join(f'{{"text": "question {i}", "answers": {answers}}}' for i in range(10_000))
    path.write_text('{"queries": [{"id": "q1", "text": "t", "questions": [' + questions + "]}]}")


def leaderboard(path: Path) -> None:
    path.write_text("{" + ", ".join(f'"run{i}": {i}' for i in range(VALUES // 2 - 10)) + "}")


def workbench_bank(path: Path) -> None:
    # 20 lines of MAX_TEST_POINTS_PER_BANK items: MAX_TEST_POINTS_PER_FILE test points, each line near MAX_LINE_BYTES
    per, lines = limits.MAX_TEST_POINTS_PER_BANK, limits.MAX_TEST_POINTS_PER_FILE // limits.MAX_TEST_POINTS_PER_BANK
    text = "t" * (LINE // per - 40)
    with path.open("w") as out:
        for q in range(lines):
            items = ", ".join(f'{{"nugget_text": "{i} {text}"}}' for i in range(per))
            out.write(f'{{"query_id": "q{q}", "query_text": "t", "items": [{items}]}}\n')


def paragraphs_dense(path: Path) -> None:
    # one line of MAX_LINE_BYTES: paragraphs with a ranking and an exam grade each (the published shape)
    def para(i: int) -> str:
        return (f'{{"paragraph_id": "p{i}", "text": "t{i}", "paragraph_data": {{"judgments": [], "rankings": '
                f'[{{"method": "m", "rank": {i}, "score": 1.0}}]}}, "exam_grades": [{{"answers": [["q1/a", "x"]], '
                f'"llm": "m", "self_ratings": [{{"question_id": "q1/a", "self_rating": 5}}]}}]}}')
    path.write_text('["q1", [' + ", ".join(_chunks(para, LINE)) + "]]\n")


def paragraphs_junk(path: Path) -> None:
    # one line of MAX_LINE_BYTES whose bulk is empty objects under a key nobody reads: the most objects per byte
    junk = ", ".join(_chunks(lambda _i: "{}", LINE - 100))
    path.write_text('["q1", [{"paragraph_id": "p1", "text": "t", "junk": [' + junk + "]}]]\n")


def paragraphs_long_passage(path: Path) -> None:
    path.write_text('["q1", [{"paragraph_id": "p1", "text": "' + "a" * (limits.MAX_PASSAGE_CHARS - 1) + '"}]]\n')


def collection_tsv(path: Path) -> None:
    # one passage of MAX_PASSAGE_CHARS
    path.write_text("p1\t" + "passage " * (limits.MAX_PASSAGE_CHARS // 8) + "\n")


def collection_jsonl(path: Path) -> None:
    # many short passages in lines of a few bytes each, 32 MiB in all (memory is per passage kept)
    with path.open("w") as out:
        for i in range(LINE // 30):
            out.write(f'{{"id": "p{i}", "text": "t{i}"}}\n')


def responses(path: Path) -> None:
    # one response of MAX_RESPONSE_CHARS in one-letter words: the most tokens to segment
    path.write_text('{"query_id": "q1", "run": "r", "response": "' + "a " * (limits.MAX_RESPONSE_CHARS // 2 - 1) + '"}\n')


def trec_run(path: Path) -> None:
    # a million ranking lines (no limit binds a run's length: memory grows with it, ~this per line)
    with path.open("w") as out:
        for q in range(1000):
            out.writelines(f"q{q} Q0 d{q}-{r} {r + 1} {1000 - r} run\n" for r in range(1000))


def queries_json(path: Path) -> None:
    path.write_text(json.dumps({f"q{i}": f"query text {i}" for i in range(limits.MAX_QUERIES_PER_FILE)}))


def report_json(path: Path) -> None:
    # a report-shaped file of MAX_FILE_BYTES: its bulk a list of small objects (refused by the schema after parsing)
    junk = ", ".join(_chunks(lambda i: f'{{"run": "r", "query_id": "q{i}"}}', limits.MAX_FILE_BYTES - 200))
    path.write_text('{"schema_version": "2.0", "per_query": [' + junk + "]}")


KINDS: dict[str, tuple[str, str, Callable[[Path], None]]] = {
    # kind: (file name, loader as module:function, writer)
    "hand-yaml": ("bank.yaml", "exam_harness.io.handbank:load_hand_bank", hand_yaml),
    "hand-json": ("bank.json", "exam_harness.io.handbank:load_hand_bank", hand_json),
    "leaderboard": ("official.json", "exam_harness.io.leaderboard:load_leaderboard", leaderboard),
    "workbench-bank": ("bank.jsonl", "exam_harness.io.workbench:load_workbench_bank", workbench_bank),
    "paragraphs-dense": ("graded.jsonl", "exam_harness.io.workbench:read_paragraph_file", paragraphs_dense),
    "paragraphs-junk": ("graded.jsonl", "exam_harness.io.workbench:read_paragraph_file", paragraphs_junk),
    "paragraphs-passage": ("graded.jsonl", "exam_harness.io.workbench:read_paragraph_file", paragraphs_long_passage),
    "collection-tsv": ("collection.tsv", "exam_harness.io.collection:read_collection_tsv", collection_tsv),
    "collection-jsonl": ("collection.jsonl", "exam_harness.io.collection:read_collection_jsonl", collection_jsonl),
    "responses": ("gen.responses.jsonl", "exam_harness.io.generated:read_responses", responses),
    "trec-run": ("system.run", "exam_harness.io.trec:read_trec_run", trec_run),
    "queries": ("queries.json", "exam_harness.io.queries:load_queries", queries_json),
    "report": ("report.json", "exam_harness.results.read:read_report", report_json),
}

_CHILD = """
import importlib, json, sys, time
from pathlib import Path
from exam_harness.core.errors import InputError
module, name = sys.argv[1].split(":")
load = getattr(importlib.import_module(module), name)
import numpy  # noqa: F401  (imported by the JSON depth check of long lines: counted with the interpreter)
def status_kib(field):
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(field + ":"))
with open("/proc/self/clear_refs", "w") as refs:  # restart the peak (VmHWM, ru_maxrss) from here
    refs.write("5")
before = status_kib("VmRSS")
started = time.perf_counter()
try:
    load(Path(sys.argv[2]))
    outcome = "loaded"
except InputError as err:
    outcome = "InputError: " + str(err)[-150:]
seconds = time.perf_counter() - started
grown = status_kib("VmHWM") - before
print(json.dumps({"outcome": outcome, "seconds": seconds, "grown_kib": grown, "base_kib": before}))
"""


def measure(kind: str, folder: Path) -> dict[str, object]:
    name, loader, write = KINDS[kind]
    path = folder / name
    write(path)
    size = path.stat().st_size
    done = subprocess.run([sys.executable, "-c", _CHILD, loader, str(path)], cwd=ROOT, capture_output=True, text=True,
                          check=False)
    path.unlink()
    if done.returncode != 0:
        return {"kind": kind, "size": size, "outcome": "crashed: " + done.stderr[-300:]}
    return {"kind": kind, "size": size, **json.loads(done.stdout)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kind", action="append", choices=sorted(KINDS), help="only this kind (repeatable)")
    args = parser.parse_args(argv)
    print(f"{'kind':<20} {'input MiB':>9} {'seconds':>8} {'peak +MiB':>9} {'per byte':>8}  outcome", flush=True)
    with tempfile.TemporaryDirectory() as folder:
        for kind in args.kind or list(KINDS):
            row = measure(kind, Path(folder))
            size = int(row["size"])  # type: ignore[call-overload]
            grown = int(row.get("grown_kib", 0)) * 1024  # type: ignore[call-overload]
            print(f"{kind:<20} {size / MIB:>9.1f} {float(row.get('seconds', 0)):>8.2f} "  # type: ignore[arg-type]
                  f"{grown / MIB:>9.0f} {grown / max(size, 1):>8.1f}  {row['outcome']}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
