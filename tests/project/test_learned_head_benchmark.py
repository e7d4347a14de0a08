"""benchmarks/learned_head.py, which measured the learned answerability head against the support model (issue 35,
item 7): it skips cleanly without the published data, and its head starts as today's model, so what a fit changes is
the fit's doing."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.paths import REPO

SCRIPT = REPO / "benchmarks" / "learned_head.py"


def benchmark() -> ModuleType:
    spec = importlib.util.spec_from_file_location("learned_head", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["learned_head"] = module  # dataclasses resolve their module's names through sys.modules
    spec.loader.exec_module(module)
    return module


def test_without_the_published_data_it_says_so_and_exits_0(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, str(SCRIPT), "--data", str(tmp_path)], capture_output=True, text=True,
                            timeout=120, check=False, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("skipped: ") and "llmjudge-dev-graded.jsonl.gz" in result.stdout


def test_the_head_starts_as_todays_model_and_a_fit_moves_it_towards_the_grades() -> None:
    np = pytest.importorskip("numpy")
    pytest.importorskip("torch")
    module = benchmark()
    rng = np.random.default_rng(0)

    def unit(rows: int) -> Any:
        x = rng.normal(size=(rows, 8)).astype(np.float32)
        return x / np.linalg.norm(x, axis=1, keepdims=True)

    points, spans = unit(3), unit(10)
    segment = np.repeat(np.arange(5), 2)
    today = rng.normal(size=(3, 5))
    # The grades follow the first coordinates' product, which today's logit does not see.
    best = np.stack([(points[:, :1] * spans[segment == i, :1].T).max(axis=1) for i in range(5)], axis=1)
    pairs = module.QueryPairs("q", points, spans, segment, np.arange(0, 10, 2), today, np.zeros((3, 5)),
                              np.where(best > 0, 5, 0), np.array([True] * 5))
    start = module.fit_head([pairs], rank=2, l2=0.0, steps=0, lr=0.05, seed=0)
    assert np.allclose(start.scores(pairs), today, atol=1e-5)
    fitted = module.fit_head([pairs], rank=2, l2=0.0, steps=200, lr=0.05, seed=0)
    assert module.kappa(fitted.scores(pairs) >= 0, best > 0) > module.kappa(today >= 0, best > 0)
