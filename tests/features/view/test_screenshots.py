"""Snapshots of the main screens at 80×24: the SVG screenshots in docs/view/ (docs/view.md shows them) are what the
viewer draws today, on the example exam.

Regenerate after an intended change with ``UPDATE_GOLDEN=1 pytest tests/features/view/test_screenshots.py`` and
look at them. The comparison masks digits: the example's figures come from the embedding model, whose last
digits may differ on another CPU; every word, line and layout must match.
"""

from __future__ import annotations

import asyncio
import csv
import os
import re
from collections.abc import Sequence
from pathlib import Path

import pytest

from exam_harness.analysis.label_screens import LabelPair
from exam_harness.features.view.labelling import LabelApp
from tests.features.view.example import Example
from tests.features.view.support import MISSED_POINT, open_point
from tests.features.view.viewing import SIZE, User, as_user, viewer
from tests.paths import REPO

SHOTS = REPO / "docs" / "view"
SCREENS = {  # name -> the keys from the leaderboard, and what is typed after them
    "leaderboard": ((), ""),
    "run": (("down", "down", "enter"), ""),
    "flips": (("f",), ""),
    "sections": (("s",), ""),
    "search": (("slash",), "run:weak missed\n"),
    "help": (("question_mark",), ""),
}


def masked(svg: str) -> str:
    return re.sub(r"\d+", "0", svg)


def check(name: str, svg: str) -> None:
    path = SHOTS / f"{name}.svg"
    if os.environ.get("UPDATE_GOLDEN"):
        SHOTS.mkdir(exist_ok=True)
        path.write_text(svg, encoding="utf-8")
    assert path.exists(), f"missing screenshot {path}; run with UPDATE_GOLDEN=1 once"
    assert masked(svg) == masked(path.read_text(encoding="utf-8")), (
        f"docs/view/{name}.svg is not what the viewer draws now (UPDATE_GOLDEN=1 to regenerate, then look at it)")


def still(app: object) -> None:
    """No blinking cursor in a screenshot."""
    from textual.widgets import Input

    for box in app.screen.query(Input):  # type: ignore[attr-defined]
        box.cursor_blink = False


@pytest.mark.parametrize("name", sorted(SCREENS))
def test_screenshot_is_current(example: Example, name: str) -> None:
    keys, typed = SCREENS[name]

    async def scenario(user: User) -> None:
        if keys:
            await user.press(*keys)
        if typed:
            await user.type(typed.rstrip("\n"))
            await user.press("enter")
        still(user.app)
        check(name, user.app.export_screenshot(title=f"exam-harness view: {name}"))

    as_user(viewer(example.report), scenario)


def test_screenshots_of_a_query_and_a_test_point(example: Example) -> None:
    async def scenario(user: User) -> None:
        await open_point(user, "weak-ranker", "tides", MISSED_POINT)
        check("point", user.app.export_screenshot(title="exam-harness view: point"))
        await user.press("escape")
        check("query", user.app.export_screenshot(title="exam-harness view: query"))

    as_user(viewer(example.report), scenario)


def collection() -> dict[str, str]:
    with (REPO / "runs" / "collection.tsv").open(encoding="utf-8", newline="") as handle:
        return {row["id"]: row["text"] for row in csv.DictReader(handle, delimiter="\t")}


def test_screenshot_of_the_labelling_screen() -> None:
    texts = collection()
    shown: Sequence[LabelPair] = [
        LabelPair("tides", "tides/gravitational-pull-of-the-moon-84ea7a", "gravitational pull of the moon", "t2",
                  texts["t2"], grade=2),
        LabelPair("tides", "tides/two-tidal-bulges-5fe1fe", "two tidal bulges", "t2", texts["t2"], grade=4)]
    app = LabelApp(shown, lambda steps: None, earlier=12)

    async def run() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            check("label", app.export_screenshot(title="exam-harness label"))

    asyncio.run(run())


def test_docs_show_every_screenshot() -> None:
    page = (REPO / "docs" / "view.md").read_text(encoding="utf-8")
    for path in sorted(Path(SHOTS).glob("*.svg")):
        assert f"(view/{path.name})" in page, f"docs/view.md does not show {path.name}"
    for name in [*SCREENS, "point", "query", "label"]:
        assert (SHOTS / f"{name}.svg").exists()
