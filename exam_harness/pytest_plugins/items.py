"""What every exam case shares: the item base, the outcomes a case raises, and how a failure reads.

Below both kinds of case (:mod:`.collection`'s per test point, :mod:`.query_cases`' per query), so that
collection can make either without the two importing each other.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from exam_harness.core.models import QueryBank


class ExamMissed(Exception):
    """The run's top-k has no passage reaching the minimum grade on this test point."""


class ExamRequiredMissed(Exception):
    """A required test point (e.g. a vital nugget) was missed: this fails the case."""


class ExamItem(pytest.Item):
    """An exam case: a bank's test point(s) put to one run (:class:`ExamCase`, or a query case)."""

    bank: QueryBank
    run: str


def case_error(case: ExamItem) -> None:
    """A feature that says the case errs before its verdict is read (hook ``pytest_exam_case_error``: a declared
    system failed on the case's query): the case is an error with the feature's message."""
    failure = case.config.hook.pytest_exam_case_error(item=case, run=case.run, query_id=case.bank.query.id)
    if failure is not None:
        pytest.fail(failure, pytrace=False)


def withheld(exc: BaseException, redact: Callable[[str], str], where: str) -> str:
    """An unexpected error of a secret exam in one line: its type and redacted message, no traceback
    (pytest's traceback, and with ``-l`` its local variables, would print the secret bank)."""
    return (f"{type(exc).__name__} while {where}: {redact(str(exc))} (traceback withheld: the exam has secret "
            "banks; reproduce without them, or with copies marked secret: false, to see it)")
