"""The example exam as ``make exam`` runs it, twice: a kept report of an earlier weak-ranker (one more passage
for the tides query, ``--exam-save before``), then the repository's own runs compared with it
(``--exam-compare latest``), so its report holds flips. And the screen as a user sees it, as text."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.paths import REPO

# passage t1 (the moon's pull makes the tides) ranked fifth by the earlier weak-ranker
EARLIER_WEAK_LINE = "tides Q0 t1 5 2.0 weak-ranker\n"
CREATED = "2026-01-01T00:00:00+00:00"  # the reports' creation time, fixed so that the screenshots are stable


@dataclass(frozen=True)
class Example:
    root: Path  # the folder the sessions ran in
    report: Path  # reports/exam-report.json, compared with the kept one
    kept: Path  # .exam-history/0001_before.json


def run_exam(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "banks", *args], cwd=root,
                          capture_output=True, text=True, timeout=600, env={**os.environ, "NO_COLOR": "1"})
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def fix_created(path: Path) -> None:
    """The document with its creation time fixed (what the viewer's title line shows)."""
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    data["created"] = CREATED
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


def build_example(root: Path) -> Example:
    shutil.copytree(REPO / "banks", root / "banks")
    shutil.copytree(REPO / "runs", root / "runs")
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    weak = root / "runs" / "weak-ranker.run"
    original = weak.read_text()
    weak.write_text(original + EARLIER_WEAK_LINE)
    run_exam(root, "--exam-save", "before")
    weak.write_text(original)
    run_exam(root, "--exam-compare", "latest")
    example = example_at(root)
    for path in (example.report, example.kept):
        fix_created(path)
    return example


def example_at(root: Path) -> Example:
    """The example :func:`build_example` built in ``root``."""
    return Example(root, root / "reports" / "exam-report.json", root / ".exam-history" / "0001_before.json")


def screen_text(app: Any) -> str:
    """What the terminal shows of the app's current screen, as text (as App.export_screenshot draws it)."""
    from rich.console import Console

    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), record=True, color_system=None,
                      legacy_windows=False, safe_box=False)
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return str(console.export_text())
