"""The calibrated input range in graph.json of a QDQ model on the accelerator uses the
model's own input scale and zero point: quantize_static's defaults (uint8-style asymmetric
activations: scale ~1/255, zero point -128 after the int8 shift) over inputs in [0, 1] give
a range of about [0, 1], so in-range inputs raise no saturation warning."""
import warnings

import numpy as np
import onnx
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

from compiler import build_model
from driver.runtime import load_module

DIGITS = "examples/digits/digits_cnn.onnx"


class _Reader(CalibrationDataReader):
    def __init__(self, images):
        self.it = iter([{"image": x[None]} for x in images])

    def get_next(self):
        return next(self.it, None)


def test_asymmetric_qdq_input_range_uses_scale_and_zero_point(tmp_path):
    d = np.load("examples/digits/calib.npz")
    images = (d["images"].astype(np.float32) / 16).reshape(-1, 1, 8, 8)[:16]
    qdq = tmp_path / "qdq.onnx"
    quantize_static(DIGITS, str(qdq), _Reader(images), quant_format=QuantFormat.QDQ,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)
    m = onnx.load(qdq)
    init = {t.name: onnx.numpy_helper.to_array(t) for t in m.graph.initializer}
    q = next(n for n in m.graph.node if n.op_type == "QuantizeLinear" and n.input[0] == "image")
    scale, zp = float(init[q.input[1]]), int(init[q.input[2]])
    assert zp == -128            # asymmetric: the real range starts at 0
    cm = build_model(m, target="vta", input_shapes={"image": (1, 1, 8, 8)})
    (inp,) = cm.graph_json["inputs"]
    lo, hi = inp["range"]
    assert np.isclose(lo, 0.0) and np.isclose(hi, 255 * scale)
    assert hi > 0.99 * images.max()
    mod = load_module(cm.save(str(tmp_path / "q.vtamod")), device="fsim")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mod(images[:1])
