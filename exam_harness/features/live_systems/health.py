"""The health of each declared system in a session: stale or not (and the covered files that changed),
queries its recording lacks, failures, answers replayed versus called, under which stale policy.

:func:`system_health` is pure: it takes what the systems pass found and returns the
:class:`SystemHealth` the terminal line, the verdict's ``exam-stale`` case and the result document show.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field

from exam_harness.core.errors import ConfigError
from exam_harness.features.live_systems.options import STALE_POLICIES


def ci(env: Mapping[str, str] = os.environ) -> bool:
    return env.get("CI", "").strip().lower() in ("true", "1", "yes")


def resolve_stale(option: str | None, env: Mapping[str, str] = os.environ) -> str:
    """``--exam-stale`` when given, else ``fail`` under ``CI=true``, else ``record``."""
    if option:
        if option not in STALE_POLICIES:
            raise ConfigError(f"--exam-stale must be one of {', '.join(STALE_POLICIES)}, got {option!r}")
        return option
    return "fail" if ci(env) else "record"


def policy_text(policy: str, option: str | None, env: Mapping[str, str] = os.environ) -> str:
    """The policy and where it came from, as every output says it: ``stale=fail (default under CI=true)``."""
    origin = "--exam-stale" if option else ("default under CI=true" if ci(env) else "default outside CI")
    return f"stale={policy} ({origin})"


class SystemHealth(BaseModel):
    """One declared system in one session."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    system: str
    mode: str  # once, replay, record, live
    stale_policy: str  # warn, fail, record
    stale_queries: list[str] = Field(default_factory=list)  # answered by another version of the system
    files_changed: list[str] = Field(default_factory=list)  # covered labels that changed: "module rag.py"
    text_changed: list[str] = Field(default_factory=list)  # queries whose text changed since recorded
    missing_queries: list[str] = Field(default_factory=list)  # neither recorded nor answered now
    failed_queries: list[str] = Field(default_factory=list)  # the system failed on them this session
    kept_after_failure: list[str] = Field(default_factory=list)  # failed now, their recorded answer kept
    empty_answers: list[str] = Field(default_factory=list)  # answered with no text (or no passage text): score 0
    replayed: int = 0  # answers read from the recording
    called: int = 0  # calls made this session
    resumed: int = 0  # answers taken from a journal a cut-short session left

    @property
    def stale(self) -> bool:
        return bool(self.stale_queries or self.text_changed)

    @property
    def fails_session(self) -> bool:
        """A stale recording under ``stale=fail``."""
        return self.stale and self.stale_policy == "fail"

    def stale_message(self) -> str:
        parts = []
        if self.stale_queries:
            files = f" (changed: {', '.join(self.files_changed[:8])}" + (
                f" and {len(self.files_changed) - 8} more)" if len(self.files_changed) > 8 else ")") \
                if self.files_changed else ""
            parts.append(f"{len(self.stale_queries)} of its recorded answers were made by another version of the "
                         f"system{files}")
        if self.text_changed:
            parts.append(f"queries {', '.join(self.text_changed[:10])} changed their text since recorded")
        return f"stale recording: system {self.system!r}: " + "; ".join(parts)

    def empty_message(self) -> str:
        ids = self.empty_answers
        shown = ", ".join(ids[:10]) + (f" and {len(ids) - 10} more" if len(ids) > 10 else "")
        return (f"system {self.system!r} gave an empty answer for {len(ids)} quer{'y' if len(ids) == 1 else 'ies'} "
                f"({shown}); recorded as given, each scores 0 (nothing to grade)")


def system_health(
    system: str, mode: str, policy: str, *, answered: Collection[str], stale: Collection[str],
    text_changed: Sequence[str], files_changed: Sequence[str], wanted: Sequence[str], failed: Sequence[str],
    kept: Sequence[str], called: int, replayed: int, resumed: int, empty: Sequence[str] = (),
) -> SystemHealth:
    """The health of one system: ``answered`` are the queries the recording answers (after this session),
    ``stale`` those of them another version of the system answered (recording.Recording.current); ``wanted``
    the queries asked of it; ``empty`` the queries whose recorded answer is empty."""
    asked = set(wanted)
    stale_queries = sorted(set(stale) & asked)
    answered_now = set(answered)
    return SystemHealth(
        system=system, mode=mode, stale_policy=policy, stale_queries=stale_queries,
        files_changed=list(files_changed) if stale_queries else [], text_changed=sorted(text_changed),
        missing_queries=sorted(q for q in wanted if q not in answered_now),
        failed_queries=sorted(failed), kept_after_failure=sorted(kept), empty_answers=sorted(set(empty) & set(wanted)),
        replayed=replayed, called=called, resumed=resumed,
    )


class LiveSystems(BaseModel):
    """The declared systems of one session: how they were asked (mode), under which stale policy (and where
    it came from), the calls made and each system's health."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: str  # once, replay, record, live
    policy: str  # policy_text(): "stale=fail (default under CI=true)"
    calls: int
    systems: list[SystemHealth]

    @property
    def replayed(self) -> int:
        return sum(h.replayed for h in self.systems)

    @property
    def stale(self) -> list[str]:
        return [h.system for h in self.systems if h.stale]

    def summary(self) -> str:
        """The line every output starts the systems' part with."""
        stale = self.stale
        return (f"systems ({self.mode}, {self.policy}): {self.calls} calls, {self.replayed} answers replayed"
                + (f"; stale: {', '.join(stale)}" if stale else ""))
