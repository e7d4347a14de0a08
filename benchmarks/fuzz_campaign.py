"""A long fuzz campaign over every loader: the tests of tests/io/test_fuzz_loaders.py, "campaign" profile.

    .venv/bin/python benchmarks/fuzz_campaign.py                          # 100,000 examples per loader
    .venv/bin/python benchmarks/fuzz_campaign.py --examples 10000 --loader trec-run --loader qrels

Each loader is fed random structure-aware and raw inputs (see that module); a call must end in a
result or an InputError. Prints per loader the examples run (shrinking included), the failures found
(each with the input hypothesis shrank it to) and the seconds taken; exits 1 if any loader failed.
The CI profile of the same tests runs a fixed sample of 100 examples per loader.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _failures(exc: BaseException) -> list[BaseException]:
    """The distinct failures hypothesis reports: one exception, or a group of them."""
    group = getattr(exc, "exceptions", None)  # an ExceptionGroup (Python 3.11+ builtin, backported before)
    if isinstance(group, (list, tuple)):
        return [leaf for inner in group for leaf in _failures(inner)]
    return [exc]


def _describe(exc: BaseException) -> str:
    notes = "\n".join(getattr(exc, "__notes__", []))
    return f"{type(exc).__name__}: {str(exc)[:300]}\n{notes[:2000]}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", type=int, default=100_000, help="examples per loader (default 100,000)")
    parser.add_argument("--loader", action="append", help="only this loader (repeatable; default: all)")
    args = parser.parse_args(argv)
    os.environ["EXAM_FUZZ_PROFILE"] = "campaign"
    os.environ["EXAM_FUZZ_EXAMPLES"] = str(args.examples)
    sys.path.insert(0, str(ROOT))
    from tests import test_fuzz_loaders as fuzz

    names = args.loader or list(fuzz.FUZZ_TESTS)
    unknown = sorted(set(names) - set(fuzz.FUZZ_TESTS))
    if unknown:
        parser.error(f"unknown loader {unknown}; known: {', '.join(fuzz.FUZZ_TESTS)}")
    print(f"{'loader':<18} {'examples':>10} {'failures':>9} {'seconds':>9}", flush=True)
    failed = 0
    for name in names:
        started = time.perf_counter()
        before = fuzz.EXAMPLES[name]
        found: list[BaseException] = []
        try:
            fuzz.FUZZ_TESTS[name]()
        except Exception as exc:  # a failure of the loader under test, reported below
            found = _failures(exc)
        seconds = time.perf_counter() - started
        print(f"{name:<18} {fuzz.EXAMPLES[name] - before:>10,} {len(found):>9} {seconds:>9.1f}", flush=True)
        for exc in found:
            print("    " + _describe(exc).replace("\n", "\n    "), flush=True)
        failed += len(found)
    print(f"total failures: {failed}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
