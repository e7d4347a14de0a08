"""The correlations section: every leaderboard's Spearman rho and Kendall tau against the official
leaderboard (``evaluate --official``), shown before the leaderboards and kept under ``--brief``.

It holds the official leaderboard too: the leaderboards' tables, the plots and the external qrels'
tables order the runs by it. Its model is the document's (results/evaluation.py: the views read it there)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel

from exam_harness.results.evaluation import CORRELATIONS, Correlations, MeasureCorrelation
from exam_harness.results.sections import preformatted_html, preformatted_markdown

if TYPE_CHECKING:
    from rich.table import Table

    from exam_harness.results.scored import Scored

def correlations(scored: Scored) -> Correlations | None:
    if not scored.official:
        return None
    from exam_harness.measures.correlation import leaderboard_correlation
    from exam_harness.results.schema import MeasureInfo

    measures = []
    for measure in scored.measures:  # the document's measures, in its order
        result = scored.result[measure]
        info = MeasureInfo.of(result.measure)
        measures.append(MeasureCorrelation(
            measure=info.name, key=result.measure.key, title=info.title, label=info.label,
            min_grade=info.min_grade or 0, correlation=leaderboard_correlation(result.means, scored.official)))
    return Correlations(official=dict(scored.official), measures=measures)


def correlation_table(content: Correlations) -> Table:
    """Spearman's rho / Kendall's tau of every leaderboard against the official one, per tau."""
    from rich.table import Table

    from exam_harness.report.tables import fmt

    taus = sorted({m.min_grade for m in content.measures} - {0}) or [0]
    table = Table(
        title="Correlation with the official leaderboard (Spearman ρ / Kendall τ)", title_justify="left",
        header_style="bold",
    )
    rows: dict[tuple[str, str], dict[int, MeasureCorrelation]] = {}
    for m in content.measures:
        rows.setdefault((m.key, m.label or ""), {})[m.min_grade] = m
    missing: set[str] = set()
    extra: set[str] = set()
    body: list[tuple[str, str, list[str]]] = []
    pair = 1  # the widest "rho / tau" of a column: a narrow terminal wraps a cell after it, never inside it
    for (_, label), by_tau in rows.items():
        cells = []
        for tau in taus:
            entry = by_tau.get(tau)
            c = entry.correlation if entry is not None else None
            if c is None:
                cells.append("–")
                continue
            missing.update(c.missing)
            extra.update(c.extra)
            coefficients = f"{fmt(c.spearman)} / {fmt(c.kendall)}"
            pair = max(pair, len(coefficients))
            # n: the runs both leaderboards rank; a coefficient over 2 runs says little
            cells.append(f"{coefficients} (n={c.n})")
        body.append((next(iter(by_tau.values())).title, label, cells))
    table.add_column("measure", style="cyan", no_wrap=True)
    # the label and the figures wrap in a narrow terminal rather than lose their end ("0.719 / 0.535 (…")
    table.add_column("label", overflow="fold")
    for tau in taus:
        table.add_column(f"grade ≥ {tau}", justify="right", overflow="fold", min_width=pair)
    for title, label, cells in body:
        table.add_row(title, label, *cells)
    notes = []
    if missing:
        # a misspelt run name leaves its run out of every correlation: show what it was probably meant as
        notes.append(f"official runs not among the evaluated runs (left out): {_names(missing, near=sorted(extra))}")
    if extra:
        notes.append(f"evaluated runs the official leaderboard lacks (left out): {_names(extra)}")
    if notes:
        table.caption = "; ".join(notes)
        table.caption_justify = "left"
    return table


def _names(names: set[str], limit: int = 8, near: Sequence[str] = ()) -> str:
    """The names, cut after ``limit``; each with its look-alike among ``near`` (``'a_b' ~ 'a-b'``) if any."""
    from exam_harness.results.preflight import near_match

    shown = sorted(names)

    def named(n: str) -> str:
        match = near_match(n, near) if near else None
        return f"{n!r} ~ {match}" if match else repr(n)

    more = f" and {len(shown) - limit} more" if len(shown) > limit else ""
    return ", ".join(named(n) for n in shown[:limit]) + more


@dataclass(frozen=True)
class CorrelationsSection:
    name: str = CORRELATIONS
    title: str = "Correlation with the official leaderboard"
    model: type[BaseModel] = Correlations
    placement: Literal["before", "after"] = "before"
    brief: bool = True

    def compute(self, scored: Scored) -> Correlations | None:
        return correlations(scored)

    def terminal(self, content: Correlations) -> list[Table]:
        return [correlation_table(content)]

    def markdown(self, content: Correlations, escape: Callable[[str], str]) -> str:
        return preformatted_markdown(self.terminal(content))

    def html(self, content: Correlations) -> str:
        return preformatted_html(self.name, self.title, self.terminal(content))


SECTION = CorrelationsSection()
