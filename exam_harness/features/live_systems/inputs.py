"""What a pytest session hands the live-systems feature's sections and hooks: its declared systems, read once they
were called (set at configure as a scoring input, ``scored.input(SESSION)``; ``evaluate`` has none)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from exam_harness.api import InputKey

if TYPE_CHECKING:
    from exam_harness.features.live_systems.health import LiveSystems


class SessionSystems(Protocol):
    """The session's declared systems (pytest_session.py's ``ExamSystems``)."""

    def health(self) -> LiveSystems | None:
        """Each declared system's health for the live-systems section (None: no system was asked)."""

    def unanswered(self) -> dict[str, set[str]]:
        """Run -> the queries its system failed on in this session (their scores count them as not covered)."""


SESSION: InputKey[SessionSystems] = InputKey("live systems: the session's declared systems")
