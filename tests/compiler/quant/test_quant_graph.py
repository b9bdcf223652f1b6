"""Quantization: exponents, integer semantics of the quantized ops, calibration, digits accuracy."""
import numpy as np
import pytest

from compiler.frontend.onnx import from_onnx
from compiler.graph import input_node, make, param_node, Op, Graph
from compiler.quant import QOp, QuantizeError, exponent_for, quantize, run
from compiler.quant.qgraph import QNode, eval_node, quantize_array
from compiler.topi.vta.layout import conv2d_reference

DIGITS = "examples/digits/digits_cnn.onnx"


@pytest.mark.parametrize("maxabs, exp", [(127.0, 0), (1.0, 6), (0.99, 7), (200.0, -1), (0.0, 7)])
def test_exponent_for(maxabs, exp):
    assert exponent_for(maxabs) == exp
    if maxabs:
        assert maxabs * 2.0 ** exp <= 127


def test_exponent_rejects_non_finite():
    with pytest.raises(QuantizeError, match="non-finite"):
        exponent_for(float("nan"))


def test_add_rounds_shifts_and_clips():
    n = QNode(QOp.ADD, (0, 1), (4,), "int8", 0, {"la": 1, "lb": 0, "shift": 2, "relu": False})
    a = np.array([10, -10, 127, 1], np.int8)
    b = np.array([3, -3, 127, 1], np.int8)
    # ((a << 1) + b + 2) >> 2
    assert eval_node(n, [a, b], {}).tolist() == [6, -6, 95, 1]
    n2 = QNode(QOp.ADD, (0, 1), (4,), "int8", 0, {"la": 0, "lb": 0, "shift": 0, "relu": True})
    assert eval_node(n2, [a, b], {}).tolist() == [13, 0, 127, 2]


def test_mean_rounds_to_nearest():
    n = QNode(QOp.MEAN, (0,), (1, 2, 1, 1), "int8", 3)
    x = np.array([[[[1, 2]]], [[[-3, -4]]]], np.int8).reshape(1, 2, 1, 2)
    assert eval_node(n, [x], {}).ravel().tolist() == [2, -3]  # (3+1)//2, (-7+1)//2


def test_conv_node_matches_accelerator_reference(rng):
    x = rng.integers(-128, 128, (2, 16, 5, 5), dtype=np.int8)
    w = rng.integers(-128, 128, (8, 16, 3, 3), dtype=np.int8)
    b = rng.integers(-5000, 5000, 8).astype(np.int32)
    n = QNode(QOp.CONV2D, (0,), (2, 8, 5, 5), "int8", 0,
              {"strides": (1, 1), "padding": (1, 1), "shift": 9, "relu": True}, ("w", "b"))
    y = eval_node(n, [x], {"w": w, "b": b})
    np.testing.assert_array_equal(y, conv2d_reference(x, w, b, (1, 1), (1, 1), 9, True))


def _small_graph(rng):
    x = input_node("x", (2, 16, 6, 6))
    w = rng.standard_normal((16, 16, 3, 3)).astype(np.float32) * 0.2
    c = make(Op.CONV2D, x, param_node("w", w), strides=(1, 1), pads=(1, 1, 1, 1))
    bias = rng.standard_normal((16, 1, 1)).astype(np.float32) * 0.1
    y = make(Op.RELU, make(Op.ADD, c, param_node("b", bias)))
    z = make(Op.RELU, make(Op.ADD, y, x))                     # residual
    p = make(Op.GLOBAL_AVG_POOL, z)
    s = make(Op.SOFTMAX, make(Op.RESHAPE, p, newshape=(2, 16)), axis=1)
    return Graph((x,), (s,), ("prob",)), {"w": w, "b": bias}


def test_quantize_patterns_and_closeness(rng):
    g, params = _small_graph(rng)
    xs = rng.standard_normal((6, 16, 6, 6)).astype(np.float32)
    qg = quantize(g, params, {"x": xs})
    ops = [n.op for n in qg.nodes]
    assert ops == [QOp.INPUT, QOp.QUANTIZE, QOp.CONV2D, QOp.ADD, QOp.MEAN, QOp.INT8,
                   QOp.DEQUANTIZE, QOp.FLOAT]
    conv = qg.nodes[2]
    assert conv.attrs["relu"] and conv.params and qg.params[conv.params[0]].dtype == np.int8
    assert qg.params[conv.params[1]].dtype == np.int32
    from compiler.graph import run as frun
    ref = frun(g, params, {"x": xs[:2]})[0]
    got = run(qg, {"x": xs[:2]})[0]
    assert got.dtype == np.float32 and np.abs(got - ref).max() < 0.05


def test_resnet18_batch_norm_folded_and_int8_tracks_float():
    from tests.models.builders import build_resnet18
    g, p = from_onnx(build_resnet18(size=32), input_shapes={"input": (1, 3, 32, 32)})
    qg = quantize(g, p, {"input": np.random.default_rng(0).standard_normal((2, 3, 32, 32))})
    names = {n.attrs.get("op") for n in qg.nodes if n.op in (QOp.FLOAT, QOp.INT8)}
    assert "BATCH_NORM" not in names
    assert sum(n.op is QOp.CONV2D for n in qg.nodes) == 20
    assert sum(n.op is QOp.ADD for n in qg.nodes) == 8
    from compiler.graph import optimize, run as frun
    opt = optimize(g, p)
    x = np.random.default_rng(1).standard_normal((1, 3, 32, 32)).astype(np.float32)
    f = frun(opt.graph, opt.params, {"input": x})[0].ravel()
    q = run(qg, {"input": x})[0].ravel()
    assert f @ q / np.linalg.norm(f) / np.linalg.norm(q) > 0.98  # int8 tracks float


def test_digits_quantized_accuracy_within_one_point():
    d = np.load("examples/digits/heldout.npz")
    x = (d["images"].astype(np.float32) / 16).reshape(-1, 1, 8, 8)
    g, p = from_onnx(DIGITS, input_shapes={"image": (len(x), 1, 8, 8)})
    qg = quantize(g, p, {"image": x})
    acc = (run(qg, {"image": x})[0].argmax(1) == d["labels"]).mean()
    assert acc >= 0.9833 - 0.01


def test_quantize_array_rounds_half_even_and_saturates():
    assert quantize_array(np.array([0.5, 1.5, -300.0, 300.0]), 0).tolist() == [0, 2, -128, 127]


def _int8_or_float(op, rng, **attrs):
    """The QOp a single data-movement op over two differently scaled inputs becomes."""
    x = input_node("x", (1, 4, 3, 3))
    params = {}
    if op is Op.CONCAT:
        params["k"] = np.full((1, 1, 1, 1), attrs.pop("k"), np.float32)
        big = make(Op.MUL, x, param_node("k", params["k"]))
        n = make(op, make(Op.RELU, x), make(Op.RELU, big), axis=1)
    else:
        n = make(op, make(Op.RELU, x), **attrs)
    g = Graph((x,), (n,), ("y",))
    qg = quantize(g, params, {"x": rng.standard_normal((4, 4, 3, 3)).astype(np.float32)})
    from compiler.graph import run as frun
    xs = rng.standard_normal((1, 4, 3, 3)).astype(np.float32)
    assert np.abs(run(qg, {"x": xs})[0] - frun(g, params, {"x": xs})[0]).max() < 0.2
    return [(q.op, q.attrs.get("op")) for q in qg.nodes if q.op in (QOp.INT8, QOp.FLOAT)]


def test_nearest_resize_and_equal_exponent_concat_stay_int8(rng):
    resize = dict(mode="nearest", coordinate_transformation_mode="asymmetric",
                  nearest_mode="floor", scales=(1.0, 1.0, 2.0, 2.0), sizes=(1, 4, 6, 6))
    assert _int8_or_float(Op.RESIZE, rng, **resize)[-1] == (QOp.INT8, "RESIZE")
    linear = dict(resize, mode="linear", coordinate_transformation_mode="half_pixel")
    assert _int8_or_float(Op.RESIZE, rng, **linear)[-1] == (QOp.FLOAT, "RESIZE")
    assert _int8_or_float(Op.CONCAT, rng, k=1.0)[-1] == (QOp.INT8, "CONCAT")
    assert _int8_or_float(Op.CONCAT, rng, k=8.0)[-1] == (QOp.FLOAT, "CONCAT")


def test_per_channel_weight_exponents(rng):
    g, params = _small_graph(rng)
    params["w"][3] *= 0.01                     # one channel 100x smaller than the rest
    xs = rng.standard_normal((6, 16, 6, 6)).astype(np.float32)
    per_t, per_c = quantize(g, params, {"x": xs}), quantize(g, params, {"x": xs}, per_channel=True)
    conv_t, conv_c = per_t.nodes[2], per_c.nodes[2]
    assert isinstance(conv_t.attrs["ew"], int)
    ew = conv_c.attrs["ew"]
    assert len(ew) == 16 and len(conv_c.attrs["shift"]) == 16
    assert ew[3] >= max(ew) - 1 and ew[3] >= min(ew) + 6      # 2**-6.6: its own scale
    assert all(e == s - conv_c.attrs["shift"][0] + ew[0] for e, s in zip(ew, conv_c.attrs["shift"]))
    w = per_c.params[conv_c.params[0]]
    assert np.abs(w[3]).max() >= 64                           # uses the int8 range
    assert np.abs(per_t.params[conv_t.params[0]][3]).max() <= 2
    from compiler.graph import run as frun
    ref = frun(g, params, {"x": xs[:2]})[0]
    assert np.abs(run(per_c, {"x": xs[:2]})[0] - ref).max() < 0.05


def test_digits_per_channel_accuracy_at_least_per_tensor():
    d = np.load("examples/digits/heldout.npz")
    x = (d["images"].astype(np.float32) / 16).reshape(-1, 1, 8, 8)
    c = np.load("examples/digits/calib.npz")["images"].astype(np.float32) / 16
    c = c.reshape(-1, 1, 8, 8)
    g, p = from_onnx(DIGITS, input_shapes={"image": (len(x), 1, 8, 8)})
    acc = {pc: (run(quantize(g, p, {"image": c}, per_channel=pc), {"image": x})[0].argmax(1)
                == d["labels"]).mean() for pc in (False, True)}
    assert acc[True] >= acc[False] and acc[True] >= 0.9833 - 0.005, acc
