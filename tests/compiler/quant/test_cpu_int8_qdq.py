"""QDQ models (onnxruntime quantize_static, QDQ, per-tensor and per-channel) in int8 on the
CPU at their own scales (``compiler.quant.qdq`` -> ``cpu_int8``): onnxruntime's float32
requantization in the VNNI kernels' epilogue, bit-exact with the quantized oracle and with
onnxruntime's int8 output."""
import numpy as np
import onnx
import pytest
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

from compiler import build_model
from compiler.quant import QOp, run as run_oracle
from driver.runtime import load_module
from tests.models.builders import OnnxBuilder, _io
from tests.models.ort_u8s8 import exact_session

SHAPE = (1, 8, 8, 8)


def _float_model():
    """conv 8 -> 16, relu, conv 16 -> 16 + residual add, relu, global average pool,
    flatten, Gemm 16 -> 10."""
    b = OnnxBuilder(3)
    r1 = b.node("Relu", [b.conv("input", 8, 16, 3, bias=True)])
    a = b.node("Add", [b.conv(r1, 16, 16, 3, bias=True), r1])
    f = b.node("Flatten", [b.node("GlobalAveragePool", [b.node("Relu", [a])])])
    return b.model([_io("input", list(SHAPE))], [_io(b.dense(f, 16, 10), None)], 13)


class _Reader(CalibrationDataReader):
    def __init__(self):
        rng = np.random.default_rng(1)
        self.it = iter([{"input": rng.standard_normal(SHAPE).astype(np.float32)} for _ in range(8)])

    def get_next(self):
        return next(self.it, None)


@pytest.mark.parametrize("per_channel, symmetric", [(False, True), (True, True), (True, False)])
def test_qdq_model_int8_on_cpu(tmp_path, per_channel, symmetric):
    """symmetric False: quantize_static's defaults, uint8 activations at zero points."""
    src, dst = tmp_path / "float.onnx", tmp_path / "qdq.onnx"
    onnx.save(_float_model(), src)
    kw = dict(activation_type=QuantType.QInt8, extra_options={"ActivationSymmetric": True}) \
        if symmetric else {}
    quantize_static(str(src), str(dst), _Reader(), quant_format=QuantFormat.QDQ,
                    per_channel=per_channel, weight_type=QuantType.QInt8, **kw)
    model = onnx.load(dst)
    cm = build_model(model, target="llvm", quantize="int8")
    gemms = [n for n in cm.plan.qgraph.nodes if n.op in (QOp.CONV2D, QOp.DENSE)]
    assert len(gemms) == 3 and all(n.attrs.get("fscale") is not None for n in gemms)
    assert any(n.zp != 0 for n in gemms) != symmetric
    sess = exact_session(model)
    m, rng = load_module(cm), np.random.default_rng(7)
    for _ in range(3):
        x = rng.standard_normal(SHAPE).astype(np.float32)
        (got,) = m(x)
        np.testing.assert_array_equal(got, run_oracle(cm.plan.qgraph, {"input": x})[0])
        # onnxruntime's int8 kernels, bit for bit (compiler.quant.ort_requant)
        np.testing.assert_array_equal(got, sess.run(None, {"input": x})[0])
