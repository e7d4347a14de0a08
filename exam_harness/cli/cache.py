"""``exam-harness cache merge A.sqlite B.sqlite ... -o C.sqlite``: the shards' grade caches as one
(``--exam-shard``, docs/shards.md); conflicting grades for one key are refused with both files named."""

from __future__ import annotations

import argparse
from pathlib import Path

from exam_harness.config.options import Argument
from exam_harness.grading.merge import merge_caches


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser("cache", help="Work on grade caches: merge the shards' caches into one.",
                                   description="Work on grade cache files.")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    merge = actions.add_parser("merge", help="Merge grade caches (e.g. of --exam-shard sessions) into a new one.",
                               description="Merge grade caches into a new cache file; a key with different grades in "
                               "two inputs is refused, naming both.")
    Argument("inputs", "Grade cache files to merge.", Path, nargs="+", metavar="CACHE", positional=True).add_to(merge)
    Argument("output", "The merged cache file (written when complete).", Path, required=True, metavar="OUT",
             short="o").add_to(merge)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    written, duplicates = merge_caches(args.inputs, args.output)
    print(f"merged {len(args.inputs)} caches into {args.output}: {written} grades ({duplicates} held by more than "
          "one input, with the same grade)")
    return 0
