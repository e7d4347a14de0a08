"""Issue 35's done-when on the heat pump bank (tests/heat_pump_bank.py): a team labels a stratified sample of
about 200 pairs (whole test points: the systems rank five passages per query) through ``exam-harness label``,
and ``evaluate --team-labels`` corrects every system's EXAM-Cover with an interval covering the all-labels
truth, for the default judge and for the judge that answers from the labels."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from exam_harness.analysis import labels as labels_module
from exam_harness.analysis.labels import Label
from exam_harness.cli import main
from tests.fake_openai_server import FakeOpenAIServer
from tests.heat_pump_bank import HeatPumpBank, load

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def bank() -> HeatPumpBank:
    return load()


@pytest.fixture
def server(bank: HeatPumpBank) -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(bank.responder) as srv:
        yield srv


def _team(bank: HeatPumpBank) -> Any:
    """A team answering every pair it is shown by the bank's labels (the prompt loop replaced)."""

    def answer(pairs: Sequence[tuple[str, str]], query_of: Mapping[str, str], *_: Any) -> list[Label]:
        return [Label(query_of[tp], tp, pid, bank.labels[(pid, tp)]) for pid, tp in pairs]

    return answer


def _judges(server: FakeOpenAIServer) -> dict[str, list[str]]:
    return {"embedding": ["--grader", "embedding"],
            "openai": ["--grader", "openai", "--model", "fake-model", "--grader-option", f"base_url={server.base_url}",
                       "--grader-option", "api_key=k"]}


@pytest.mark.parametrize("judge", ["embedding", "openai"])
def test_corrected_exam_cover_from_200_labels_covers_every_systems_truth(
        judge: str, bank: HeatPumpBank, server: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    banks, runs = bank.write_project(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["exam-harness"])
    monkeypatch.setattr(labels_module, "label_loop", _team(bank))
    common = [*sorted(str(p) for p in runs.iterdir()), "--bank", str(banks / "heat_pumps.yaml"),
              *_judges(server)[judge], "--cache", "c.sqlite", "--no-progress"]
    assert main(["label", *common, "--unit", "test-point", "--size", "8"]) == 0
    lines = (tmp_path / "labels.jsonl").read_text().splitlines()
    assert 150 <= len(lines) <= 250  # about 200 labels: eight test points of about 25 pooled passages each
    assert main(["evaluate", *common, "--team-labels", "labels.jsonl", "--json", "evaluation.json",
                 "--report-dir", "none"]) == 0
    printed = capsys.readouterr().out
    assert "Corrected scores at grade" in printed
    content = json.loads((tmp_path / "evaluation.json").read_text())["sections"]["calibration"]
    cover = next(c for c in content["corrected"] if c["key"] == "exam-cover@20")
    assert cover["missing"] is None and cover["units"] == 8
    for system in bank.runs:
        truth = bank.cover(bank.labels, system, 20)
        found = cover["runs"][system]
        assert found["low"] - 1e-9 <= truth <= found["high"] + 1e-9, (system, truth, found)
    if judge == "openai":  # the labels' own judge: its raw score is the truth, and nothing moves it
        assert all(found["raw"] == pytest.approx(bank.cover(bank.labels, s, 20)) for s, found in
                   cover["runs"].items())
        assert all(found["corrected"] == pytest.approx(found["raw"]) for found in cover["runs"].values())
