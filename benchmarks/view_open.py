"""Seconds ``exam-harness view`` takes to open DL19's evaluation document (issue 40: under 2 s on 2 cores).

    .venv/bin/python benchmarks/view_open.py                     # evaluate DL19's published grades, then open it
    .venv/bin/python benchmarks/view_open.py --document dl19.json --repeat 5
    .venv/bin/python benchmarks/view_open.py --no-per-query      # the document evaluate writes without --per-query

The document: ``exam-harness evaluate`` on DL19's published grades (``../shared/data/dl19``, the recipe of
docs/reproduction.md: ``--official``, ``--min-grade 3 4 5``) with ``--per-query`` (37 runs, 43 queries, 63
measures; 1,591 per-query rows), written once into a temporary folder unless ``--document`` names one.

Each repetition is a fresh process, as a user's command is: the interpreter starts, imports the command, builds
the command line's parser for ``view`` with the registries (plugins, the folder's conftest.py), reads and validates the document through the project's
reader, builds the viewer and draws the leaderboard (37 runs x 63 measures) at 80x24 with Textual's headless
driver (the compositor a terminal gets, without the terminal); then the first run's queries (43 queries x 63
measures) are drawn. The headline (``open``: what a user waits for) is the wall time from the process's start to
the leaderboard drawn; the process also prints its stages (seconds since its first import). Prints ``view open: <best> s (median <m> s) over <n> processes; first run's
queries <d> s`` and nothing is asserted. Take the figure on an idle machine: on a loaded one it is noise.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DL19 = REPO / ".." / "shared" / "data" / "dl19"
SIZE = (80, 24)


def build_document(out: Path, per_query: bool) -> Path:
    from exam_harness.cli import main

    args = ["evaluate", str(DL19 / "dl19-graded-flan-t5-large-selfrating.jsonl.gz"), "--official",
            str(DL19 / "official-leaderboard.json"), "--min-grade", "3", "4", "5", "--json", str(out)]
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()):  # evaluate's tables: not what is measured
        status = main([*args, "--per-query"] if per_query else args)
    if status != 0:
        raise SystemExit("evaluate failed")
    return out


def open_once(document: Path) -> None:
    """One opening in this process (``--inner``): prints its stages as JSON on the last line."""
    import asyncio

    started = time.perf_counter()
    from exam_harness.cli import build_parser
    from exam_harness.features.view.app import ViewerApp
    from exam_harness.features.view.document import Viewed, open_document
    from exam_harness.features.view.pairs import host_lookups, pair_source

    stages = {"imports": time.perf_counter() - started}
    build_parser(["view", str(document)])  # the command line's plugins and parser, as `exam-harness view` builds them
    lookups = host_lookups()  # what the command looks pairs up with (command.py)
    stages["parser and registries"] = time.perf_counter() - started
    opened = open_document(document)
    viewed = Viewed(opened)
    stages["read"] = time.perf_counter() - started

    async def run() -> None:
        app = ViewerApp(viewed, pair_source(document, opened.document, None, lookups))
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            table = app.screen.query_one("#leaderboard")
            assert table.row_count == len(viewed.runs())  # type: ignore[attr-defined]
            stages["leaderboard drawn"] = time.perf_counter() - started
            stages["drawn at"] = time.time()  # the outer process times its start to here
            before = time.perf_counter()
            await pilot.press("enter")
            await pilot.pause()
            stages["first run's queries"] = time.perf_counter() - before

    asyncio.run(run())
    print(json.dumps(stages))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--document", type=Path, help="an evaluate --json document (default: DL19's, built now)")
    parser.add_argument("--repeat", type=int, default=3, help="processes to time (default: 3)")
    parser.add_argument("--no-per-query", action="store_true", help="build the document without --per-query")
    parser.add_argument("--inner", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inner is not None:
        open_once(args.inner)
        return
    with tempfile.TemporaryDirectory() as folder:
        document = args.document or build_document(Path(folder) / "dl19.json", not args.no_per_query)
        from exam_harness.results.document import read_document

        held = read_document(document)
        print(f"document: {document} ({document.stat().st_size / 2**20:.1f} MiB): {len(held.systems)} runs, "
              f"{len(held.measures)} measures, {len(held.per_query)} per-query rows")
        walls, drills = [], []
        for i in range(args.repeat):
            began = time.time()
            done = subprocess.run([sys.executable, __file__, "--inner", str(document)], capture_output=True,
                                  text=True, check=False)
            if done.returncode != 0:
                raise SystemExit(done.stderr)
            stages = json.loads(done.stdout.strip().splitlines()[-1])
            wall = stages.pop("drawn at") - began  # from the process's start to the leaderboard drawn
            walls.append(wall)
            drills.append(stages["first run's queries"])
            shown = ", ".join(f"{name} {value:.2f}" for name, value in stages.items())
            print(f"  process {i + 1}: leaderboard drawn {wall:.2f} s after the process started (in it: {shown})")
        print(f"view open: {min(walls):.2f} s (median {statistics.median(walls):.2f} s) over {len(walls)} processes; "
              f"first run's queries {statistics.median(drills):.2f} s")


if __name__ == "__main__":
    main()
