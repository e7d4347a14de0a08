"""Graders the Ray engine's tests build on Ray workers (importable there: the workers' path holds the repository).

``CountingGrader``: grade = crc32 of the passage and test point texts mod 6, with the worker's process id in the
details. ``KillOnceGrader``: the same, but the first worker to grade a batch kills its own process first (SIGKILL,
as the out-of-memory killer does), once per marker file, which holds the killed process's id.
"""

from __future__ import annotations

import os
import signal
import zlib
from collections.abc import Sequence
from pathlib import Path

from exam_harness.core.models import Grade, GraderSpec
from exam_harness.graders.base import Grader, GraderConfig, GradeResult, GradingRequest


def expected_grade(request: GradingRequest) -> int:
    return zlib.crc32(f"{request.passage.text}\x00{request.test_point.text}".encode()) % 6


class CountingGrader(Grader):
    name = "counting"

    def __init__(self, config: GraderConfig) -> None:
        self.config = config

    def spec(self) -> GraderSpec:
        return GraderSpec(name=self.name, version="1", default_min_grade=3)

    def grade_batch(self, requests: Sequence[GradingRequest]) -> list[GradeResult]:
        return [Grade(grade=expected_grade(r), grader=self.name, raw_response=str(expected_grade(r)),
                      details={"pid": os.getpid()}) for r in requests]


class KillOnceGrader(CountingGrader):
    name = "kill-once"

    def grade_batch(self, requests: Sequence[GradingRequest]) -> list[GradeResult]:
        marker = Path(self.config.options["marker"])
        try:
            with marker.open("x") as out:  # the first batch of the first worker, once
                out.write(str(os.getpid()))
        except FileExistsError:
            return super().grade_batch(requests)
        os.kill(os.getpid(), signal.SIGKILL)
        raise AssertionError("unreachable")
