"""The progress bar shared by the pytest session and the CLI commands (grading pairs, calling systems)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any


class GradingProgress:
    """A rich progress bar on stderr (``start(total)`` / ``advance(n)``), or nothing when disabled.

    Under pytest, pass the capture manager: the bar is drawn with output capture suspended, the way
    pytest itself suspends capture for a debugger.
    """

    def __init__(self, label: str, enabled: bool = True, *, capman: Any = None, unit: str = "pairs") -> None:
        self.label = label
        self.unit = unit
        self.enabled = enabled
        self.capman = capman
        self._bar: Any = None
        self._task: Any = None
        self._suspended: Any = None
        self.status: Callable[[], str] | None = None  # said beside the label after each advance

    def __enter__(self) -> GradingProgress:
        return self

    def start(self, total: int) -> None:
        if not self.enabled or total == 0:
            return
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        if self.capman is not None:
            self._suspended = self.capman.global_and_fixture_disabled()
            self._suspended.__enter__()
        self._bar = Progress(
            TextColumn("{task.description}", style="bold", markup=False),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn(self.unit),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=Console(file=sys.stderr),
        )
        self._bar.start()
        self._task = self._bar.add_task(self.label, total=total)

    def advance(self, n: int) -> None:
        if self._bar is not None:
            self._bar.advance(self._task, n)
            if self.status is not None:  # e.g. a paced server's rate and limit (llm/pacing.py)
                self._bar.update(self._task, description=f"{self.label} ({self.status()})")

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()
        if self._suspended is not None:
            self._suspended.__exit__(None, None, None)
