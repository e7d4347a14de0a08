"""The significance feature's scoring input: what ``--baseline`` asks of ``evaluate``'s document."""

from __future__ import annotations

from dataclasses import dataclass

from exam_harness.api import InputKey


@dataclass(frozen=True)
class BaselineTest:
    """``--baseline``: every run compared with the baseline run per measure (``--significance`` test)."""

    baseline: str
    method: str
    alpha: float
    resamples: int
    seed: int


BASELINE: InputKey[BaselineTest] = InputKey("significance: --baseline")
