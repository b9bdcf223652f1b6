"""Int8 CONV2D / DENSE kernels vs ``eval_node``: int32 wrapping, bias, shifts, relu, clip."""
import numpy as np
import pytest
from quant_kernel_run import run_kernel

from compiler.quant import kernels
from compiler.quant.qgraph import QNode, QOp, eval_node


def _conv_case(rng, x_shape, O, k, stride, pad, shift, relu, wide_bias=False):
    x = rng.integers(-128, 128, x_shape).astype(np.int8)
    w = rng.integers(-128, 128, (O, x_shape[1], k, k)).astype(np.int8)
    hi = 2 ** 31 - 1 if wide_bias else 2 ** 16
    b = rng.integers(-hi, hi, O, dtype=np.int64).astype(np.int32)
    oh = (x_shape[2] + 2 * pad - k) // stride + 1
    ow = (x_shape[3] + 2 * pad - k) // stride + 1
    node = QNode(QOp.CONV2D, (0,), (x_shape[0], O, oh, ow), "int8", 0,
                 {"strides": (stride, stride), "padding": (pad, pad), "shift": shift,
                  "relu": relu}, ("w", "b"))
    return node, x, w, b


@pytest.mark.parametrize("x_shape,O,k,stride,pad,shift,relu", [
    ((1, 3, 23, 23), 64, 7, 2, 3, 9, True),      # the ResNet stem, small
    ((2, 1, 8, 8), 8, 3, 1, 1, 6, False),        # digits' first conv, ob 8
    ((1, 5, 9, 7), 5, 3, 2, 0, 0, False),        # 5 channels: ob 1, shift 0
    ((1, 4, 6, 6), 24, 1, 1, 0, 31, False),      # shift 31: -1 or 0
    ((1, 3, 17, 17), 16, 3, 1, 1, 7, True),      # 17 columns: a 14-wide tile and a tail
])
def test_conv2d_matches_oracle(rng, x_shape, O, k, stride, pad, shift, relu):
    node, x, w, b = _conv_case(rng, x_shape, O, k, stride, pad, shift, relu)
    got = run_kernel(kernels.conv2d(node, x.shape, w, b), x)
    np.testing.assert_array_equal(got, eval_node(node, [x], {"w": w, "b": b}))


def test_conv2d_int32_accumulator_wraps(rng):
    # biases near +-2**31 and all-extreme products: the int32 sum overflows in both
    # directions and wraps as the accelerator's accumulator (and the oracle) does
    node, x, w, b = _conv_case(rng, (1, 16, 6, 6), 16, 3, 1, 1, 4, False, wide_bias=True)
    x[:] = -128
    w[:8] = -128
    w[8:] = 127
    b[:8] = 2 ** 31 - 5
    b[8:] = -2 ** 31 + 5
    got = run_kernel(kernels.conv2d(node, x.shape, w, b), x)
    want = eval_node(node, [x], {"w": w, "b": b})
    np.testing.assert_array_equal(got, want)
    assert (want[0, :8, 2, 2] < 0).all() and (want[0, 8:, 2, 2] > 0).all()   # wrapped


@pytest.mark.parametrize("relu", [False, True])
def test_conv2d_per_channel_shifts(rng, relu):
    node, x, w, b = _conv_case(rng, (1, 3, 12, 12), 16, 3, 2, 1, 0, relu, wide_bias=True)
    shifts = tuple(int(s) for s in rng.integers(0, 32, 16))
    node = QNode(node.op, node.src, node.shape, "int8", 0,
                 dict(node.attrs, shift=shifts[:14] + (0, 31)), node.params)
    got = run_kernel(kernels.conv2d(node, x.shape, w, b), x)
    np.testing.assert_array_equal(got, eval_node(node, [x], {"w": w, "b": b}))


@pytest.mark.parametrize("N,C,O,shift,relu", [(4, 256, 10, 8, False), (1, 3, 32, (5,) * 16 + (9,) * 16, True),
                                              (3, 20, 16, 0, False)])
def test_dense_matches_oracle(rng, N, C, O, shift, relu):
    x = rng.integers(-128, 128, (N, C)).astype(np.int8)
    w = rng.integers(-128, 128, (O, C)).astype(np.int8)
    b = rng.integers(-2 ** 31, 2 ** 31 - 1, O, dtype=np.int64).astype(np.int32)
    node = QNode(QOp.DENSE, (0,), (N, O), "int8", 0, {"shift": shift, "relu": relu}, ("w", "b"))
    got = run_kernel(kernels.dense(node, x.shape, w, b), x)
    np.testing.assert_array_equal(got, eval_node(node, [x], {"w": w, "b": b}))


def test_per_channel_shift_table_must_match_channels(rng):
    node, x, w, b = _conv_case(rng, (1, 3, 6, 6), 8, 3, 1, 1, (1, 2), False)
    with pytest.raises(ValueError, match="per-channel shift has 2 entries, the node 8"):
        kernels.conv2d(node, x.shape, w, b)
