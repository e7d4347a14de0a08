"""The viewer's screens (Textual): the leaderboard, a run's queries, a query's test points, a test point with its
pairs, the flips, the sections, the verdict, the search and the help. Each reads what it shows from
:class:`~exam_harness.features.view.document.Viewed` and the pair source; tables hold text cells, drawn only
where visible (Textual's DataTable: no widget per row), so thousands of rows cost little.

Every text from the document is shown as plain text (``rich.text.Text``), never read as markup: a test point
``[like this]`` stays as written.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from rich.console import Group, RenderableType
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import DataTable, Footer, Input, Static

from exam_harness.features.view.document import (
    QueryRow,
    ShownSection,
    Viewed,
    flip_sides,
    point_lines,
    scores_by_measure,
)
from exam_harness.features.view.filters import parse
from exam_harness.features.view.pairs import PairRow, PairSource, Unavailable
from exam_harness.results.schema import TestPointOutcome

if TYPE_CHECKING:
    from exam_harness.features.flips.flips import Flip

SEARCH_ROWS = 2000  # rows a search shows at most (narrow the filter for the rest)
REASON_CELL = 60  # characters of a reason in a table cell (the detail pane shows it whole)


def plain(text: object) -> Text:
    return Text(str(text), no_wrap=True, overflow="ellipsis")


def lines_text(lines: Iterable[str]) -> Text:
    return Text("\n".join(lines))


def table(id: str, columns: Sequence[str], *, cursor: str = "row") -> DataTable[Text]:
    found: DataTable[Text] = DataTable(id=id, cursor_type=cursor, zebra_stripes=True)  # type: ignore[arg-type]
    for heading in columns:
        found.add_column(Text(heading), key=heading)
    return found


def cut(text: str | None, limit: int = REASON_CELL) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class Titled(Screen[None]):
    """A screen with a title line on top, the key bar at the bottom."""

    def __init__(self, viewed: Viewed, pairs: PairSource) -> None:
        super().__init__()
        self.viewed = viewed
        self.pair_source = pairs

    def title_text(self) -> str:
        return ""

    def compose_title(self) -> ComposeResult:
        yield Static(Text(self.title_text(), style="bold"), classes="title")


class LeaderboardScreen(Titled):
    """Every run by every measure; the verdict first; the highlighted cell's details below."""

    def title_text(self) -> str:
        return self.viewed.summary()

    def compose(self) -> ComposeResult:
        yield from self.compose_title()
        passed, _, _ = self.viewed.verdict()
        lines = self.viewed.verdict_lines()
        shown = lines[:3] + ([f"… {len(lines) - 3} more (v: the whole verdict)"] if len(lines) > 3 else [])
        yield Static(Text("\n".join(shown), style="green" if passed else "bold red"), id="verdict")
        board = table("leaderboard", ["run", *(c.heading for c in self.viewed.columns)], cursor="cell")
        board.fixed_columns = 1
        for run in self.viewed.runs():
            system = self.viewed.system(run)
            name = run + (" (gen)" if system.generated else "") + (" !" if system.incomplete_queries else "")
            board.add_row(plain(name), *(plain(self.viewed.column_text(run, c)) for c in self.viewed.columns),
                          key=run)
        yield board
        yield Static(Text(""), id="detail")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#leaderboard", DataTable).focus()

    def on_data_table_cell_highlighted(self, event: DataTable.CellHighlighted) -> None:
        run = event.cell_key.row_key.value
        column = event.coordinate.column
        if run is None:
            return
        if column == 0:
            system = self.viewed.system(run)
            text = [f"{run}: {system.queries} queries" + (", generated answers" if system.generated else "")
                    + (f"; {system.outcomes.answered} answered, {system.outcomes.missed} missed, "
                       f"{system.outcomes.required_missed} required missed" if self.viewed.is_exam_report else ""),
                    "enter: its queries"]
        else:
            text = [*self.viewed.cell_details(run, column - 1), "enter: the run's queries"]
        self.query_one("#detail", Static).update(lines_text(text))

    def on_data_table_cell_selected(self, event: DataTable.CellSelected) -> None:
        run = event.cell_key.row_key.value
        if run is not None:
            self.app.push_screen(RunScreen(self.viewed, self.pair_source, run))


class RunScreen(Titled):
    """One run's queries: covered test points, missed and required missed, the per-query scores."""

    def __init__(self, viewed: Viewed, pairs: PairSource, run: str) -> None:
        super().__init__(viewed, pairs)
        self.run = run

    def title_text(self) -> str:
        return f"run {self.run} · its queries (enter: the test points; escape: back)"

    def compose(self) -> ComposeResult:
        yield from self.compose_title()
        why = self.viewed.why_no_queries(self.run)
        rows = self.viewed.queries(self.run)
        first = self.viewed.measures[0] if self.viewed.measures else None
        if self.viewed.is_exam_report:
            columns = ["query", "covered", "missed", "required missed", first.title if first else "score"]
        else:
            columns = ["query", *self.viewed.headings]
        queries = table("queries", columns)
        for row in rows:
            queries.add_row(*self._cells(row, first), key=row.query_id)
        yield queries
        yield Static(Text(why or f"{len(rows)} queries"), id="detail")
        yield Footer()

    def _cells(self, row: QueryRow, first: Any) -> list[Text]:
        if not self.viewed.is_exam_report:
            values = scores_by_measure(row.scores, self.viewed.measures, self.viewed.headings) if row.scores else {}
            return [plain(row.query_id), *(plain(values.get(h, "–")) for h in self.viewed.headings)]
        value = row.scores.scores.get(first.name) if row.scores is not None and first is not None else None
        return [plain(row.query_id), plain(row.covered), plain(row.missed), plain(row.required_missed),
                plain(f"{value:.3f}" if value is not None else "–")]

    def on_mount(self) -> None:
        self.query_one("#queries", DataTable).focus()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        query = event.row_key.value
        if query is None:
            return
        if not self.viewed.is_exam_report:
            self.query_one("#detail", Static).update(Text("an evaluation document holds no test points per query"))
            return
        self.app.push_screen(QueryScreen(self.viewed, self.pair_source, self.run, query))


class QueryScreen(Titled):
    """One run's test points of one query, missed required ones first, then the other missed ones."""

    def __init__(self, viewed: Viewed, pairs: PairSource, run: str, query_id: str) -> None:
        super().__init__(viewed, pairs)
        self.run, self.query_id = run, query_id
        self.points = viewed.points(run, query_id)

    def title_text(self) -> str:
        return f"run {self.run} · query {self.query_id} · test points (enter: why; escape: back)"

    def compose(self) -> ComposeResult:
        yield from self.compose_title()
        points = table("points", ["outcome", "grade", "test point", "asks"])
        for i, o in enumerate(self.points):
            points.add_row(*outcome_cells(o), key=str(i))
        yield points
        yield Static(Text(""), id="detail")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#points", DataTable).focus()

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key.value is not None:
            o = self.points[int(event.row_key.value)]
            self.query_one("#detail", Static).update(lines_text(point_lines(o)[:4]))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value is not None:
            self.app.push_screen(PointScreen(self.viewed, self.pair_source, self.points[int(event.row_key.value)]))


def outcome_cells(o: TestPointOutcome) -> list[Text]:
    style = "bold red" if o.outcome == "required-missed" else "red" if o.outcome == "missed" else ""
    return [Text(o.outcome, style=style), plain("–" if o.best_grade is None else o.best_grade),
            plain(o.test_point_id + (" (required)" if o.required else "")), plain(cut(o.text, 50))]


class PointScreen(Titled):
    """Why a run answered or missed a test point: the document's best passage with its grade and reason, then
    every pair of the run's top-k from the grade cache (best first), the highlighted pair's text below."""

    def __init__(self, viewed: Viewed, pairs: PairSource, outcome: TestPointOutcome) -> None:
        super().__init__(viewed, pairs)
        self.outcome = outcome
        self.rows: list[PairRow] = []

    def title_text(self) -> str:
        return f"run {self.outcome.run} · {self.outcome.test_point_id} (escape: back)"

    def compose(self) -> ComposeResult:
        yield from self.compose_title()
        flaky = self.viewed.flaky
        is_flaky = None if flaky is None else (self.outcome.run, self.outcome.test_point_id) in flaky
        with VerticalScroll(id="why"):
            yield Static(lines_text(point_lines(self.outcome, is_flaky)), id="outcome")
        yield table("pairs", ["rank", "passage", "grade", "decided by", "reason"])
        yield Static(Text("looking the pairs up in the grade cache…"), id="detail")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#pairs", DataTable).focus()
        self.load_pairs()

    @work(thread=True, exclusive=True)
    def load_pairs(self) -> None:
        try:
            found = self.pair_source.pairs(self.outcome)
        except Unavailable as exc:
            self.app.call_from_thread(self._show_unavailable, str(exc))
            return
        self.app.call_from_thread(self._show_pairs, found.rows, found.note)

    def _show_unavailable(self, why: str) -> None:
        self.query_one("#detail", Static).update(Text(f"the run's other pairs are not shown: {why}"))

    def _show_pairs(self, rows: list[PairRow], note: str) -> None:
        self.rows = rows
        pairs = self.query_one("#pairs", DataTable)
        for i, r in enumerate(rows):
            pairs.add_row(plain(f"{r.rank}{' best' if r.best else ''}"), plain(r.passage_id),
                          plain("not in cache" if r.grade is None else r.grade), plain(r.decided_by or "–"),
                          plain(cut(r.reason)), key=str(i))
        if not rows:
            self.query_one("#detail", Static).update(Text("the run ranks no passage for this query"))
        elif note:
            self.notify(note)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key.value is None or not self.rows:
            return
        r = self.rows[int(event.row_key.value)]
        grade = "not in the grade cache" if r.grade is None else f"grade {r.grade}"
        lines = [f"rank {r.rank}: {r.passage_id}, {grade}" + (f", decided by {r.decided_by}" if r.decided_by else "")
                 + (" (the report's best passage)" if r.best else ""), f"reason: {r.reason or '–'}",
                 f"text: {r.text or '(a secret bank: not shown)'}"]
        self.query_one("#detail", Static).update(lines_text(lines))


class FlipsScreen(Titled):
    """The test points that flipped against the reference; the highlighted flip's both sides side by side."""

    def __init__(self, viewed: Viewed, pairs: PairSource) -> None:
        super().__init__(viewed, pairs)
        self.found, self.against = viewed.flips()

    def title_text(self) -> str:
        return f"flipped test points {self.against} (enter: the test point now; escape: back)"

    def compose(self) -> ComposeResult:
        yield from self.compose_title()
        flipped = table("flips", ["flip", "run", "test point"])
        for i, f in enumerate(self.found):
            way = Text("answered → missed", style="bold red") if f.lost else Text("missed → answered", style="green")
            flipped.add_row(way, plain(f.run), plain(f.test_point_id + (" (required)" if f.required else "")),
                            key=str(i))
        yield flipped
        with Horizontal(id="sides"):
            yield Static(Text("" if self.found else "no flips: " + self.against), id="before")
            yield Static(Text(""), id="after")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#flips", DataTable).focus()

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key.value is None:
            return
        f: Flip = self.found[int(event.row_key.value)]
        before, after = flip_sides(f, "before", "now")
        self.query_one("#before", Static).update(lines_text(before))
        self.query_one("#after", Static).update(lines_text(after))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value is not None:
            self.app.push_screen(PointScreen(self.viewed, self.pair_source, self.found[int(event.row_key.value)].after))


class SectionsScreen(Titled):
    """Every section the document holds: a registered one drawn as the terminal summary draws it, any other
    (a plugin's not loaded here, a newer tool's) as its JSON."""

    def title_text(self) -> str:
        return "sections (arrows, page up/down: scroll; escape: back)"

    def compose(self) -> ComposeResult:
        yield from self.compose_title()
        with VerticalScroll(id="sections"):
            shown = self.viewed.sections()
            if not shown:
                yield Static(Text("the document holds no section"))
            for section in shown:
                yield Static(section_renderable(section), classes="section")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#sections", VerticalScroll).focus()


def section_renderable(shown: ShownSection) -> RenderableType:
    head = Text(f"{shown.title} [{shown.name}]", style="bold underline")
    if shown.section is None:
        note = Text("(no registered section renders this one: its content as the document holds it)", style="dim")
        return Group(head, note, Text(shown.generic_text()))
    parts = shown.section.terminal(shown.content)
    return Group(head, *(Text(p) if isinstance(p, str) else p for p in parts), Text(""))


class VerdictScreen(Titled):
    def title_text(self) -> str:
        return "the verdict, failed checks first (escape: back)"

    def compose(self) -> ComposeResult:
        yield from self.compose_title()
        with VerticalScroll(id="checks"):
            yield Static(lines_text(self.viewed.verdict_lines()))
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#checks", VerticalScroll).focus()


class SearchScreen(Titled):
    """Every run's test points that match a filter (filters.py): type it, enter to search, enter on a row to
    see why; tab moves between the filter and the results."""

    def title_text(self) -> str:
        return "search: run:NAME query:ID id:TEXT by:PART missed answered required flaky not:FLAG words (escape: back)"

    def __init__(self, viewed: Viewed, pairs: PairSource, initial: str = "") -> None:
        super().__init__(viewed, pairs)
        self.initial = initial
        self.found: list[TestPointOutcome] = []

    def compose(self) -> ComposeResult:
        yield from self.compose_title()
        yield Input(value=self.initial, placeholder="e.g. run:weak missed required", id="filter")
        yield table("results", ["run", "outcome", "grade", "test point", "asks"])
        yield Static(Text(""), id="detail")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#filter", Input).focus()
        if not self.viewed.has_outcomes():
            self.query_one("#detail", Static).update(Text(
                "the document holds no test point outcomes (an evaluation document): nothing to search"))
        elif self.initial:
            self.search(self.initial)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.search(event.value)

    def search(self, text: str) -> None:
        detail = self.query_one("#detail", Static)
        results = self.query_one("#results", DataTable)
        try:
            chosen = parse(text)
        except ValueError as exc:
            detail.update(Text(str(exc), style="red"))
            return
        notes: list[str] = []
        flaky = self.viewed.flaky
        if chosen.needs_flaky and flaky is None:
            notes.append("flaky: the document holds no judge variance (a judge asked once per pair), so no case is")
        outcomes = list(self.viewed.all_outcomes())
        deciders: dict[tuple[str, str], str] = {}
        if chosen.needs_decider:
            try:
                deciders = self.pair_source.deciders(outcomes)
            except Unavailable as exc:
                notes.append(f"by: {exc}")
        found = [o for o in outcomes if chosen.matches(o, flaky or (), lambda o: deciders.get((o.run,
                                                                                              o.test_point_id)))]
        self.found = found[:SEARCH_ROWS]
        results.clear()
        for i, o in enumerate(self.found):
            results.add_row(plain(o.run), *outcome_cells(o), key=str(i))
        more = f" (the first {SEARCH_ROWS} shown: narrow the filter)" if len(found) > SEARCH_ROWS else ""
        detail.update(Text("; ".join([f"{len(found)} of {len(outcomes)} test point outcomes match{more}", *notes])))
        if self.found:
            results.focus()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value is not None:
            self.app.push_screen(PointScreen(self.viewed, self.pair_source, self.found[int(event.row_key.value)]))


HELP = """\
exam-harness view: every key (no mouse needed)

anywhere     ?  this help         q  quit       escape  back
             l  leaderboard       v  verdict    s  sections
             f  flips             /  search
tables       arrows, page up/down, home/end; enter opens the row
leaderboard  enter on a run: its queries (the line below: the cell)
run          enter on a query: its test points, missed ones first
query        enter on a test point: why it was missed or answered:
             the best passage, its grade and reason, every pair
search       type a filter, enter; tab: the results; enter: why
             run:NAME query:ID id:TEXT by:PART (decided by)
             missed answered required flaky  not:FLAG  words

escape or ? closes this help
"""


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,question_mark,q", "close", "close")]

    def compose(self) -> ComposeResult:
        yield Static(Text(HELP), id="help")

    def action_close(self) -> None:
        self.dismiss()
