"""What every exam case shares: the item base, the outcomes a case raises, and how a failure reads.

Below both kinds of case (:mod:`.collection`'s per test point, :mod:`.query_cases`' per query), so that
collection can make either without the two importing each other.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from exam_harness.core.models import QueryBank
from exam_harness.pytest_plugins.systems import SYSTEM_FAILED, system_failure


class ExamMissed(Exception):
    """The run's top-k has no passage reaching the minimum grade on this test point."""


class ExamRequiredMissed(Exception):
    """A required test point (e.g. a vital nugget) was missed: this fails the case."""


class ExamItem(pytest.Item):
    """An exam case: a bank's test point(s) put to one run (:class:`ExamCase`, or a query case)."""

    bank: QueryBank
    run: str


def system_failed(case: ExamItem) -> None:
    """A declared system that failed on the case's query: the case is an error with the system's message."""
    failure = system_failure(case.config, case.run, case.bank.query.id)
    if failure is not None:
        case.user_properties.append((SYSTEM_FAILED, case.run))  # its error is said once per system
        pytest.fail(failure, pytrace=False)


def withheld(exc: BaseException, redact: Callable[[str], str], where: str) -> str:
    """An unexpected error of a secret exam in one line: its type and redacted message, no traceback
    (pytest's traceback, and with ``-l`` its local variables, would print the secret bank)."""
    return (f"{type(exc).__name__} while {where}: {redact(str(exc))} (traceback withheld: the exam has secret "
            "banks; reproduce without them, or with copies marked secret: false, to see it)")
