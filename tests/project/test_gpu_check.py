"""benchmarks/gpu_check.sh runs on CPU with a tiny shape, so that the GPU check cannot rot: its sweep lines
and its last line in the documented shape."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.paths import REPO

ROOT = REPO


@pytest.mark.slow
def test_gpu_check_runs_on_cpu_with_a_tiny_shape() -> None:
    pytest.importorskip("transformers")
    env = {**os.environ, "PYTHON": sys.executable, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [str(ROOT / "benchmarks" / "gpu_check.sh"), "--shapes", "tiny", "--device", "cpu", "--dtype", "float32",
         "--pairs", "16", "--batch-sizes", "4,8", "--peak-tflops", "0.1", "--synthetic"],
        capture_output=True, text=True, timeout=300, env=env, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    sweep = [line for line in lines if line.strip().startswith("batch ")]
    assert len(sweep) == 2
    for line in sweep:
        assert re.search(r"batch +\d+: +[\d.]+ prompts/s, peak memory n/a, padding [\d.]+%, [\d.]+% of compute limit$",
                         line), line
    assert re.fullmatch(r"gpu: [\d.]+ prompts/s tiny-T5 float32 \([\d.]+% of compute limit\)", lines[-1]), lines[-1]
