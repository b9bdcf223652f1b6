"""onnxruntime as the test oracle, and the closeness check the model tests use."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort


def ort_run(model: onnx.ModelProto, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    """Run `model` on onnxruntime's CPU provider (graph optimizations off: pure reference numerics)."""
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, inputs)


def assert_close(actual: np.ndarray, expected: np.ndarray, rel: float = 1e-4, what: str = "") -> None:
    """max|actual - expected| <= rel * max(|expected|, tiny); shapes and dtypes equal."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != {expected.dtype}"
    if not np.issubdtype(expected.dtype, np.floating):
        np.testing.assert_array_equal(actual, expected, err_msg=what)
        return
    scale = max(float(np.abs(expected).max(initial=0.0)), 1e-6)
    err = float(np.abs(actual.astype(np.float64) - expected).max(initial=0.0))
    assert err <= rel * scale, f"{what}: max abs error {err:.3g} > {rel} x max|expected| {scale:.3g}"
