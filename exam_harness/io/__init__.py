"""Loaders and writers of the harness's inputs: banks, runs, collections, responses, leaderboards.

Every loader returns the pydantic models of :mod:`exam_harness.core.models` and reports bad input as an
:class:`~exam_harness.core.errors.InputError` naming the file, line, field, bad value and what is valid.
"""

from __future__ import annotations

from exam_harness.io.banks import is_bank_file, iter_bank_files, load_bank
from exam_harness.io.generated import SEGMENT_TOKENS, segment_id, segment_response
from exam_harness.io.handbank import facet_query_text, write_bank_yaml
from exam_harness.io.leaderboard import load_leaderboard
from exam_harness.io.runs import RECOGNISED_FORMS, LoadedRuns, load_runs, run_files
from exam_harness.io.workbench import direct_grade_id, write_workbench_bank

__all__ = [
    "RECOGNISED_FORMS",
    "SEGMENT_TOKENS",
    "LoadedRuns",
    "direct_grade_id",
    "facet_query_text",
    "is_bank_file",
    "iter_bank_files",
    "load_bank",
    "load_leaderboard",
    "load_runs",
    "run_files",
    "segment_id",
    "segment_response",
    "write_bank_yaml",
    "write_workbench_bank",
]
