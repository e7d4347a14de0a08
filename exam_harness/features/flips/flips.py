"""The test points that flipped between two reports (issue 28, item 6): answered before and missed now
(lost), or the other way round (gained), per run, with both sides' best passages and reasons.

A pure function of the two reports' ``outcomes``, so every output can show it: ``exam-harness compare``
prints it as a table and pytest's ``--exam-compare`` section lists it; a report section shows the same
:class:`Flip` list. Only runs and test points both reports hold count; a test point that was an error or
skipped on either side (no verdict) is no flip.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rich.table import Table
from rich.text import Text

from exam_harness.core.display import shorten
from exam_harness.results.schema import ExamReport, TestPointOutcome

ANSWERED = "answered"
MISSED = ("missed", "required-missed")
SHOWN_CHARS = 60  # a passage text or reason beside the other side's in a table cell


@dataclass(frozen=True)
class Flip:
    """One run's verdict on one test point, answered on one side and missed on the other."""

    run: str
    query_id: str
    test_point_id: str
    before: TestPointOutcome
    after: TestPointOutcome

    @property
    def lost(self) -> bool:
        """Answered in the reference, missed now."""
        return self.before.outcome == ANSWERED

    @property
    def required(self) -> bool:
        return self.before.required or self.after.required


def flips(old: ExamReport, new: ExamReport) -> list[Flip]:
    """Every (run, test point) both reports hold whose verdict flipped between answered and missed; the
    lost ones first (required ones first among them), then by run, query and test point."""
    return flipped_outcomes(old.outcomes, new.outcomes)


def flipped_outcomes(old: Iterable[TestPointOutcome], new: Iterable[TestPointOutcome]) -> list[Flip]:
    """:func:`flips` of two reports' outcomes (the pytest session's report section has its own before the
    report is whole)."""
    before = {(o.run, o.query_id, o.test_point_id): o for o in old}
    found = []
    for after in new:
        was = before.get((after.run, after.query_id, after.test_point_id))
        if was is None:
            continue
        lost = was.outcome == ANSWERED and after.outcome in MISSED
        if lost or (was.outcome in MISSED and after.outcome == ANSWERED):
            found.append(Flip(after.run, after.query_id, after.test_point_id, was, after))
    return sorted(found, key=lambda f: (not f.lost, not f.required, f.run, f.query_id, f.test_point_id))


def flip_counts(found: Sequence[Flip]) -> dict[str, tuple[int, int]]:
    """run -> (lost, gained)."""
    counts: dict[str, tuple[int, int]] = {}
    for f in found:
        lost, gained = counts.get(f.run, (0, 0))
        counts[f.run] = (lost + f.lost, gained + (not f.lost))
    return counts


def side_text(o: TestPointOutcome) -> str:
    if o.best_passage is None:
        return "no passage graded"
    grade = f" (grade {o.best_grade})" if o.best_grade is not None else ""
    said = o.reason or o.best_passage_text  # None for a secret bank: its texts stay out
    return f"{o.best_passage}{grade}" + (f": {shorten(said, SHOWN_CHARS)}" if said else "")


def flips_table(found: Sequence[Flip], *, title_suffix: str = "", limit: int | None = 20) -> Table:
    """One row per flip: run, test point, which way, both sides' best passage and reason."""
    counts = ", ".join(f"{run} -{lost} +{gained}" for run, (lost, gained) in sorted(flip_counts(found).items()))
    table = Table(title=f"Flipped test points {title_suffix}: {counts or 'none'}".replace("  ", " "),
                  title_justify="left", header_style="bold")
    for heading in ("run", "test point", "", "before", "now"):
        table.add_column(heading, overflow="fold")
    for f in found[:limit]:
        way = Text("answered → missed", style="red bold") if f.lost else Text("missed → answered", style="green")
        point = f.test_point_id + (" (required)" if f.required else "")
        table.add_row(Text(f.run), Text(point), way, Text(side_text(f.before)), Text(side_text(f.after)))
    if limit is not None and len(found) > limit:
        table.caption = f"{len(found) - limit} more not shown"
    return table
