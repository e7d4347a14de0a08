"""``exam-harness evaluate`` imports what it reads and computes, not what other commands need: the YAML parser
(hand-written banks), the grade cache with sqlite3 and the LLM prompts (grading), the support grader's fuzzy
matching. Each costs ~2-15 ms of CPU at start-up (issue 38: evaluate at the reference's 20x), and a later
change that imports one again at the top of a module on evaluate's path fails here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.helpers import write_exam

NOT_IMPORTED = ("yaml", "sqlite3", "rapidfuzz", "exam_harness.grading.cache", "exam_harness.llm.modes",
                "exam_harness.graders.support")
ROOT = Path(__file__).resolve().parents[2]


def _modules_after(args: list[str], cwd: Path) -> set[str]:
    script = ("import json, sys\nfrom exam_harness.cli import main\ncode = main(sys.argv[1:])\n"
              "print(json.dumps([code, sorted(sys.modules)]))")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", script, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    code, modules = json.loads(done.stdout.strip().splitlines()[-1])
    assert code == 0, done.stdout[-2000:]
    return set(modules)


def test_evaluate_of_recorded_grades_imports_no_yaml_cache_or_fuzzy_matching(tmp_path: Path) -> None:
    runs, official = write_exam(tmp_path / "data")
    modules = _modules_after(["evaluate", str(runs), "--official", str(official), "--k", "2", "--bootstrap", "0",
                              "--json", str(tmp_path / "out.json")], tmp_path)
    assert "exam_harness.report.evaluation" in modules  # it ran the evaluation
    assert sorted(m for m in NOT_IMPORTED if m in modules) == []


def test_a_yaml_bank_is_still_read(tmp_path: Path) -> None:
    """The YAML half of the located reader, now imported on first use, reads a hand-written bank."""
    from exam_harness.io.handbank import load_hand_bank

    bank = tmp_path / "bank.yaml"
    bank.write_text("queries:\n  - id: q1\n    text: what is x\n    questions:\n      - What is x?\n", encoding="utf-8")
    (loaded,) = load_hand_bank(bank)
    assert loaded.query.id == "q1" and [tp.text for tp in loaded.test_points] == ["What is x?"]
