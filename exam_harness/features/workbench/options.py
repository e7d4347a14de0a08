"""The Workbench feature's option, declared through ``pytest_exam_add_options`` (plugin.py): ``evaluate
--export-workbench FILE``."""

from __future__ import annotations

from pathlib import Path

from exam_harness.api import FeatureOption, InputError, feature_option
from exam_harness.config.options import EVALUATE

EXPORT: FeatureOption[Path | None] = feature_option(
    "export-workbench", None, "Write passages, runs, judgments and grades as a Workbench paragraph file "
    "(.jsonl[.gz]).", Path, group=EVALUATE, path=True, fronts=("cli",), metavar="FILE")


def check_export(target: Path) -> None:
    """An InputError for a file name a paragraph file cannot be written as (checked before any grading)."""
    if not (target.name.endswith(".jsonl") or target.name.endswith(".jsonl.gz")):
        raise InputError("a Workbench paragraph file must be written to .jsonl or .jsonl.gz", path=target,
                         field="file name", value=target.name, expected="NAME.jsonl or NAME.jsonl.gz")
