"""The grading pass (passes.py) and what serves it: one set-up for both front ends (setup.py), the grade
cache (cache.py), batch jobs (batches.py) and the merge of shards' caches (merge.py).

``exam_harness.grading`` was the module passes.py is now: its names are still read from here, with a
DeprecationWarning (issue 36).
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    import importlib
    import warnings

    if name.startswith("__"):
        raise AttributeError(name)
    passes = importlib.import_module("exam_harness.grading.passes")
    if not hasattr(passes, name):
        raise AttributeError(f"module 'exam_harness.grading' has no attribute {name!r}")
    warnings.warn(f"exam_harness.grading.{name} moved to exam_harness.grading.passes.{name}", DeprecationWarning,
                  stacklevel=2)
    return getattr(passes, name)
