"""QDQ models (onnxruntime's quantize_static, QDQ format) on the accelerator at their own
scales and zero points: the module (tsim) is bit-exact with the quantized oracle and within
1 LSB of onnxruntime's int8 outputs; power-of-two scales become plain shifts, others a
pre-shift and a multiplier; asymmetric activations (quantize_static's defaults) keep their
zero points (``compiler.quant.qdq``)."""
import numpy as np
import onnx
import pytest
from onnx import numpy_helper
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

from compiler import build_model
from compiler.quant import QOp, QuantizeError, run as run_oracle
from compiler.quant.qdq import model_weight
from driver.runtime import load_module
from tests.models.builders import OnnxBuilder, _io
from tests.models.oracle import ort_run
from tests.models.ort_u8s8 import exact_session

SHAPE = (1, 3, 8, 8)


def _float_model():
    """conv 3 -> 16 (CPU: too few input channels), relu, conv 16 -> 16 + residual add, relu,
    max pool, global average pool, flatten, Gemm 16 -> 10 (the last three on the accelerator)."""
    b = OnnxBuilder(0)
    r1 = b.node("Relu", [b.conv("input", 3, 16, 3, bias=True)])
    a = b.node("Add", [b.conv(r1, 16, 16, 3, bias=True), r1])
    p = b.node("MaxPool", [b.node("Relu", [a])], kernel_shape=[2, 2], strides=[2, 2])
    f = b.node("Flatten", [b.node("GlobalAveragePool", [p])])
    y = b.dense(f, 16, 10)
    return b.model([_io("input", list(SHAPE))], [_io(y, None)], 13)


class _Reader(CalibrationDataReader):
    def __init__(self, seed=1, count=8):
        rng = np.random.default_rng(seed)
        self.it = iter([{"input": rng.standard_normal(SHAPE).astype(np.float32)}
                        for _ in range(count)])

    def get_next(self):
        return next(self.it, None)


def _qdq(tmp_path, per_channel, symmetric=True, fmt=QuantFormat.QDQ, model=None,
         activations=QuantType.QInt8):
    src, dst = tmp_path / "float.onnx", tmp_path / "qdq.onnx"
    onnx.save(model or _float_model(), src)
    kw = dict(activation_type=activations,
              extra_options={"ActivationSymmetric": True} if symmetric else {})
    quantize_static(str(src), str(dst), _Reader(), quant_format=fmt,
                    weight_type=QuantType.QInt8, per_channel=per_channel, **kw)
    return onnx.load(dst)


def _pow2_scales(model):
    """The model with every scale rounded to the nearest power of two."""
    for t in model.graph.initializer:
        if t.name.endswith("scale"):
            s = numpy_helper.to_array(t)
            t.CopyFrom(numpy_helper.from_array(
                (2.0 ** np.rint(np.log2(s))).astype(np.float32), t.name))
    return model


def _output_scale(model):
    out = model.graph.output[0].name
    dq = next(n for n in model.graph.node if n.output[0] == out and n.op_type == "DequantizeLinear")
    init = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    return float(init[dq.input[1]])


def _check(model, tmp_path, samples=4):
    """Module == oracle bit for bit; the int8 output levels of ours vs onnxruntime's, as the
    fractions within 1 LSB of its reference run (QDQ in float) and its optimized run (int8
    QLinear kernels)."""
    cm = build_model(model, target="vta")
    m = load_module(cm.save(str(tmp_path / "qdq.vtamod")), device="tsim")
    fast = exact_session(model)   # exact int32 sums on every x86 CPU (ort_u8s8)
    ys, rng = _output_scale(model), np.random.default_rng(7)
    diffs = {"reference": [], "optimized": []}
    for _ in range(samples):
        x = rng.standard_normal(SHAPE).astype(np.float32)
        (got,) = m(x)
        np.testing.assert_array_equal(got, run_oracle(cm.plan.qgraph, {"input": x})[0])
        q = np.rint(got / ys)
        diffs["reference"].append(np.abs(q - np.rint(ort_run(model, {"input": x})[0] / ys)))
        diffs["optimized"].append(np.abs(q - np.rint(fast.run(None, {"input": x})[0] / ys)))
    within = {k: float(np.mean(np.concatenate(v) <= 1)) for k, v in diffs.items()}
    return cm.plan.qgraph, within


@pytest.mark.parametrize("per_channel, activations", [(False, QuantType.QInt8),
                                                      (True, QuantType.QInt8),
                                                      (True, QuantType.QUInt8)])  # zero point 128
def test_qdq_model_runs_at_its_own_scales(per_channel, activations, tmp_path):
    qg, within = _check(_qdq(tmp_path, per_channel, activations=activations), tmp_path)
    gemms = [n for n in qg.nodes if n.op in (QOp.CONV2D, QOp.DENSE)]
    assert [(n.op, n.target) for n in gemms] == [(QOp.CONV2D, "cpu"), (QOp.CONV2D, "vta"),
                                                 (QOp.DENSE, "vta")]
    for n in gemms:   # onnxruntime's scales are not powers of two: multipliers, tiny error
        assert n.attrs["mult"] is not None and n.attrs["err"] < 0.1, n.attrs
        assert isinstance(n.attrs["shift"], tuple) == per_channel
    assert within == {"reference": 1.0, "optimized": 1.0}, within


def test_power_of_two_scales_are_shifts(tmp_path):
    qg, within = _check(_pow2_scales(_qdq(tmp_path, per_channel=True)), tmp_path)
    gemms = [n for n in qg.nodes if n.op in (QOp.CONV2D, QOp.DENSE)]
    assert len(gemms) == 3 and all("mult" not in n.attrs for n in gemms)
    assert all(isinstance(n.exp, int) for n in qg.nodes if n.dtype == "int8")
    assert [n.target for n in qg.nodes if n.op is QOp.ADD] == ["vta"]   # residual add on int8
    assert within == {"reference": 1.0, "optimized": 1.0}, within


def test_qlinear_conv_and_matmul_import_as_qdq(tmp_path):
    """QOperator format (QLinearConv, QLinearMatMul): the same form, the same checks."""
    b = OnnxBuilder(0)
    r1 = b.node("Relu", [b.conv("input", 3, 16, 3, bias=True)])
    r2 = b.node("Relu", [b.conv(r1, 16, 16, 3, bias=True)])
    f = b.node("Flatten", [b.node("GlobalAveragePool", [r2])])
    y = b.node("MatMul", [f, b.const(b.randn(16, 10, std=0.3))])
    model = _qdq(tmp_path, True, fmt=QuantFormat.QOperator,
                 model=b.model([_io("input", list(SHAPE))], [_io(y, None)], 13))
    ops = {n.op_type for n in model.graph.node}
    assert {"QLinearConv", "QLinearMatMul"} <= ops and "Conv" not in ops
    cpu = load_module(build_model(model, target="llvm").save(str(tmp_path / "qop.mod")))
    x = np.random.default_rng(3).standard_normal(SHAPE).astype(np.float32)
    diff = np.abs(cpu(x)[0] - ort_run(model, {"input": x})[0])   # the float CPU route
    assert diff.max() <= _output_scale(model) * 1.01 and np.mean(diff == 0) > 0.9
    qg, within = _check(model, tmp_path)
    gemms = [(n.op, n.target, n.attrs["relu"]) for n in qg.nodes if n.op in (QOp.CONV2D, QOp.DENSE)]
    assert gemms == [(QOp.CONV2D, "cpu", True), (QOp.CONV2D, "vta", True), (QOp.DENSE, "vta", False)]
    assert within == {"reference": 1.0, "optimized": 1.0}, within


@pytest.mark.parametrize("per_channel, activations", [(False, QuantType.QUInt8),   # defaults
                                                      (True, QuantType.QUInt8),
                                                      (True, QuantType.QInt8)])
def test_asymmetric_activations_keep_their_zero_points(per_channel, activations, tmp_path):
    """quantize_static's default asymmetric activations: the zero points ride on the int8
    values; a padded conv reads its input padded with the zero point (INT8 PAD) and runs
    unpadded on the accelerator, which adds the output's zero point after requantizing."""
    model = _qdq(tmp_path, per_channel, symmetric=False, activations=activations)
    init = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    zps = [int(init[n.input[2]]) for n in model.graph.node if n.op_type == "QuantizeLinear"]
    assert any(z not in (0, 128) for z in zps), zps         # truly asymmetric
    qg, within = _check(model, tmp_path)
    gemms = [n for n in qg.nodes if n.op in (QOp.CONV2D, QOp.DENSE)]
    assert [(n.op, n.target) for n in gemms] == [(QOp.CONV2D, "cpu"), (QOp.CONV2D, "vta"),
                                                 (QOp.DENSE, "vta")]
    assert any(n.zp != 0 for n in gemms)
    for conv in gemms[:2]:   # 3x3 pad 1: padded with the input's zero point first
        pad = qg.nodes[conv.src[0]]
        assert conv.attrs["padding"] == (0, 0) and pad.attrs["op"] == "PAD"
        assert pad.attrs["attrs"]["value"] == pad.zp == qg.nodes[pad.src[0]].zp
    assert within == {"reference": 1.0, "optimized": 1.0}, within


def test_zero_point_folds_into_the_bias_exactly():
    """dense of int8 x at zero point zx: the bias holds -zx * sum(w) per output channel, so
    the oracle's integers equal sum((x - zx) * w) requantized, for every input level."""
    from onnx import TensorProto, helper
    from compiler.build_model import import_model
    from compiler.quant.qdq import import_qdq
    sx, sw, sy, zx, zy = 0.02, 0.01, 0.013, 97, 200
    w = np.random.default_rng(0).integers(-127, 128, (16, 3)).astype(np.int8)
    c = lambda v, n: numpy_helper.from_array(np.asarray(v), n)  # noqa: E731
    nodes = [helper.make_node("QuantizeLinear", ["x", "sx", "zx"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "sx", "zx"], ["xd"]),
             helper.make_node("DequantizeLinear", ["w", "sw", "z"], ["wd"]),
             helper.make_node("MatMul", ["xd", "wd"], ["m"]),
             helper.make_node("QuantizeLinear", ["m", "sy", "zy"], ["yq"]),
             helper.make_node("DequantizeLinear", ["yq", "sy", "zy"], ["y"])]
    g = helper.make_graph(nodes, "zp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [256, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [256, 3])],
                          [c(np.float32(sx), "sx"), c(np.float32(sw), "sw"), c(np.float32(sy), "sy"),
                           c(np.uint8(zx), "zx"), c(np.uint8(zy), "zy"), c(np.int8(0), "z"), c(w, "w")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    qg = import_qdq(*import_model(model))
    dense, = [n for n in qg.nodes if n.op is QOp.DENSE]
    assert dense.zp == zy - 128 and qg.nodes[dense.src[0]].zp == zx - 128
    levels = np.random.default_rng(1).permuted(np.tile(np.arange(256), (16, 1)), axis=1).T
    x = (levels - zx).astype(np.float32) * np.float32(sx)          # every uint8 level per column
    got = np.rint(run_oracle(qg, {"x": x})[0] / np.float32(sy)) + zy
    ref = np.rint(ort_run(model, {"x": x})[0] / np.float32(sy)) + zy
    assert np.abs(got - ref).max() <= 1 and np.mean(got == ref) > 0.95
    assert got.min() == 0 and got.max() == 255                          # both ends clip


def test_model_weight_recovers_int8_and_scales():
    rng = np.random.default_rng(0)
    q = rng.integers(-127, 128, (4, 6)).astype(np.int8)
    q[:, 0] = 127
    s = np.array([0.013, 0.2, 0.0071, 1.5], np.float32)
    got, e = model_weight((q * s[:, None]).astype(np.float32), "w")
    np.testing.assert_array_equal(got, q)
    np.testing.assert_allclose(2.0 ** -e, s, rtol=1e-6)
    got, e = model_weight((q * np.float32(0.25)).astype(np.float32), "w")
    assert e == 2 and np.array_equal(got, q)
    with pytest.raises(QuantizeError, match="w: the weights are not int8 values times a"):
        model_weight(rng.standard_normal((4, 6)).astype(np.float32), "w")


def test_per_tensor_pre_shift_covers_the_widest_channel():
    """A per-tensor weight whose channels differ 127x in size: one pre-shift for the tensor,
    wide enough that the widest channel's product stays in int32 (exact within 1 LSB)."""
    from onnx import TensorProto, helper
    from compiler.build_model import import_model
    from compiler.quant.qdq import import_qdq
    sx, sw, sy = 0.0123, 0.0071, 0.011
    w = np.ones((64, 2), np.int8)
    w[:, 1] = 127
    c = lambda v, n: numpy_helper.from_array(np.asarray(v), n)  # noqa: E731
    nodes = [helper.make_node("QuantizeLinear", ["x", "sx", "z"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "sx", "z"], ["xd"]),
             helper.make_node("DequantizeLinear", ["w", "sw", "z"], ["wd"]),
             helper.make_node("MatMul", ["xd", "wd"], ["m"]),
             helper.make_node("QuantizeLinear", ["m", "sy", "z"], ["yq"]),
             helper.make_node("DequantizeLinear", ["yq", "sy", "z"], ["y"])]
    g = helper.make_graph(nodes, "pt", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])],
                          [c(np.float32(sx), "sx"), c(np.float32(sw), "sw"), c(np.float32(sy), "sy"),
                           c(np.int8(0), "z"), c(w, "w")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    qg = import_qdq(*import_model(model))
    dense, = [n for n in qg.nodes if n.op is QOp.DENSE]
    assert isinstance(dense.attrs["shift"], int) and dense.attrs["shift"] >= 4
    for v in (1.0, -1.0, 0.3):
        x = np.full((1, 64), v * 127 * sx, np.float32)
        got = np.rint(run_oracle(qg, {"x": x})[0] / np.float32(sy))
        ref = np.rint(ort_run(model, {"x": x})[0] / np.float32(sy))
        assert np.abs(got - ref).max() <= 1, (v, got, ref)


def test_vta_compile_prints_each_multiplier_its_error_and_zero_point(tmp_path):
    from tests.cli_util import run_cli
    model = _qdq(tmp_path, per_channel=False, symmetric=False, activations=QuantType.QUInt8)
    onnx.save(model, tmp_path / "m.onnx")
    r = run_cli("compile", tmp_path / "m.onnx", "-o", tmp_path / "m.vtamod", "--target", "vta", "--quiet")
    assert r.exit_code == 0, r.output
    assert "QDQ model: quantized at its own scales (no calibration)" in r.output
    lines = [ln for ln in r.output.splitlines() if ln.startswith("  vta  ")]
    assert len(lines) == 2 and all("(pre-shift approximation: error <= 0.0" in ln for ln in lines), lines
    init = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    dq = next(n for n in model.graph.node if n.output[0] == model.graph.output[0].name)
    assert lines[1].endswith(f" + zero point {int(init[dq.input[2]]) - 128}"), lines   # uint8 -> int8


@pytest.mark.parametrize("symmetric", [True, False])
def test_grouped_qdq_conv_runs_group_by_group(symmetric, tmp_path):
    """A conv of 2 groups of 16 channels: one accelerator conv per group, each with its
    output channels' multipliers (and, asymmetric, the zero points)."""
    b = OnnxBuilder(0)
    x = b.node("Relu", [b.conv("input", 3, 32, 3, bias=True)])
    y = b.conv(x, 32, 32, 3, groups=2, bias=True)
    model = _qdq(tmp_path, True, symmetric, model=b.model([_io("input", list(SHAPE))], [_io(y, None)], 13),
                 activations=QuantType.QInt8 if symmetric else QuantType.QUInt8)
    qg, within = _check(model, tmp_path, samples=2)
    groups = [n for n in qg.nodes if n.op is QOp.CONV2D and n.name.startswith("conv1.group")]
    assert [n.target for n in groups] == ["vta", "vta"]
    assert all(len(n.attrs["mult"]) == 16 for n in groups)
    assert within == {"reference": 1.0, "optimized": 1.0}, within
