"""The int8 DEPTHWISE kernel vs the oracle (``qgraph.depthwise_reference``): strides,
padding, per-tensor and per-channel requantization, zero points; AVX-512 code."""
import numpy as np
import pytest
from quant_kernel_run import run_kernel

import compiler
from compiler.quant import kernels
from compiler.quant.qgraph import QNode, QOp, eval_node


def _node(C, shape, strides, padding, attrs, zp=0):
    a = dict(dict(strides=strides, padding=padding, relu=False), **attrs)
    return QNode(QOp.DEPTHWISE, (0,), shape, "int8", 5, a, ("w", "b"), zp=zp)


@pytest.mark.parametrize("x_shape, strides, padding, attrs, zp", [
    ((1, 16, 9, 9), (1, 1), (1, 1), {"shift": 3}, 0),
    ((2, 24, 8, 7), (2, 2), (1, 1), {"shift": 0, "mult": 23170, "post": 20}, -7),
    ((1, 32, 6, 6), (1, 1), (0, 0), {"shift": tuple(range(32)), "relu": True}, 0),
    ((1, 8, 7, 7), (2, 2), (2, 2), {"shift": (1,) * 8, "mult": tuple(range(900, 8900, 1000)),
                                    "post": 18}, 4),
])
def test_depthwise_kernel_matches_oracle(x_shape, strides, padding, attrs, zp):
    rng = np.random.default_rng(x_shape[1])
    C = x_shape[1]
    K = 3 if padding[0] < 2 else 5
    relu = attrs.get("relu", False)
    x = rng.integers(-128, 128, x_shape).astype(np.int8)
    x.reshape(-1)[:2] = [-128, 127]
    w = rng.integers(-128, 128, (C, 1, K, K)).astype(np.int8)
    b = rng.integers(-2 ** 12, 2 ** 12, C).astype(np.int32)
    H, W = x_shape[2:]
    OH = (H + 2 * padding[0] - K) // strides[0] + 1
    OW = (W + 2 * padding[1] - K) // strides[1] + 1
    node = _node(C, (x_shape[0], C, OH, OW), strides, padding, dict(attrs, relu=relu), zp)
    want = eval_node(node, [x], {"w": w, "b": b})
    got = run_kernel(kernels.depthwise(node, x_shape, w, b), x)
    np.testing.assert_array_equal(got, want)
    assert len(np.unique(want)) > 20       # not saturated to a few values


def test_depthwise_kernel_uses_avx512():
    node = _node(32, (1, 32, 16, 16), (1, 1), (1, 1), {"shift": 4, "relu": False})
    w, b = np.ones((32, 1, 3, 3), np.int8), np.zeros(32, np.int32)
    kd = kernels.depthwise(node, (1, 32, 16, 16), w, b)
    asm = compiler.build(kd.schedule, kd.args, target="llvm -mcpu=skylake-avx512",
                         name="k").assembly()
    mults = [ln for ln in asm.splitlines() if "vpmaddwd" in ln or "vpmullw" in ln or "vpmulld" in ln]
    assert mults and any("zmm" in ln or "ymm" in ln for ln in mults)
