"""The live-systems section: each declared system's health in the session (stale recordings with the
covered files that changed, the ``--exam-stale`` policy and where it came from, queries its recording
lacks, failures, empty answers, answers replayed versus called; systems/health.py). A session without declared
systems, and ``exam-harness evaluate``, have no such section."""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pydantic import BaseModel

from exam_harness.systems.health import LiveSystems, SystemHealth

if TYPE_CHECKING:
    from exam_harness.results.scored import Scored


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
        return scored.systems if scored.systems is not None and scored.systems.systems else None

    def terminal(self, content: LiveSystems) -> list[str]:
        # the stale recordings and failures are said as they happen (pytest_plugins/systems.py)
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
