"""The viewer's Textual app: the leaderboard first, the other screens a key away (screens.py, ``?`` lists them)."""

from __future__ import annotations

from typing import ClassVar

from textual.app import App
from textual.binding import Binding, BindingType

from exam_harness.features.view.document import Viewed
from exam_harness.features.view.pairs import PairSource
from exam_harness.features.view.screens import (
    FlipsScreen,
    HelpScreen,
    LeaderboardScreen,
    SearchScreen,
    SectionsScreen,
    VerdictScreen,
)

CSS = """
.title { height: auto; max-height: 3; background: $primary-background; }
#verdict { height: auto; max-height: 4; }
#leaderboard, #queries, #points, #flips, #results { height: 1fr; }
#pairs { height: 1fr; min-height: 4; }
#why { height: auto; max-height: 9; }
#detail { height: auto; max-height: 7; background: $boost; }
#sides { height: auto; max-height: 12; }
#before, #after { width: 1fr; padding: 0 1; }
#sections, #checks { height: 1fr; }
#help { width: auto; height: auto; padding: 1 2; border: round $accent; background: $surface; }
HelpScreen { align: center middle; }
"""


class ViewerApp(App[None]):
    """``exam-harness view``: one document (and a reference to compare it with), keyboard only."""

    TITLE = "exam-harness view"
    CSS = CSS
    ENABLE_COMMAND_PALETTE = False  # every action has its key (?); ctrl+p would open a palette needing search
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("question_mark", "help", "help"),
        Binding("q", "quit", "quit"),
        Binding("escape", "go_back", "back"),
        Binding("l", "leaderboard", "leaderboard", show=False),
        Binding("v", "verdict", "verdict"),
        Binding("s", "sections", "sections"),
        Binding("f", "flips", "flips"),
        Binding("slash", "search", "search"),
    ]

    def __init__(self, viewed: Viewed, pairs: PairSource, *, search: str | None = None) -> None:
        super().__init__()
        self.viewed = viewed
        self.pairs = pairs
        self.initial_search = search

    def on_mount(self) -> None:
        self.push_screen(LeaderboardScreen(self.viewed, self.pairs))
        if self.initial_search is not None:
            self.push_screen(SearchScreen(self.viewed, self.pairs, self.initial_search))

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_go_back(self) -> None:
        if len(self.screen_stack) > 2:  # the default screen, then the leaderboard: it stays
            self.pop_screen()

    def action_leaderboard(self) -> None:
        while len(self.screen_stack) > 2:
            self.pop_screen()

    def action_verdict(self) -> None:
        self.push_screen(VerdictScreen(self.viewed, self.pairs))

    def action_sections(self) -> None:
        self.push_screen(SectionsScreen(self.viewed, self.pairs))

    def action_flips(self) -> None:
        self.push_screen(FlipsScreen(self.viewed, self.pairs))

    def action_search(self) -> None:
        self.push_screen(SearchScreen(self.viewed, self.pairs))
