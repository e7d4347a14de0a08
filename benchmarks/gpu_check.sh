#!/usr/bin/env bash
# The GPU path measured in one call (at most 8 minutes): FLAN-T5-large's and monoT5-base's shapes with
# biased random weights (nothing downloaded), bf16, a batch-size sweep; see benchmarks/gpu_check.py.
# The last line: gpu: <prompts/s> prompts/s FLAN-T5-large bf16 (<pct>% of compute limit)
#     benchmarks/gpu_check.sh                 # on the GPU machine, from the repository root
#     benchmarks/gpu_check.sh --shapes tiny --device cpu --dtype float32 ...   # any option of gpu_check.py
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}"
# 470 s for the script, inside the 8 minutes with room for the interpreter's start and the model build
exec timeout 470 "$PYTHON" benchmarks/gpu_check.py "$@"
