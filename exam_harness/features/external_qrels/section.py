"""The external qrels section (``evaluate --qrels`` / ``--official-qrels``): every run scored over given
qrels files, one leaderboard per file, relevance level and measure, correlated with the official
leaderboard; with official qrels, the per-query correlations (drawn under ``--plot``: ``images``). Kept under
``--brief`` without the leaderboards themselves (``terminal_brief``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel

from exam_harness.api import preformatted_html, preformatted_markdown
from exam_harness.features.external_qrels.inputs import QRELS_REQUEST
from exam_harness.features.external_qrels.model import (
    EXTERNAL_QRELS,
    OFFICIAL_QRELS_SOURCE,
    ExternalLeaderboard,
    ExternalQrelsResult,
    PerQueryCorrelation,
)

if TYPE_CHECKING:
    from rich.table import Table

    from exam_harness.api import Scored


def external_qrels(scored: Scored) -> ExternalQrelsResult | None:
    request = scored.input(QRELS_REQUEST)
    if request is None:
        return None
    from exam_harness.features.external_qrels.compute import external_qrels_evaluation, external_request

    exam_sources = {(m.key, int(getattr(m, "min_grade", 0))): scored.result[m].per_query for m in scored.measures
                    if m.family == "exam-cover"}
    result = external_qrels_evaluation(external_request(scored, request), official=scored.official,
                                       exam_sources=exam_sources, keep_per_query=request.per_query)
    result.official = dict(scored.official) if scored.official else None
    return result


def _source_name(qrels: str, level: int | None) -> str:
    from pathlib import Path

    name = qrels if qrels == OFFICIAL_QRELS_SOURCE else Path(qrels).name
    return name if level is None else f"{name} (level {level})"


def _by_source(boards: Sequence[ExternalLeaderboard]) -> dict[tuple[str, int], list[ExternalLeaderboard]]:
    grouped: dict[tuple[str, int], list[ExternalLeaderboard]] = {}
    for b in boards:
        grouped.setdefault((b.qrels, b.relevance_level), []).append(b)
    return grouped


def _named_rows_table(title: str, names: tuple[str, str], figures: Sequence[str]) -> Table:
    """A table whose rows are named by two columns (the first highlighted) followed by right-aligned figures."""
    from rich.table import Table

    table = Table(title=title, title_justify="left", header_style="bold")
    table.add_column(names[0], style="cyan")
    table.add_column(names[1], no_wrap=True)
    for name in figures:
        table.add_column(name, justify="right", no_wrap=True)
    return table


def external_correlation_table(ext: ExternalQrelsResult) -> Table:
    """Spearman's rho / Kendall's tau of each qrels leaderboard against the official leaderboard: a row
    per measure, a section per qrels file and relevance level."""
    from exam_harness.report.tables import fmt, title_of

    table = _named_rows_table("Leaderboards over qrels files: correlation with the official leaderboard",
                              ("qrels", "measure"), ("Spearman ρ", "Kendall τ", "runs", "queries"))
    for i, ((qrels, level), boards) in enumerate(_by_source(ext.leaderboards).items()):
        if i:
            table.add_section()
        for j, b in enumerate(boards):
            c = b.correlation
            table.add_row(_source_name(qrels, level) if j == 0 else "", title_of(b.measure),
                          fmt(c.spearman if c else None), fmt(c.kendall if c else None),
                          str(c.n) if c else "–", str(b.queries))
    return table


def external_system_table(boards: Sequence[ExternalLeaderboard], official: Mapping[str, float] | None) -> Table:
    """One qrels file at one relevance level: runs x measures (± standard error)."""
    from exam_harness.report.tables import Column, Leaderboard, render_table, title_of
    from exam_harness.results.evaluation import system_order

    first = boards[0]
    order = system_order(list(first.systems), official, first.systems)
    columns = [Column(title_of(b.measure), {r: (v, b.stderr.get(r)) for r, v in b.systems.items()}) for b in boards]
    before = [("official", {r: "–" if r not in official else f"{official[r]:g}" for r in order})] if official else []
    title = f"Qrels {_source_name(first.qrels, first.relevance_level)}, {first.queries} queries, ± stderr"
    return render_table(Leaderboard(title, order, columns, before=before), "inline")


def _per_query_name(c: PerQueryCorrelation) -> str:
    from exam_harness.report.tables import title_of

    if c.min_grade is not None:
        return f"{title_of(c.measure)} (grade ≥ {c.min_grade})"
    return _source_name(c.source, c.relevance_level)


def per_query_table(ext: ExternalQrelsResult) -> Table | None:
    """Per-query correlation with the official qrels: per query rho / tau over the runs, their means over
    the queries where defined, and tau pooled over every (run, query) point."""
    from exam_harness.report.tables import fmt, title_of

    if not ext.per_query:
        return None
    table = _named_rows_table(
        f"Per-query correlation with the {ext.official_qrels or OFFICIAL_QRELS_SOURCE} (relevance level "
        f"{ext.official_relevance_level}): per query, ρ / τ over the runs; mean over the queries; τ pooled over "
        "every (run, query)", ("leaderboard", "vs official"), ("mean ρ", "mean τ", "pooled τ", "queries"))
    previous = None
    for c in ext.per_query:
        name = _per_query_name(c)
        if previous is not None and name != previous:
            table.add_section()
        undefined = f" ({c.undefined} undefined)" if c.undefined else ""
        table.add_row(name if name != previous else "", title_of(c.official_measure), fmt(c.mean_spearman),
                      fmt(c.mean_kendall), fmt(c.pooled.kendall), f"{len(c.queries)}{undefined}")
        previous = name
    return table


def external_qrels_tables(ext: ExternalQrelsResult, *, brief: bool = False) -> list[Table]:
    """Each qrels leaderboard (unless ``brief``), their correlations with the official leaderboard, and
    the per-query correlations."""
    tables: list[Table] = []
    if not brief:
        tables += [external_system_table(boards, ext.official) for boards in _by_source(ext.leaderboards).values()]
    if ext.official:
        tables.append(external_correlation_table(ext))
    per_query = per_query_table(ext)
    if per_query is not None:
        tables.append(per_query)
    return tables


@dataclass(frozen=True)
class ExternalQrelsSection:
    name: str = EXTERNAL_QRELS
    title: str = "Leaderboards over qrels files"
    model: type[BaseModel] = ExternalQrelsResult
    placement: Literal["before", "after"] = "after"
    brief: bool = True

    def compute(self, scored: Scored) -> ExternalQrelsResult | None:
        return external_qrels(scored)

    def terminal(self, content: ExternalQrelsResult) -> list[Table]:
        return external_qrels_tables(content)

    def terminal_brief(self, content: ExternalQrelsResult) -> list[Table]:
        return external_qrels_tables(content, brief=True)

    def markdown(self, content: ExternalQrelsResult, escape: Callable[[str], str]) -> str:
        return preformatted_markdown(self.terminal(content))

    def html(self, content: ExternalQrelsResult) -> str:
        return preformatted_html(self.name, self.title, self.terminal(content))

    def images(self, content: ExternalQrelsResult) -> dict[str, bytes]:
        """The per-query correlations' scatter plots ``--plot`` draws (none without official qrels)."""
        if not content.per_query:
            return {}
        from exam_harness.features.external_qrels.plots import per_query_images

        return per_query_images(content)


SECTION = ExternalQrelsSection()
