"""The single-op ONNX cases of the frontend's table (tests/compiler/frontend/test_onnx_ops.py)
compiled for OpenCL and run (PoCL in CI) against onnxruntime: the GPU route lowers the same
graph ops as the CPU, so every operator of docs/operators.md runs there too.

All cases take about two minutes on two cores (slow); the CI-sized test runs a few of the
operators built from compositions (comparisons, WHERE, reductions, index tables).
"""
from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest

from compiler.build_model import build_model
from driver.runtime import load_module
from tests.gpu_marks import needs_opencl
from tests.models.oracle import assert_close, ort_run
from tests.models.single_node import single_node_model

_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "compiler", "frontend",
                     "test_onnx_ops.py")
_spec = importlib.util.spec_from_file_location("frontend_op_cases_opencl", _PATH)
_cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_cases)

CASES = {**{k: (*v, 1) for k, v in _cases.CASES.items()}, **_cases.MULTI_OUT_CASES}
SCALAR_OUTPUT = {"reducemin_all"}   # 0-d results: GPU kernels need an axis to bind threads to
CI_SIZED = ["topk_largest", "cumsum_exclusive_reverse", "reducelogsumexp", "onehot", "mish",
            "einsum_attention", "where_bcast", "argmax_ties"]


def _run(case, tmp_path):
    op, inputs, attrs, opset, n_out = CASES[case]
    model, feeds = single_node_model(op, inputs, attrs, opset, n_out=n_out)
    m = load_module(build_model(model, target="opencl").save(str(tmp_path / "op.vtamod")))
    got = m(**feeds)
    expected = ort_run(model, feeds)
    assert len(got) == len(expected)
    for i, (g, e) in enumerate(zip(got, expected)):
        assert_close(g, np.asarray(e), rel=1e-5, what=f"{case} output {i} on opencl")


@needs_opencl
@pytest.mark.parametrize("case", CI_SIZED)
def test_composed_op_on_opencl_matches_onnxruntime(case, tmp_path):
    _run(case, tmp_path)


@needs_opencl
@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(set(CASES) - SCALAR_OUTPUT - set(CI_SIZED)))
def test_every_op_on_opencl_matches_onnxruntime(case, tmp_path):
    _run(case, tmp_path)


def test_scalar_output_is_refused_on_gpu_with_the_fix():
    op, inputs, attrs, opset, n_out = CASES["reducemin_all"]
    model, _ = single_node_model(op, inputs, attrs, opset, n_out=n_out)
    with pytest.raises(ValueError, match=r"is a scalar \(0-d\).*keepdims=1\) or compile for a CPU target"):
        build_model(model, target="opencl")
