"""What the viewer's tests share among their modules: the label key, the point a run missed,
opening it on screen, and the tmux binary the terminal tests drive."""

from __future__ import annotations

import os
import shutil
from typing import Any

import pytest

from tests.features.view.viewing import User

# the screen's keys and, for each, the line prompt's key for the same answer: one key map for both (backspace, the
# screen's second undo key, is u on the line); an unsure answer (m) leaves the pair unlabelled as a skip (s) does
LINE_KEY = {"y": "y", "n": "n", "m": "m", "s": "s", "u": "u", "backspace": "u", "q": "q"}

MISSED_POINT = "tides/gravitational-pull-of-the-moon-84ea7a"


def outcome_of(document: Any, run: str, point: str) -> Any:
    return next(o for o in document["outcomes"] if o["run"] == run and o["test_point_id"] == point)


async def open_point(user: User, run: str, query: str, point: str) -> str:
    """From the leaderboard: down to the run, enter; down to the query, enter; down to the point, enter."""
    viewed = user.app.viewed
    await user.press(*["down"] * viewed.runs().index(run), "enter")
    queries = [row.query_id for row in viewed.queries(run)]
    await user.press(*["down"] * queries.index(query), "enter")
    points = [o.test_point_id for o in viewed.points(run, query)]
    return await user.press(*["down"] * points.index(point), "enter")


def on_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def tmux_binary() -> str:
    found = shutil.which("tmux")
    if found is None:
        if on_ci():
            pytest.fail("tmux is not installed; under CI=true the terminal tests must run (.ci/run installs it)")
        pytest.skip("tmux is not installed (apt-get install tmux)")
    return found
