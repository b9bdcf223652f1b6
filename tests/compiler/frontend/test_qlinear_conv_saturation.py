"""QLinearConv where uint8 x int8 pair sums leave int16 (255 x -128 twice is -65280):
our reference executor and compiled CPU module give the exact int32 result; onnxruntime
gives it on a CPU with VNNI and the int16-saturating one without (tests/models/ort_u8s8.py
explains why). Both branches run on every machine: one of them against onnxruntime."""
from __future__ import annotations

import numpy as np

from compiler.build_model import build_model
from compiler.frontend.onnx import from_onnx
from compiler.graph import run
from driver.runtime import load_module
from tests.models import ort_u8s8
from tests.models.oracle import ort_run
from tests.models.single_node import single_node_model


def _case(x: np.ndarray, w: np.ndarray):
    """A 3x3 QLinearConv, pads 1, uint8 in and out, symmetric per-channel int8 weights."""
    o = w.shape[0]
    inputs = [("x", x, False), ("xs", np.float32(0.02), True), ("xz", np.uint8(128), True),
              ("w", w, True), ("ws", np.linspace(0.002, 0.004, o).astype(np.float32), True),
              ("wz", np.zeros(o, np.int8), True), ("ys", np.float32(1.5), True),
              ("yz", np.uint8(128), True), ("b", np.arange(o, dtype=np.int32) * 100, True)]
    model, feeds = single_node_model("QLinearConv", inputs, dict(pads=[1, 1, 1, 1]), 13)
    return model, feeds, ort_u8s8.qlinear_conv_args(model, feeds)


def _overflowing():
    """Channels 0 and 1 of x are 255 and the weights of channel pair (0, 1) are -128, so
    every pair sum at an inside position is 255 * -128 * 2 = -65280 (int16 floor -32768)."""
    rng = np.random.default_rng(7)
    x = rng.integers(0, 256, (1, 4, 6, 6)).astype(np.uint8)
    x[:, :2] = 255
    w = rng.integers(-128, 128, (3, 4, 3, 3)).astype(np.int8)
    w[:, :2] = -128
    return _case(x, w)


def test_pair_sums_beyond_int16_are_exact_here_and_in_onnxruntime_only_with_vnni(tmp_path):
    model, feeds, a = _overflowing()
    exact, saturated = ort_u8s8.qlinear_conv_exact(a), ort_u8s8.qlinear_conv_saturating(a)
    assert ort_u8s8.saturates(a)
    assert not np.array_equal(exact, saturated)
    graph, params = from_onnx(model)
    np.testing.assert_array_equal(run(graph, params, feeds)[0], exact)
    compiled = load_module(build_model(model).save(str(tmp_path / "q.vtamod")))
    np.testing.assert_array_equal(compiled(**feeds)[0], exact)
    ort = ort_run(model, feeds)[0]
    np.testing.assert_array_equal(ort, exact if ort_u8s8.host_has_vnni() else saturated)
    np.testing.assert_array_equal(ort_u8s8.ort_run_exact(model, feeds)[0], exact)
    # uint8 weights take onnxruntime's exact u8 x u8 kernels (the model tests' oracle)
    np.testing.assert_array_equal(ort_run(ort_u8s8.uint8_weights(model), feeds)[0], exact)


def test_pair_sums_within_int16_match_onnxruntime_everywhere():
    rng = np.random.default_rng(8)
    model, feeds, a = _case(rng.integers(100, 156, (1, 4, 6, 6)).astype(np.uint8),
                            rng.integers(-60, 60, (3, 4, 3, 3)).astype(np.int8))
    assert not ort_u8s8.saturates(a)
    exact = ort_u8s8.qlinear_conv_exact(a)
    np.testing.assert_array_equal(ort_run(model, feeds)[0], exact)
    np.testing.assert_array_equal(ort_u8s8.ort_run_exact(model, feeds)[0], exact)
    np.testing.assert_array_equal(ort_run(ort_u8s8.uint8_weights(model), feeds)[0], exact)
    graph, params = from_onnx(model)
    np.testing.assert_array_equal(run(graph, params, feeds)[0], exact)
