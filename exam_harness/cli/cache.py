"""``exam-harness cache merge A.sqlite B.sqlite ... -o C.sqlite``: the shards' grade caches as one
(``--exam-shard``, docs/shards.md), merged into the output (its grades kept; anything but a grade cache there
is refused); conflicting grades for one key are refused with both files named, damaged rows left out and said."""

from __future__ import annotations

import argparse
from pathlib import Path

from exam_harness.config.options import Argument
from exam_harness.grading.merge import merge_caches


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser("cache", help="Work on grade caches: merge the shards' caches into one.",
                                   description="Work on grade cache files.")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    merge = actions.add_parser("merge", help="Merge grade caches (e.g. of --exam-shard sessions) into one.",
                               description="Merge grade caches into the output cache (created when missing; a grade "
                               "cache there is merged into, its grades kept; anything else there is refused); a key "
                               "with different grades in two inputs is refused, naming both; damaged rows are left "
                               "out and named. Merges into one folder take turns.")
    Argument("inputs", "Grade cache files to merge.", Path, nargs="+", metavar="CACHE", positional=True).add_to(merge)
    Argument("output", "The merged cache file: created, or a grade cache merged into (written when complete).",
             Path, required=True, metavar="OUT", short="o").add_to(merge)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    done = merge_caches(args.inputs, args.output)
    kept = f", {done.kept} of them held by {args.output} before" if done.kept else ""
    damaged = f"; {len(done.left_out)} damaged rows left out" if done.left_out else ""
    print(f"merged {len(args.inputs)} caches into {args.output}: {done.written} grades{kept} ({done.duplicates} held "
          f"by more than one input, with the same grade){damaged}")
    return 0
