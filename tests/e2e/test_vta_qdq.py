"""QDQ models (onnxruntime's quantize_static, QDQ format) on the accelerator at their own
scales: the module (tsim) is bit-exact with the quantized oracle and within 1 LSB of
onnxruntime's int8 outputs; power-of-two scales become plain shifts, others a pre-shift and
a multiplier (``compiler.quant.qdq``)."""
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import numpy_helper
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

from compiler import build_model
from compiler.quant import QOp, QuantizeError, run as run_oracle
from compiler.quant.qdq import model_weight
from driver.runtime import load_module
from tests.models.builders import OnnxBuilder, _io
from tests.models.oracle import ort_run

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


def _qdq(tmp_path, per_channel, symmetric=True):
    src, dst = tmp_path / "float.onnx", tmp_path / "qdq.onnx"
    onnx.save(_float_model(), src)
    kw = dict(activation_type=QuantType.QInt8, extra_options={"ActivationSymmetric": True}) \
        if symmetric else {}
    quantize_static(str(src), str(dst), _Reader(), quant_format=QuantFormat.QDQ,
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
    fast = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
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


@pytest.mark.parametrize("per_channel", [False, True])
def test_qdq_model_runs_at_its_own_scales(per_channel, tmp_path):
    qg, within = _check(_qdq(tmp_path, per_channel), tmp_path)
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


def test_asymmetric_activations_are_a_clear_error(tmp_path):
    model = _qdq(tmp_path, per_channel=False, symmetric=False)   # asymmetric: zero points
    with pytest.raises(QuantizeError, match=r"QuantizeLinear .*int8 with zero point -?\d+; the "
                                            r"accelerator's int8 is symmetric.*ActivationSymmetric"):
        build_model(model, target="vta")


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
