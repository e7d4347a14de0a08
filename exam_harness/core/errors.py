"""Errors that describe bad user input precisely enough to fix it without a traceback."""

from __future__ import annotations

from pathlib import Path

from exam_harness.core.paths import shown_path


class ExamError(Exception):
    """Base class of every error exam-harness raises on purpose."""


class InputError(ExamError):
    """Bad user input: names the file, line, field, the bad value and what would be valid."""

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        line: int | None = None,
        field: str | None = None,
        value: object = None,
        expected: str | None = None,
    ) -> None:
        self.path = str(path) if path is not None else None
        self.line = line
        self.field = field
        self.value = value
        self.expected = expected
        self.message = message
        super().__init__(self.format())

    def relative_to(self, base: str | Path) -> InputError:
        """The same error with its path shown relative to ``base`` when it lies below it."""
        if self.path is not None:
            self.path = shown_path(self.path, base)  # a path outside ``base`` stays as it is
            self.args = (self.format(),)
        return self

    def __str__(self) -> str:
        return self.format()

    def format(self) -> str:
        where = ""
        if self.path is not None:
            where = self.path if self.line is None else f"{self.path}:{self.line}"
            where += ": "
        text = where + self.message
        if self.field is not None:
            text += f" [field {self.field!r}"
            if self.value is not None:
                shown = repr(self.value)
                text += f", value {shown[:80] + '...' if len(shown) > 80 else shown}"
            text += "]"
        if self.expected:
            text += f"; expected {self.expected}"
        return text


class GradingError(ExamError):
    """A grader could not produce a grade for a pair; the pair is reported, never given a grade."""


class ConfigError(ExamError):
    """An option, ini setting or registry name is invalid."""


# Exit status of a session or command stopped by its grading infrastructure (a grading server that died
# or cannot be reached): "retry later", apart from usage errors (4). 75 is EX_TEMPFAIL of sysexits.h;
# pytest's own statuses end at 6. docs/exit-status.md lists every status.
INFRASTRUCTURE_FAILED = 75


class InfrastructureError(ExamError):
    """The grading infrastructure failed (a server died or cannot be reached), not the user's input:
    the same command may succeed later. Exit status :data:`INFRASTRUCTURE_FAILED`."""


class OutputError(ConfigError):
    """An output cannot be written where it was asked for (a folder, a socket, a FIFO nobody reads, a
    folder the harness does not own); raised before anything there is changed."""


class GradingAborted(InfrastructureError):
    """Grading stopped early because it cannot go on (e.g. the grading server stopped answering).

    The grades made before the stop are in the cache; ``graded`` and ``remaining`` say how far it got.
    """

    def __init__(self, reason: str, *, graded: int, remaining: int) -> None:
        super().__init__(
            f"grading stopped: {reason}; {graded} grades made before the stop are kept in the cache, "
            f"{remaining} pairs were not graded (rerun once the cause is fixed: only those are graded)")
        self.reason = reason
        self.graded = graded
        self.remaining = remaining
