"""``exam-harness evaluate``'s tables as a CI log and a narrow terminal show them: every value whole.

The leaderboards are read back from the printed text (continued tables included) and compared with the
``--json`` document; before, standard output that is no terminal took rich's 80 columns and cut the values of a
wide leaderboard to ``0…``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from exam_harness.cli import main
from tests.helpers import evaluation_boards, table_cells, write_exam

BOX = "┏┃┡│├└"
TITLE = re.compile(r"^Leaderboards at grade ≥ (\d+) ")


def expected_cells(doc: dict[str, object], taus: list[int]) -> dict[int, dict[str, dict[str, str]]]:
    """What the leaderboards must show: each measure's mean (and standard error for the EXAM measures)."""
    out: dict[int, dict[str, dict[str, str]]] = {}
    for board in evaluation_boards(doc):
        if board.get("label", "max-grade") != "max-grade":
            continue
        for tau in taus if board["min_grade"] == 0 else [board["min_grade"]]:
            for run, mean in board["systems"].items():
                stderr = board["stderr"][run]
                shown = f"{mean:.3f}" + (f" ±{stderr:.3f}" if "EXAM" in board["title"] and stderr is not None else "")
                out.setdefault(tau, {}).setdefault(run, {})[board["title"]] = shown
    return out


def evaluate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[str, dict[str, object]]:
    paragraphs, official = write_exam(tmp_path / "data")
    out = tmp_path / "lb.json"
    assert main(["evaluate", str(paragraphs), "--official", str(official), "--k", "2", "--min-grade", "3", "4",
                 "--json", str(out), "--bootstrap", "0"]) == 0
    return capsys.readouterr().out, json.loads(out.read_text())


def shown_values(text: str) -> dict[int, dict[str, dict[str, str]]]:
    return {int(tau): {run: {t: c.removeprefix("★").strip() for t, c in row.items() if t != "official"}
                       for run, row in runs.items() if run not in ("Spearman ρ", "Kendall τ")}
            for tau, runs in table_cells(text, TITLE).items()}


@pytest.mark.parametrize("columns", [None, ""], ids=["COLUMNS unset", "COLUMNS empty"])
def test_a_log_or_a_file_gets_every_leaderboard_whole_in_one_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, columns: str | None
) -> None:
    # standard output is captured: no terminal, as in CI; an empty COLUMNS gives rich no width either
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    text, doc = evaluate(tmp_path, capsys)
    assert "…" not in text and "continued" not in text
    assert max(len(line) for line in text.splitlines() if line[:1] in BOX) > 80  # wider than rich's default
    assert shown_values(text) == expected_cells(doc, [3, 4])


def test_an_80_column_terminal_gets_the_leaderboards_split_to_fit_and_nothing_cut(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")  # what a terminal of 80 columns tells rich
    text, doc = evaluate(tmp_path, capsys)
    table_lines = [line for line in text.splitlines() if line[:1] in BOX]
    assert table_lines and max(map(len, table_lines)) <= 80
    assert all(line.rstrip()[-1] in "┓┃┩│┤┘" for line in table_lines)  # no table lost its right edge
    assert "…" not in text
    assert "Leaderboards at grade ≥ 3 (qrels label max-grade; ± standard error), continued" in " ".join(text.split())
    assert shown_values(text) == expected_cells(doc, [3, 4])
    # the correlations wrap their figures instead of cutting them: each "rho / tau" pair stays whole
    pairs = re.findall(r"(\d\.\d{3}) / (\d\.\d{3})", text)
    correlations = [m for b in evaluation_boards(doc) if (m := b.get("correlation"))]
    assert len(pairs) >= len(correlations) > 0
