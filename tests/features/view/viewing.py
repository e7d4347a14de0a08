"""Driving the viewer as a user does: the app at 80×24, keys pressed through Textual's Pilot, the screen read as
text."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from exam_harness.extensions import Registries
from exam_harness.features.view.app import ViewerApp
from exam_harness.features.view.document import Viewed, open_document
from exam_harness.features.view.pairs import pair_source
from tests.features.view.example import screen_text

SIZE = (80, 24)


def viewer(report: Path, reference: Path | None = None, *, root: Path | None = None,
           search: str | None = None) -> ViewerApp:
    opened = open_document(report)
    viewed = Viewed(opened, open_document(reference) if reference is not None else None)
    return ViewerApp(viewed, pair_source(report, opened.document, root, Registries.builtin()), search=search)


def flat(text: str) -> str:
    """Text with its line breaks and runs of spaces as one space: a wrapped reason reads as one line."""
    return " ".join(re.sub(r"[▁▂▃▄▅▆▇█▉▊▋▌▍▎▏▔]", " ", text).split())


class User:
    """A user at the keyboard: presses keys and reads the screen."""

    def __init__(self, app: Any, pilot: Any) -> None:
        self.app, self.pilot = app, pilot

    async def press(self, *keys: str) -> str:
        await self.pilot.press(*keys)
        return await self.settle()

    async def type(self, text: str) -> str:
        await self.pilot.press(*(("space" if ch == " " else ch) for ch in text))
        return await self.settle()

    async def settle(self) -> str:
        """The screen once the keys' work (a pair lookup in its thread) is done and drawn: no worker pending or
        running and the same screen twice. A screen's worker starts when it mounts, which a loaded machine may not
        have reached at the first pause, and its rows' messages (the highlighted pair) follow its end."""
        from textual.worker import WorkerState

        shown = None
        for _ in range(200):
            await self.pilot.pause()
            await self.app.workers.wait_for_complete()
            await self.pilot.pause()
            busy = any(w.state in (WorkerState.PENDING, WorkerState.RUNNING) for w in self.app.workers)
            now = self.screen
            if not busy and now == shown:
                return now
            shown = now
        raise AssertionError(f"the screen never settled; it shows:\n{shown}")

    @property
    def screen(self) -> str:
        return screen_text(self.app)

    def region(self, selector: str) -> str:
        """The part of the screen a widget covers (one column of a side-by-side view), as text."""
        box = self.app.screen.query_one(selector).region
        lines = self.screen.split("\n")[box.y : box.y + box.height]
        return "\n".join(line[box.x : box.x + box.width] for line in lines)


def as_user(app: Any, scenario: Callable[[User], Awaitable[None]], size: tuple[int, int] = SIZE) -> None:
    async def run() -> None:
        async with app.run_test(size=size) as pilot:
            user = User(app, pilot)
            await user.settle()
            await scenario(user)

    asyncio.run(run())
