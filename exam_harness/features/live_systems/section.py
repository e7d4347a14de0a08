"""The live-systems section: each declared system's health in the session (stale recordings with the
covered files that changed, the ``--exam-stale`` policy and where it came from, queries its recording
lacks, failures, empty answers, answers replayed versus called; health.py), read from the session's systems
(the scoring input :data:`~exam_harness.features.live_systems.inputs.SESSION`). A session without declared
systems, and ``exam-harness evaluate``, have no such section. A stale recording under ``stale=fail`` is the
verdict's ``exam-stale`` check, decided from this section (:func:`stale_results`), so a saved report gives the
session's verdict too."""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pydantic import BaseModel

from exam_harness.api import GateResult
from exam_harness.features.live_systems.health import LiveSystems, SystemHealth
from exam_harness.features.live_systems.inputs import SESSION

if TYPE_CHECKING:
    from exam_harness.api import Scored


def _listed(ids: list[str], most: int = 10) -> str:
    return ", ".join(ids[:most]) + (f" and {len(ids) - most} more" if len(ids) > most else "")


def health_lines(health: SystemHealth) -> list[str]:
    """What went wrong with one system, a line each (none for a healthy one)."""
    lines = [health.stale_message()] if health.stale else []
    name = repr(health.system)
    if health.missing_queries:
        lines.append(f"system {name}: no answer for queries {_listed(health.missing_queries)}")
    if health.failed_queries:
        lines.append(f"system {name}: failed on queries {_listed(health.failed_queries)}")
    if health.empty_answers:
        lines.append(health.empty_message())
    if health.kept_after_failure:
        lines.append(f"system {name}: failed now on queries {_listed(health.kept_after_failure)}, their recorded "
                     "answers kept")
    return lines


def _row(h: SystemHealth) -> str:
    e = html.escape
    cells = [h.system, h.mode, "yes" if h.stale else "no", str(h.replayed), str(h.called), str(h.resumed),
             _listed(h.missing_queries), _listed(h.failed_queries)]
    return "<tr>" + "".join(f"<td>{e(c)}</td>" for c in cells) + "</tr>"


@dataclass(frozen=True)
class LiveSystemsSection:
    name: str = "live-systems"
    title: str = "Live systems"
    model: type[BaseModel] = LiveSystems

    def compute(self, scored: Scored) -> LiveSystems | None:
        session = scored.input(SESSION)
        health = session.health() if session is not None else None
        return health if health is not None and health.systems else None

    def terminal(self, content: LiveSystems) -> list[str]:
        # the stale recordings and failures are said as they happen (pytest_session.py)
        return [content.summary()]

    def markdown(self, content: LiveSystems, escape: Callable[[str], str]) -> str:
        lines = [content.summary(), *(line for h in content.systems for line in health_lines(h))]
        return "\n\n".join(escape(line) for line in lines)

    def html(self, content: LiveSystems) -> str:
        e = html.escape
        notes = "".join(f'<p class="note">{e(line)}</p>'
                        for line in (content.summary(), *(x for h in content.systems for x in health_lines(h))))
        head = "".join(f"<th>{c}</th>" for c in ("system", "mode", "stale", "replayed", "called", "resumed",
                                                  "missing queries", "failed queries"))
        rows = "".join(_row(h) for h in content.systems)
        return (f'<section id="live-systems"><h2>Live systems</h2>{notes}<div class="scroll"><table><thead><tr>'
                f"{head}</tr></thead><tbody>{rows}</tbody></table></div></section>")


SECTION = LiveSystemsSection()


def stale_results(systems: object) -> list[GateResult]:
    """A failed ``exam-stale`` check per declared system whose recording is stale under ``stale=fail``, from
    the document's live-systems section (``LiveSystems``)."""
    if not isinstance(systems, LiveSystems):
        return []
    return [GateResult(gate="exam-stale", run=health.system, passed=False,
                       message=f"{health.stale_message()}; {systems.policy}: record it again (exam-harness record, "
                               "or a session outside CI) and commit the recording")
            for health in systems.systems if health.fails_session]
