"""Every single-op ONNX case of the frontend's table (tests/compiler/frontend/test_onnx_ops.py),
compiled for the CPU and run through the saved-module runtime, against onnxruntime.

This is the "a kernel for each operator the frontend produces" check: a new
converter gets a case there and is compiled here without further work.
"""
from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest

from compiler.build_model import build_model
from driver.runtime import load_module
from tests.models.oracle import assert_close
from tests.models.ort_u8s8 import ort_run_exact
from tests.models.single_node import single_node_model

_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "compiler", "frontend",
                     "test_onnx_ops.py")
_spec = importlib.util.spec_from_file_location("frontend_op_cases", _PATH)
_cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_cases)


def _compile_and_compare(model, feeds, tmp_path, what):
    expected = ort_run_exact(model, feeds)  # exact where onnxruntime saturates (ort_u8s8)
    m = load_module(build_model(model).save(str(tmp_path / "op.vtamod")))
    got = m(**feeds)
    assert len(got) == len(expected)
    for i, (g, e) in enumerate(zip(got, expected)):
        assert_close(g, np.asarray(e), rel=1e-5, what=f"{what} output {i}")


@pytest.mark.parametrize("case", sorted(_cases.CASES))
def test_single_op_compiled_matches_onnxruntime(case, tmp_path):
    op, inputs, attrs, opset = _cases.CASES[case]
    model, feeds = single_node_model(op, inputs, attrs, opset)
    _compile_and_compare(model, feeds, tmp_path, case)


@pytest.mark.parametrize("case", sorted(_cases.MULTI_OUT_CASES))
def test_multi_output_op_compiled_matches_onnxruntime(case, tmp_path):
    op, inputs, attrs, opset, n_out = _cases.MULTI_OUT_CASES[case]
    model, feeds = single_node_model(op, inputs, attrs, opset, n_out=n_out)
    _compile_and_compare(model, feeds, tmp_path, case)
