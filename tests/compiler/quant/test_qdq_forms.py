"""An inverted-residual block (MobileNetV2's: a tensor read by both a conv and the residual
add) in the two QDQ forms that ``bench/int8_cpu.py`` measures, bit for bit against
onnxruntime's all-integer execution of the same model.

onnxruntime on x86-64 turns an int8 Q -> DQ pair into uint8 only where the Q feeds one DQ
(``QDQS8ToU8Transformer``), so with int8 activations (``s8s8``, quantize_static's
defaults) the fanned-out tensor stays int8, and the convs and the add whose input and
output types then differ run DQ -> float32 -> Q; ``session.qdqisint8allowed=1`` fuses
them all. With uint8 activations (``u8s8``) its default session fuses them all, the add
into QLinearAdd, whose float32 formula differs from the DQ -> Add -> Q chain's
(``compiler.quant.ort_requant``)."""
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

from compiler import build_model
from compiler.quant import QOp, run as run_oracle
from driver.runtime import load_module
from tests.models.builders import OnnxBuilder, _io
from tests.models.ort_u8s8 import exact_session

SHAPE = (1, 8, 8, 8)


def _block_model() -> onnx.ModelProto:
    """conv 8 -> 16 (t); t -> conv 1x1 16 -> 32, Clip(0, 6), depthwise 3x3, Clip(0, 6),
    conv 1x1 32 -> 16, + t; global average pool."""
    b = OnnxBuilder(11)
    lo, hi = b.const(np.array(0.0, np.float32)), b.const(np.array(6.0, np.float32))
    t = b.conv("input", 8, 16, 3, bias=True)
    e = b.node("Clip", [b.conv(t, 16, 32, 1, bias=True), lo, hi])
    d = b.node("Clip", [b.conv(e, 32, 32, 3, groups=32, bias=True), lo, hi])
    y = b.node("Add", [b.conv(d, 32, 16, 1, bias=True), t])
    return b.model([_io("input", list(SHAPE))], [_io(b.node("GlobalAveragePool", [y]), None)], 13)


class _Reader(CalibrationDataReader):
    def __init__(self):
        rng = np.random.default_rng(2)
        self.it = iter([{"input": rng.standard_normal(SHAPE).astype(np.float32)} for _ in range(8)])

    def get_next(self):
        return next(self.it, None)


def _session(model: onnx.ModelProto, int8_allowed: bool, optimized=None):
    so = ort.SessionOptions()
    if int8_allowed:
        so.add_session_config_entry("session.qdqisint8allowed", "1")
    if optimized:
        so.optimized_model_filepath = str(optimized)
    return exact_session(model, so)


@pytest.mark.parametrize("activations", [QuantType.QInt8, QuantType.QUInt8])
def test_inverted_residual_matches_onnxruntime_all_integer(tmp_path, activations):
    src, dst = tmp_path / "float.onnx", tmp_path / "qdq.onnx"
    onnx.save(_block_model(), src)
    quantize_static(str(src), str(dst), _Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=activations, weight_type=QuantType.QInt8)
    model = onnx.load(dst)
    cm = build_model(model, target="llvm", quantize="int8")
    qg = cm.plan.qgraph
    int8 = activations is QuantType.QInt8
    assert sum(n.op is QOp.DEPTHWISE for n in qg.nodes) == 1
    assert sum(n.op is QOp.CONV2D for n in qg.nodes) == 3
    adds = [n for n in qg.nodes if n.op is QOp.RESCALE_ADD]
    # onnxruntime fuses an all-uint8 add into QLinearAdd, whose float32 formula we follow
    assert len(adds) == 1 and (adds[0].attrs.get("qlinear") == 128) != int8
    assert {n.attrs["op"] for n in qg.nodes if n.op is QOp.FLOAT} <= {"PARAM", "GLOBAL_AVG_POOL"}
    # onnxruntime's default session: float convs with int8 activations (the cause above),
    # none with uint8 ones
    _session(model, False, tmp_path / "opt.onnx")
    float_convs = [n for n in onnx.load(tmp_path / "opt.onnx").graph.node if n.op_type == "Conv"]
    assert bool(float_convs) == int8
    sess = _session(model, int8_allowed=int8)
    m, rng = load_module(cm), np.random.default_rng(7)
    for _ in range(3):
        x = rng.standard_normal(SHAPE).astype(np.float32)
        (got,) = m(x)
        np.testing.assert_array_equal(got, run_oracle(qg, {"input": x})[0])
        np.testing.assert_array_equal(got, sess.run(None, {"input": x})[0])
