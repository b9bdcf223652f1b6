"""CPU CONV2D / DENSE kernels with a QDQ model's multipliers (attrs mult, post) vs
``eval_node``: the pre-shift, the int32 product, the rounding shifts."""
import numpy as np
import pytest
from quant_kernel_run import run_kernel

from compiler.quant import kernels
from compiler.quant.qgraph import QNode, QOp, eval_node


@pytest.mark.parametrize("per_channel", [False, True])
def test_conv2d_multiplier_matches_oracle(rng, per_channel):
    x = rng.integers(-128, 128, (1, 3, 9, 9)).astype(np.int8)
    w = rng.integers(-128, 128, (16, 3, 3, 3)).astype(np.int8)
    b = rng.integers(-2 ** 14, 2 ** 14, 16).astype(np.int32)
    shift, mult = (3, 21000) if not per_channel else (
        tuple(int(v) for v in rng.integers(0, 4, 16)), tuple(int(v) for v in rng.integers(1, 32768, 16)))
    node = QNode(QOp.CONV2D, (0,), (1, 16, 9, 9), "int8", 0.5,
                 {"strides": (1, 1), "padding": (1, 1), "shift": shift, "relu": per_channel,
                  "mult": mult, "post": 22}, ("w", "b"))
    got = run_kernel(kernels.conv2d(node, x.shape, w, b), x)
    want = eval_node(node, [x], {"w": w, "b": b})
    np.testing.assert_array_equal(got, want)
    assert len(np.unique(want)) > 20


def test_dense_multiplier_matches_oracle(rng):
    x = rng.integers(-128, 128, (3, 40)).astype(np.int8)
    w = rng.integers(-128, 128, (10, 40)).astype(np.int8)
    b = rng.integers(-2 ** 14, 2 ** 14, 10).astype(np.int32)
    node = QNode(QOp.DENSE, (0,), (3, 10), "int8", 0.5,
                 {"shift": 2, "relu": False, "mult": 30001, "post": 25}, ("w", "b"))
    got = run_kernel(kernels.dense(node, x.shape, w, b), x)
    want = eval_node(node, [x], {"w": w, "b": b})
    np.testing.assert_array_equal(got, want)
    assert len(np.unique(want)) > 10
