"""Summary statistics over per-query scores."""

from __future__ import annotations

import math
from collections.abc import Iterable
from itertools import repeat
from operator import sub


def mean_stderr(values: Iterable[float]) -> tuple[float, float]:
    """Mean and standard error (sample stdev / sqrt(n), stdev with n-1).

    n < 2 gives a standard error of 0.0; no values give (0.0, 0.0),
    so an empty selection reads as "nothing scored" rather than crashing a report.
    """
    data = list(map(float, values))
    n = len(data)
    if n == 0:
        return 0.0, 0.0
    mean = math.fsum(data) / n
    if n < 2:
        return mean, 0.0
    # Floating-point sum of squares: statistics.stdev works in exact fractions and is ~100x slower.
    variance = math.fsum(map(pow, map(sub, data, repeat(mean)), repeat(2))) / (n - 1)  # (v - mean) ** 2, in C
    return mean, math.sqrt(variance) / math.sqrt(n)
