"""Injective kernels: elementwise ops, broadcasting, data movement (each group one kernel)."""
from __future__ import annotations

import numpy as np
import pytest

from compiler.graph import Op, make


@pytest.mark.parametrize("op,attrs", [
    (Op.RELU, {}), (Op.LEAKY_RELU, {"alpha": 0.1}), (Op.CLIP, {"min": -0.5, "max": 0.5}),
    (Op.SIGMOID, {}), (Op.TANH, {}), (Op.ERF, {}), (Op.GELU, {}), (Op.GELU, {"approximate": "tanh"}),
    (Op.HARD_SWISH, {}),
])
def test_unary(case, op, attrs):
    x = case.input("x", (2, 3, 32))
    case.check(make(op, x, **attrs))


def test_sqrt_of_positive(case):
    x = case.input("x", (4, 16))
    case.check(make(Op.SQRT, make(Op.MUL, x, x)))


def test_binary_broadcast_chain(case):
    a = case.input("a", (2, 1, 5, 16))
    b = case.input("b", (3, 1, 16))
    c = case.rand_param("c", (1, 16))
    y = make(Op.SUB, make(Op.MUL, make(Op.ADD, a, b), c), b)
    y = make(Op.POW, make(Op.RELU, y), case.param("two", np.asarray(2.0, "float32")))
    case.check(make(Op.DIV, y, make(Op.ADD, make(Op.RELU, c),
                                     case.param("one", np.asarray(1.0, "float32")))), rel=1e-5)


def test_data_movement(case):
    x = case.input("x", (2, 3, 4, 6))
    y = make(Op.TRANSPOSE, x, perm=(0, 3, 1, 2))
    y = make(Op.RESHAPE, y, newshape=(12, 12))
    y = make(Op.SLICE, y, begin=(1, 0), end=(12, 12), step=(2, 3))
    y = make(Op.PAD, y, pads=(1, 0, 0, 2), mode="constant", value=0.5)
    case.check(y)


@pytest.mark.parametrize("mode", ["edge", "reflect", "wrap"])
def test_pad_modes(case, mode):
    x = case.input("x", (1, 2, 5, 6))
    case.check(make(Op.PAD, x, pads=(0, 0, 2, 1, 0, 0, 1, 2), mode=mode))


def test_concat_and_take(case):
    a = case.input("a", (2, 3, 8))
    b = case.input("b", (2, 5, 8))
    idx = case.param("idx", np.array([[0, 7], [-1, 2]], "int64"))
    y = make(Op.CONCAT, a, b, axis=1)
    case.check(make(Op.TAKE, y, idx, axis=1))


def test_layout_transform_roundtrip(case):
    x = case.input("x", (1, 32, 3, 5))
    y = make(Op.LAYOUT_TRANSFORM, x, src_layout="NCHW", dst_layout="NCHW16c")
    y = make(Op.RELU, y)
    case.check(y, make(Op.LAYOUT_TRANSFORM, y, src_layout="NCHW16c", dst_layout="NCHW"))


def test_cast_and_batch_norm(case):
    x = case.input("x", (1, 4, 3, 3))
    g, b, m = (case.rand_param(n, (4,)) for n in "gbm")
    v = case.param("v", np.linspace(0.5, 2.0, 4).astype("float32"))
    y = make(Op.BATCH_NORM, x, g, b, m, v, epsilon=1e-5)
    case.check(make(Op.CAST, make(Op.CAST, y, to="float64"), to="float32"))


def test_concat(case):
    a = case.input("a", (2, 3, 8))
    b = case.input("b", (2, 5, 8))
    case.check(make(Op.CONCAT, a, b, axis=1))


def test_take(case):
    a = case.input("a", (2, 8, 8))
    idx = case.param("idx", np.array([[0, 7], [-1, 2]], "int64"))
    case.check(make(Op.TAKE, a, idx, axis=1))


@pytest.mark.parametrize("axis_scale", [False, True])
def test_quantize_dequantize(case, axis_scale):
    x = case.input("x", (1, 4, 5, 6))
    if axis_scale:
        scale = case.param("s", np.array([0.05, 0.1, 0.02, 0.2], "float32"))
        zp = case.param("z", np.array([0, 3, -2, 10], "int8"))
    else:
        scale = case.param("s", np.asarray(0.03, "float32"))
        zp = case.param("z", np.asarray(128, "uint8"))
    q = make(Op.QUANTIZE, x, scale, zp, axis=1, to=str(zp.dtype))
    case.check(q, make(Op.DEQUANTIZE, q, scale, zp, axis=1))


@pytest.mark.parametrize("mode,coord,nearest", [
    ("nearest", "asymmetric", "floor"), ("nearest", "half_pixel", "round_prefer_floor"),
    ("linear", "half_pixel", "floor"), ("linear", "align_corners", "floor")])
def test_resize(case, mode, coord, nearest):
    x = case.input("x", (1, 3, 5, 7))
    case.check(make(Op.RESIZE, x, sizes=(1, 3, 10, 11), scales=(1.0, 1.0, 2.0, 11 / 7), mode=mode,
                    coordinate_transformation_mode=coord, nearest_mode=nearest))


def test_integer_arithmetic_truncates_like_onnx(case):
    a = case.param("a", np.array([[7, -7, 9, -9, 100, 5, 0, 3]], "int32"))
    x = case.input("x", (1, 8), "int32")
    case.feeds["x"] = np.array([[2, 2, -4, -4, 7, 1, 3, -2]], "int32")
    case.check(make(Op.DIV, make(Op.ADD, x, a), x))
