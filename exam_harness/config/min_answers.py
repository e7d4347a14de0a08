"""``--min-answers M ...`` of ``evaluate`` (and of the analysis that takes it too): the "min answers = m" views of
the grades against the judgments (a passage relevant at tau when at least M test points reach tau); ``evaluate``
hands the values to its sections as ``Scored.min_answers``."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from exam_harness.config.options import Argument, integer
from exam_harness.core.errors import ConfigError

DEFAULT_MIN_ANSWERS = (1, 2, 5)


def add_min_answers_argument(parser: argparse.ArgumentParser, default: Sequence[int] | None) -> None:
    """``--min-answers M ...``; bare ``--min-answers`` means 1 2 5."""
    when = "default: 1 2 5" if default else "bare: 1 2 5; default: none"
    # min_answers_of says a value below 1 is no count of test points
    Argument("min-answers", "Agreement with the judgments when a passage is relevant at tau if at least M test points "
             "reach tau (its label: the M-th highest grade), with per-row kappa and the merged 3-way table; one view "
             f"per M ({when}).", integer(), nargs="*", default=default, metavar="M").add_to(parser)


def min_answers_of(value: Sequence[int] | None) -> tuple[int, ...]:
    """The m values asked for (a bare option: 1 2 5); each must be a positive integer."""
    if value is None:
        return ()
    ms = tuple(value) or DEFAULT_MIN_ANSWERS
    bad = [m for m in ms if m < 1]
    if bad:
        raise ConfigError(f"--min-answers takes positive integers (test points per passage), got {bad[0]}")
    return ms
