#!/usr/bin/env bash
# Device check for the CUDA backend, for a machine with an NVIDIA GPU and no network.
# Runs the GPU tests (CUDA compile + launch against numpy), the GEMM benchmark, then
# ResNet-18 (224x224, batch 1) compiled with --target cuda against torch eager, ending
# with one JSON line of figures (bench/gpu_resnet18.py).
# Needs python3 with numpy, pytest, cuda-bindings and an NVRTC of CUDA 13.0 (torch optional).
# Finishes in well under 5 minutes on an H100/H200.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ -x .venv/bin/python ]; then PY=.venv/bin/python; fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
status=0
timeout 150 "$PY" -m pytest tests/compiler/codegen/gpu -q -p no:cacheprovider -x || status=$?
timeout 200 "$PY" bench/gpu_matmul.py "$@" || status=$?
timeout 240 "$PY" bench/gpu_resnet18.py --check-models || status=$?
exit $status
