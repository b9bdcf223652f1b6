"""Unary ops between two scales in a QDQ model (MobileNetV2's Clip(0, 6)) as int8 LUTs
(``compiler.quant.lut``): each table equals onnxruntime's DequantizeLinear -> op ->
QuantizeLinear on all 256 inputs, and a model's LUT nodes run bit-exact with the oracle."""
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
from quant_kernel_run import run_kernel

from compiler import build_model
from compiler.graph import Op
from compiler.quant import QOp, run as run_oracle
from compiler.quant import kernels
from compiler.quant.lut import clip_params, fuse_tables, unary_table
from compiler.quant.qgraph import QGraph, QNode, eval_node
from compiler.quant.qdq import exponent_of_scale
from driver.runtime import load_module
from tests.models.builders import OnnxBuilder, _io
from tests.models.ort_u8s8 import exact_session

SHAPE = (1, 8, 8, 8)


def _ort_chain(op, attrs_inputs, s_in, z_in, s_out, z_out):
    """onnxruntime on int8 -128..127: DequantizeLinear -> op -> QuantizeLinear."""
    inits = [numpy_helper.from_array(np.array(v, dt), n) for n, v, dt in (
        ("si", s_in, np.float32), ("zi", z_in, np.int8), ("so", s_out, np.float32),
        ("zo", z_out, np.int8))] + [numpy_helper.from_array(np.array(v, np.float32), n)
                                    for n, v in attrs_inputs]
    g = helper.make_graph(
        [helper.make_node("DequantizeLinear", ["q", "si", "zi"], ["x"]),
         helper.make_node(op, ["x"] + [n for n, _ in attrs_inputs], ["y"]),
         helper.make_node("QuantizeLinear", ["y", "so", "zo"], ["out"])], "chain",
        [helper.make_tensor_value_info("q", TensorProto.INT8, [256])],
        [helper.make_tensor_value_info("out", TensorProto.INT8, [256])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"q": np.arange(-128, 128, dtype=np.int8)})[0]


@pytest.mark.parametrize("s_in, z_in, s_out, z_out", [
    (0.0731, 0, 6 / 127, 0), (0.011, 3, 0.0472, -128), (1 / 64, 0, 1 / 32, 0), (0.2, -5, 0.013, 7)])
def test_clip_table_equals_onnxruntime(s_in, z_in, s_out, z_out):
    s_in, s_out = float(np.float32(s_in)), float(np.float32(s_out))
    got = unary_table(Op.CLIP, {"min": 0.0, "max": 6.0}, exponent_of_scale(s_in), z_in,
                      exponent_of_scale(s_out), z_out)
    want = _ort_chain("Clip", [("lo", 0.0), ("hi", 6.0)], s_in, z_in, s_out, z_out)
    np.testing.assert_array_equal(np.array(got), want)


@pytest.mark.parametrize("s_in, z_in, s_out, z_out, lo, hi", [
    (0.0731, 0, 6 / 127, 0, 0.0, 6.0), (0.011, 3, 0.0472, -128, 0.0, 6.0),
    (0.2, -5, 0.013, 7, -1.0, None)])
def test_clip_kernel_computes_its_table(s_in, z_in, s_out, z_out, lo, hi):
    ei, eo = exponent_of_scale(float(np.float32(s_in))), exponent_of_scale(float(np.float32(s_out)))
    attrs = {"min": lo, "max": hi}
    node = QNode(QOp.LUT, (0,), (256,), "int8", eo, {
        "table": unary_table(Op.CLIP, attrs, ei, z_in, eo, z_out),
        "clip": clip_params(attrs, ei, z_in, eo, z_out)}, zp=z_out)
    kd = kernels.lut(node)
    assert kd.constants == []                          # arithmetic, no table read
    x = np.arange(-128, 128, dtype=np.int8)
    np.testing.assert_array_equal(run_kernel(kd, x), eval_node(node, [x], {}))


def test_only_a_conv_read_by_the_lut_alone_takes_it():
    table = tuple(range(-128, 128))
    conv = QNode(QOp.CONV2D, (0,), (1, 4, 2, 2), "int8", 3, {"shift": 1}, ("w", "b"))
    lut = QNode(QOp.LUT, (1,), (1, 4, 2, 2), "int8", 5, {"table": table, "clip": (1, 0, 0, 6, 1, 0)}, zp=2)
    inp = QNode(QOp.INPUT, (), (1, 4, 2, 2), "int8", 3)
    alone = fuse_tables(QGraph([inp, conv, lut], [0], [2], ["y"], {}))
    assert [n.op for n in alone.nodes] == [QOp.INPUT, QOp.CONV2D] and alone.outputs == [1]
    assert alone.nodes[1].exp == 5 and alone.nodes[1].zp == 2 and alone.nodes[1].attrs["table"] == table
    shared = fuse_tables(QGraph([inp, conv, lut], [0], [2, 1], ["y", "c"], {}))   # conv is an output
    assert [n.op for n in shared.nodes] == [QOp.INPUT, QOp.CONV2D, QOp.LUT]


def test_sigmoid_table_equals_onnxruntime():
    s_in, s_out = float(np.float32(0.05)), float(np.float32(1 / 255))
    got = unary_table(Op.SIGMOID, {}, exponent_of_scale(s_in), 0, exponent_of_scale(s_out), -128)
    np.testing.assert_array_equal(np.array(got), _ort_chain("Sigmoid", [], s_in, 0, s_out, -128))


class _Reader(CalibrationDataReader):
    def __init__(self):
        rng = np.random.default_rng(1)
        self.it = iter([{"input": rng.standard_normal(SHAPE).astype(np.float32)} for _ in range(8)])

    def get_next(self):
        return next(self.it, None)


def test_relu6_model_runs_clip_as_lut(tmp_path):
    """conv 8 -> 16, Clip(0, 6), conv 16 -> 16, Clip(0, 6), + the first Clip, global average
    pool: both Clips become LUTs folded into their convs' epilogues (none in float), the
    residual add a RESCALE_ADD, bit-exact with the oracle and with onnxruntime."""
    b = OnnxBuilder(3)
    lo, hi = b.const(np.array(0.0, np.float32)), b.const(np.array(6.0, np.float32))
    c1 = b.node("Clip", [b.conv("input", 8, 16, 3, bias=True), lo, hi])
    c2 = b.node("Clip", [b.conv(c1, 16, 16, 3, bias=True), lo, hi])
    src, dst = tmp_path / "float.onnx", tmp_path / "qdq.onnx"
    res = b.node("Add", [c2, c1])
    onnx.save(b.model([_io("input", list(SHAPE))], [_io(b.node("GlobalAveragePool", [res]), None)],
                      13), src)
    quantize_static(str(src), str(dst), _Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                    extra_options={"ActivationSymmetric": True})
    model = onnx.load(dst)
    cm = build_model(model, target="llvm", quantize="int8")
    qg = cm.plan.qgraph
    assert sum(n.op is QOp.CONV2D and "clip" in n.attrs for n in qg.nodes) == 2
    assert not any(n.op is QOp.LUT for n in qg.nodes)
    assert sum(n.op is QOp.RESCALE_ADD for n in qg.nodes) == 1
    assert not any(n.op is QOp.FLOAT and n.attrs["op"] in ("CLIP", "ADD") for n in qg.nodes)
    sess = exact_session(model)
    m, rng = load_module(cm), np.random.default_rng(7)
    for _ in range(2):
        x = rng.standard_normal(SHAPE).astype(np.float32)
        (got,) = m(x)
        np.testing.assert_array_equal(got, run_oracle(qg, {"input": x})[0])
        np.testing.assert_array_equal(got, sess.run(None, {"input": x})[0])   # onnxruntime's bits


@pytest.mark.parametrize("stride, symmetric", [(1, True), (2, True), (1, False)])
def test_depthwise_model_runs_in_int8(tmp_path, stride, symmetric):
    """conv 8 -> 16, Clip(0, 6), depthwise 3x3 (pad 1), Clip(0, 6), conv 1x1 16 -> 8: the
    depthwise conv becomes a DEPTHWISE node, nothing runs in float, bit-exact with the
    oracle and with onnxruntime (symmetric False: uint8 activations at zero points)."""
    b = OnnxBuilder(5)
    lo, hi = b.const(np.array(0.0, np.float32)), b.const(np.array(6.0, np.float32))
    c1 = b.node("Clip", [b.conv("input", 8, 16, 3, bias=True), lo, hi])
    d = b.node("Clip", [b.conv(c1, 16, 16, 3, stride=stride, groups=16, bias=True), lo, hi])
    y = b.conv(d, 16, 8, 1, bias=True)
    src, dst = tmp_path / "float.onnx", tmp_path / "qdq.onnx"
    onnx.save(b.model([_io("input", list(SHAPE))], [_io(y, None)], 13), src)
    kw = dict(activation_type=QuantType.QInt8, extra_options={"ActivationSymmetric": True}) \
        if symmetric else {}
    quantize_static(str(src), str(dst), _Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    weight_type=QuantType.QInt8, **kw)
    model = onnx.load(dst)
    cm = build_model(model, target="llvm", quantize="int8")
    qg = cm.plan.qgraph
    assert sum(n.op is QOp.DEPTHWISE for n in qg.nodes) == 1
    assert not any(n.op is QOp.FLOAT and n.attrs["op"] != "PARAM" for n in qg.nodes)
    sess = exact_session(model)
    m, rng = load_module(cm), np.random.default_rng(7)
    for _ in range(2):
        x = rng.standard_normal(SHAPE).astype(np.float32)
        (got,) = m(x)
        np.testing.assert_array_equal(got, run_oracle(qg, {"input": x})[0])
        np.testing.assert_array_equal(got, sess.run(None, {"input": x})[0])   # onnxruntime's bits
