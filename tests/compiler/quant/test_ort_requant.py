"""onnxruntime's float32 requantization (``compiler.quant.ort_requant``, attr ``fscale``):
the oracle's rounding worked out by hand, and every CPU kernel that carries it (plain and
VNNI conv, depthwise, dense, mean) bit-exact to the oracle."""
import numpy as np
import pytest
from quant_kernel_run import run_kernel

from compiler.codegen.llvm.target import host_target
from compiler.quant import kernels, ort_requant
from compiler.quant.kernels import vnni
from compiler.quant.qgraph import QNode, QOp, eval_node
from compiler.topi import x86_int8

HOST_VNNI = x86_int8.vnni_lanes(host_target().features)


def test_requantize_rounds_half_even_then_zero_point_and_clip():
    acc = np.array([[1, 3, 5, -1, -3, 1000, -1000]], np.int32)
    # acc * 0.5 = 0.5, 1.5, 2.5, -0.5, -1.5, 500, -500 -> 0, 2, 2, -0, -2 (ties to even), then
    # + 3 and clip to [-128, 127]
    np.testing.assert_array_equal(ort_requant.requantize(acc, 0.5, False, 3),
                                  [[3, 5, 5, 3, 1, 127, -128]])
    # relu clamps at the zero point (real 0)
    np.testing.assert_array_equal(ort_requant.requantize(acc, 0.5, True, 3),
                                  [[3, 5, 5, 3, 3, 127, 3]])


def test_requantize_multiplies_in_float32():
    # 16777217 is not a float32: float32(acc) = 16777216 first, then the product rounds once
    acc = np.array([[16777217]], np.int32)
    s = np.float32(3.0 * 2 ** -24)
    assert ort_requant.requantize(acc, float(s), False, 0)[0, 0] == 3


def test_ratio_is_float32_of_float32_product():
    sx, sw, sy = np.float32(0.1), np.float32([0.3, 0.7]), np.float32(0.17)
    want = np.array([np.float32(np.float32(sx * w) / sy) for w in sw])
    np.testing.assert_array_equal(ort_requant.conv_ratio(sx, sw, sy), want)


def test_exact_weight_scales_recovers_dequantize_scale():
    rng = np.random.default_rng(0)
    q = rng.integers(-127, 128, (4, 9)).astype(np.int8)
    q[:, 0] = 127
    s = np.float32([0.013, 0.2, 1e-4, 3.3])
    w = q.astype(np.float32) * s[:, None]                      # DequantizeLinear's float32
    guess = (np.abs(w).max(1).astype(np.float64) / 127).astype(np.float32)
    np.testing.assert_array_equal(ort_requant.exact_weight_scales(w, q, guess), s)


def _fscale(rng, O):
    return tuple(float(v) for v in rng.uniform(1e-5, 3e-3, O).astype(np.float32))


def _conv_node(rng, op, x_shape, O, k, stride, pad, relu, zp, per):
    C = x_shape[1]
    x = rng.integers(-128, 128, x_shape).astype(np.int8)
    w = rng.integers(-128, 128, (O, 1 if op is QOp.DEPTHWISE else C, k, k)).astype(np.int8)
    b = rng.integers(-2 ** 18, 2 ** 18, O).astype(np.int32)
    oh = (x_shape[2] + 2 * pad - k) // stride + 1
    ow = (x_shape[3] + 2 * pad - k) // stride + 1
    fs = _fscale(rng, O) if per else _fscale(rng, 1)[0]
    node = QNode(op, (0,), (x_shape[0], O, oh, ow), "int8", 0,
                 {"strides": (stride, stride), "padding": (pad, pad), "shift": 0, "relu": relu,
                  "fscale": fs}, ("w", "b"), zp=zp)
    return node, x, w, b


CONVS = [((1, 3, 15, 15), 16, 7, 2, 3, True, 0, True),    # a stem, per-channel
         ((2, 8, 7, 7), 20, 3, 1, 1, False, -5, True),    # 20 = 16 + 4 channels, a zero point
         ((1, 32, 6, 6), 32, 1, 1, 0, False, 7, False)]   # 1x1, one scale


@pytest.mark.parametrize("x_shape,O,k,stride,pad,relu,zp,per", CONVS)
def test_plain_conv2d_equals_oracle(rng, x_shape, O, k, stride, pad, relu, zp, per):
    node, x, w, b = _conv_node(rng, QOp.CONV2D, x_shape, O, k, stride, pad, relu, zp, per)
    got = run_kernel(kernels.conv2d(node, x.shape, w, b), x)
    np.testing.assert_array_equal(got, eval_node(node, [x], {"w": w, "b": b}))


@pytest.mark.skipif(HOST_VNNI is None, reason="this CPU has no VNNI (test_kernels_vnni checks "
                    "the assembly)")
@pytest.mark.parametrize("lanes", [16, 8])
@pytest.mark.parametrize("x_shape,O,k,stride,pad,relu,zp,per", CONVS)
def test_vnni_conv2d_equals_oracle(rng, lanes, x_shape, O, k, stride, pad, relu, zp, per):
    node, x, w, b = _conv_node(rng, QOp.CONV2D, x_shape, O, k, stride, pad, relu, zp, per)
    got = run_kernel(vnni.conv2d(node, x.shape, w, b, lanes=lanes), x)
    np.testing.assert_array_equal(got, eval_node(node, [x], {"w": w, "b": b}))


@pytest.mark.parametrize("stride,relu,zp", [(1, True, 0), (2, False, 4)])
def test_depthwise_equals_oracle(rng, stride, relu, zp):
    node, x, w, b = _conv_node(rng, QOp.DEPTHWISE, (1, 24, 9, 9), 24, 3, stride, 1, relu, zp, True)
    got = run_kernel(kernels.depthwise(node, x.shape, w, b), x)
    np.testing.assert_array_equal(got, eval_node(node, [x], {"w": w, "b": b}))


@pytest.mark.parametrize("path", ["plain", "vnni"])
def test_dense_equals_oracle(rng, path):
    if path == "vnni" and HOST_VNNI is None:
        pytest.skip("this CPU has no VNNI")
    x = rng.integers(-128, 128, (2, 40)).astype(np.int8)
    w = rng.integers(-128, 128, (33, 40)).astype(np.int8)
    b = rng.integers(-2 ** 18, 2 ** 18, 33).astype(np.int32)
    node = QNode(QOp.DENSE, (0,), (2, 33), "int8", 0,
                 {"shift": 0, "relu": False, "fscale": _fscale(rng, 33)}, ("w", "b"), zp=-2)
    build = kernels.dense if path == "plain" else vnni.dense
    got = run_kernel(build(node, x.shape, w, b), x)
    np.testing.assert_array_equal(got, eval_node(node, [x], {"w": w, "b": b}))


def test_mean_equals_oracle(rng):
    x = rng.integers(-128, 128, (1, 40, 7, 7)).astype(np.int8)
    fs = float(ort_requant.mean_ratio(np.float32(0.02), np.float32(0.02), 49))
    node = QNode(QOp.MEAN, (0,), (1, 40, 1, 1), "int8", 0, {"fscale": fs, "zin": 3}, zp=3)
    got = run_kernel(kernels.mean(node, x.shape), x)
    want = eval_node(node, [x], {})
    np.testing.assert_array_equal(got, want)
    # the mean of (q - 3), requantized at the same scale, + 3: within one level of the exact
    exact = (x.astype(np.float64) - 3).mean(axis=(2, 3), keepdims=True) + 3
    assert np.abs(want - np.clip(np.rint(exact), -128, 127)).max() <= 1


def test_table_clamp_recognises_only_clamps():
    q = np.arange(-128, 128)
    assert kernels.table_clamp(tuple(np.clip(q, 0, 99))) == (0, 99)
    assert kernels.table_clamp(tuple(np.clip(q, -128, 127))) == (-128, 127)
    assert kernels.table_clamp(tuple(np.clip(q // 2, 0, 99))) is None     # rescales
    assert kernels.table_clamp(tuple(np.clip(-q, -128, 127))) is None     # decreasing


@pytest.mark.parametrize("table", ["clamp", "other"])
@pytest.mark.parametrize("path", ["plain", "vnni"])
def test_conv_fused_table_equals_oracle(rng, table, path):
    """A fused clamp table (Relu6 at one scale) narrows the epilogue's clip; any other table
    is read after it: both equal the oracle (requantize, then the table)."""
    if path == "vnni" and HOST_VNNI is None:
        pytest.skip("this CPU has no VNNI")
    node, x, w, b = _conv_node(rng, QOp.CONV2D, (1, 8, 6, 6), 16, 3, 1, 1, False, 2, True)
    q = np.arange(-128, 128)
    t = np.clip(q, 2, 90) if table == "clamp" else np.clip(q // 3 + 7, -128, 127)
    node = QNode(node.op, node.src, node.shape, "int8", 0, dict(node.attrs, table=tuple(int(v) for v in t)),
                 node.params, zp=node.zp)
    build = kernels.conv2d if path == "plain" else vnni.conv2d
    got = run_kernel(build(node, x.shape, w, b), x)
    want = eval_node(node, [x], {"w": w, "b": b})
    np.testing.assert_array_equal(got, want)
    assert len(np.unique(want)) > 10


@pytest.mark.skipif(HOST_VNNI is None, reason="this CPU has no VNNI")
@pytest.mark.parametrize("W", [32, 7, 70])    # epilogue: 16-column vectors, whole row, lanes
def test_vnni_conv2d_row_shapes_equal_oracle(rng, W):
    node, x, w, b = _conv_node(rng, QOp.CONV2D, (1, 8, 3, W), 24, 1, 1, 0, False, 1, True)
    got = run_kernel(vnni.conv2d(node, x.shape, w, b), x)
    np.testing.assert_array_equal(got, eval_node(node, [x], {"w": w, "b": b}))


def test_import_names_a_bad_requant_form():
    from compiler.graph import Graph
    from compiler.quant.qdq import import_qdq
    with pytest.raises(ValueError, match="requant must be one of 'integer', 'float', not 'fp32'"):
        import_qdq(Graph((), (), ()), {}, requant="fp32")
