"""The pytest summary's leaderboard on an 80-column terminal (CI logs: pytest's width there) with a long run
name: split into tables that fit, every value whole, read back against the report. Before, the EXAM-Qrels table
was never split and its cells read ``★ 0…``."""

from __future__ import annotations

import json
import re
from pathlib import Path

from exam_harness.report.terminal import render_to_text
from exam_harness.results.read import read_report
from tests.helpers import table_cells
from tests.paths import GOLDEN

LONG = "acme-retrieval-augmented-pipeline-v2-reranked"
EDGES = "┓┃┩│┤┘"


def test_a_long_run_name_on_80_columns_keeps_every_value(tmp_path: Path) -> None:
    golden = json.loads((GOLDEN / "exam-report.json").read_text().replace('"good"', f'"{LONG}"'))
    golden.update(tool_version="0.1.0", created="2026-12-02T00:00:00+00:00")  # what the golden file leaves out
    path = tmp_path / "exam-report.json"
    path.write_text(json.dumps(golden))
    report = read_report(path)
    text = render_to_text(report, color=False, width=80)
    table_lines = [line for line in text.splitlines() if line[:1] in "┏┃┡│├└"]
    assert max(map(len, table_lines)) <= 80 and all(line.rstrip()[-1] in EDGES for line in table_lines)
    assert "…" not in text
    shown = table_cells(text, re.compile(r"^(EXAM scores|EXAM-Qrels measures)"))
    exam, qrels = shown["EXAM scores"], shown["EXAM-Qrels measures"]
    for system in report.systems:
        for info in report.exam_measures():
            score = system.scores[info.name]
            assert exam[system.run][info.title].removeprefix("★").strip() == f"{score.mean:.3f}"
        for info in report.label_measures("max-grade"):
            score = system.scores[info.name]
            assert qrels[system.run][info.title].removeprefix("★").strip() == f"{score.mean:.3f}"
