"""The system-costs section: per run recorded by a declared live system, its latency (p50 and p95 over
the recorded queries), the tokens and the cost its answers reported (``Answer(tokens=..., cost=...)``),
read from the manifest ``<run>.system.json`` beside the run (recording.py). Runs without a
manifest have no row; a document without any has no such section. ``--exam-fail-under`` gates these
figures by name (``latency-p95``, ``cost``, ...: figures.py, the feature's gate figures), where lower is better."""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from exam_harness.core.errors import InputError
from exam_harness.features.live_systems.recording import manifest_document, run_manifest

if TYPE_CHECKING:
    from exam_harness.results.scored import Scored

class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SystemFigures(_Model):
    """One run's figures from its system's manifest (None: the manifest records none)."""

    run: str
    queries: int  # queries with a recorded latency
    errors: int  # queries the system failed on
    latency_p50: float | None = None  # seconds
    latency_p95: float | None = None
    tokens: int | None = None  # summed over the queries that reported tokens
    cost: float | None = None  # summed over the queries that reported a cost

    def figure(self, gate: str) -> float | None:
        """The figure a gate name reads: ``latency-p95`` -> :attr:`latency_p95` (figures.py)."""
        value = getattr(self, gate.replace("-", "_"))
        return float(value) if value is not None else None


class SystemCosts(_Model):
    """Every run with a manifest, and a note per manifest that could not be read."""

    systems: list[SystemFigures] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)

    def run(self, name: str) -> SystemFigures | None:
        return next((s for s in self.systems if s.run == name), None)


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100) by linear interpolation between the closest ranks (numpy's default)."""
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100.0
    low = math.floor(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def figures(run: str, manifest: Mapping[str, Any], path: Path) -> SystemFigures:
    """A run's figures from its manifest (an InputError naming the file and field for a wrong one)."""
    queries = manifest.get("queries")
    if not isinstance(queries, dict):
        raise InputError("the manifest holds no 'queries' object", path=path, field="queries")
    latencies: list[float] = []
    tokens: list[int] = []
    costs: list[float] = []
    for qid, info in queries.items():
        where = f"queries.{qid}"
        if not isinstance(info, dict):
            raise InputError("a query's facts must be an object", path=path, field=where)
        latency = info.get("latency_s")
        if isinstance(latency, bool) or not isinstance(latency, (int, float)) or not math.isfinite(latency):
            raise InputError(f"latency_s must be a number, got {latency!r}", path=path, field=f"{where}.latency_s")
        latencies.append(float(latency))
        if (n := info.get("tokens")) is not None:
            if isinstance(n, bool) or not isinstance(n, int):
                raise InputError(f"tokens must be a whole number, got {n!r}", path=path, field=f"{where}.tokens")
            tokens.append(n)
        if (c := info.get("cost")) is not None:
            if isinstance(c, bool) or not isinstance(c, (int, float)) or not math.isfinite(c):
                raise InputError(f"cost must be a number, got {c!r}", path=path, field=f"{where}.cost")
            costs.append(float(c))
    errors = manifest.get("errors")
    return SystemFigures(
        run=run, queries=len(latencies), errors=len(errors) if isinstance(errors, dict) else 0,
        latency_p50=round(percentile(latencies, 50), 4) if latencies else None,
        latency_p95=round(percentile(latencies, 95), 4) if latencies else None,
        tokens=sum(tokens) if tokens else None, cost=round(sum(costs), 6) if costs else None)


def system_costs(runs: Iterable[str], folders: Iterable[Path]) -> SystemCosts | None:
    """The figures of every run with a manifest in ``folders`` (a run file's folder for a file); None
    where no run has one."""
    folders = list(folders)
    found = SystemCosts()
    for run in runs:
        path = run_manifest(run, folders)
        if path is None:
            continue
        try:
            found.systems.append(figures(run, manifest_document(path), path))
        except InputError as exc:  # said in the section; the other figures stand
            found.notes.append(f"note: run {run!r} has no latency, tokens or cost figures: {exc}")
    return found if found.systems or found.notes else None


def _shown(value: float | None, unit: str = "") -> str:
    if value is None:
        return "–"
    if unit == "$":
        from exam_harness.core.display import money

        return money(value)
    return f"{value:,.4g}{unit}" if isinstance(value, float) else f"{value:,}"


def _cells(s: SystemFigures) -> list[str]:
    return [s.run, str(s.queries), str(s.errors), _shown(s.latency_p50, " s"), _shown(s.latency_p95, " s"),
            _shown(s.tokens), _shown(s.cost, "$")]


HEAD = ("run", "queries", "errors", "latency p50", "latency p95", "tokens", "cost")


def summary_lines(content: SystemCosts) -> list[str]:
    """A line per run: its latency p50/p95, tokens and cost; then the notes."""
    lines = [f"system {s.run}: latency p50 {_shown(s.latency_p50, ' s')}, p95 {_shown(s.latency_p95, ' s')} over "
             f"{s.queries} queries; tokens {_shown(s.tokens)}; cost {_shown(s.cost, '$')}" for s in content.systems]
    return lines + list(content.notes)


@dataclass(frozen=True)
class SystemCostsSection:
    name: str = "system-costs"
    title: str = "System latency and cost"
    model: type[BaseModel] = SystemCosts

    def compute(self, scored: Scored) -> SystemCosts | None:
        return system_costs(scored.runs, scored.run_folders)

    def terminal(self, content: SystemCosts) -> list[str]:
        return summary_lines(content)

    def markdown(self, content: SystemCosts, escape: Callable[[str], str]) -> str:
        rows = ["| " + " | ".join(HEAD) + " |", "|" + "---|" * len(HEAD)]
        rows += ["| " + " | ".join(escape(c) for c in _cells(s)) + " |" for s in content.systems]
        return "### System latency and cost\n\n" + "\n".join(rows) + "".join(f"\n\n{escape(n)}" for n in content.notes)

    def html(self, content: SystemCosts) -> str:
        e = html.escape
        notes = "".join(f'<p class="note">{e(n)}</p>' for n in content.notes)
        head = "".join(f"<th>{e(c)}</th>" for c in HEAD)
        rows = "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in _cells(s)) + "</tr>" for s in content.systems)
        return (f'<section id="system-costs"><h2>System latency and cost</h2>{notes}<div class="scroll"><table>'
                f"<thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table></div></section>")


SECTION = SystemCostsSection()
