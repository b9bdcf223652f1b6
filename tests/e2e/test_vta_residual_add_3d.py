"""A transformer's residual add on ``[batch, seq, hidden]`` runs on the accelerator as the 2-D
add of ``batch*seq`` rows (the rows are the pixels of a (1, hidden, 1, rows) image, as a dense's);
the module (tsim) equals the quantized oracle bit for bit and stays close to onnxruntime."""
import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper

from compiler import build_model
from compiler.quant import QOp, run as run_oracle
from driver.runtime import load_module
from tests.models.builders import OnnxBuilder


def _model(batch=2, seq=5, hidden=48):
    """x [batch, seq, hidden] -> MatMul + bias -> + x -> MatMul + bias -> + (first sum)."""
    b = OnnxBuilder(0)
    h = "x"
    for _ in range(2):
        w = b.const(b.randn(hidden, hidden, std=np.sqrt(1.0 / hidden)), "w")
        y = b.node("Add", [b.node("MatMul", [h, w]), b.const(b.randn(hidden, std=0.1), "b")])
        h = b.node("Add", [y, h])
    io = [helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
          for n, s in (("x", [batch, seq, hidden]), (h, None))]
    return b.model(io[:1], io[1:], 13)


def test_3d_residual_adds_run_on_the_accelerator_bit_exact(tmp_path):
    model = _model()
    rng = np.random.default_rng(1)
    cm = build_model(model, target="vta", calib={"x": rng.standard_normal((8, 5, 48)).astype(np.float32)})
    qg = cm.plan.qgraph
    adds = [(n.shape, n.target) for n in qg.nodes if n.op is QOp.ADD]
    assert adds == [((2, 5, 48), "vta")] * 2
    assert [n.target for n in qg.nodes if n.op is QOp.DENSE] == ["vta", "vta"]
    m = load_module(cm.save(str(tmp_path / "res3d.vtamod")), device="tsim")
    x = rng.standard_normal((2, 5, 48)).astype(np.float32)
    (got,) = m(x)
    np.testing.assert_array_equal(got, run_oracle(qg, {"x": x})[0])
    (ref,) = ort.InferenceSession(model.SerializeToString(),
                                  providers=["CPUExecutionProvider"]).run(None, {"x": x})
    cos = float(ref.ravel() @ got.ravel() / np.linalg.norm(ref) / np.linalg.norm(got))
    assert cos > 0.99, f"int8 residual adds drift from fp32: cosine {cos:.4f}"
