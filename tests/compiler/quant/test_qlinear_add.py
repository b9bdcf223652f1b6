"""A RESCALE_ADD of uint8 tensors (attr ``qlinear``): onnxruntime fuses such an add into
QLinearAdd, whose float32 formula (``compiler.quant.ort_requant``) rounds differently from
the DequantizeLinear -> Add -> QuantizeLinear chain; the oracle equals onnxruntime's
QLinearAdd over every pair of inputs, the CPU kernel the oracle bit for bit."""
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper
from quant_kernel_run import run_kernel

from compiler.quant import kernels
from compiler.quant.lut import scale_of
from compiler.quant.qdq import exponent_of_scale
from compiler.quant.qgraph import QNode, QOp, eval_node

#: (sa, sb, sc, za, zb, zc) with uint8 zero points
CASES = [(0.05, 0.031, 0.07, 128, 120, 131), (0.2, 0.011, 0.13, 0, 255, 9),
         (0.0237, 0.0191, 0.0301, 97, 140, 122)]


def _node(sa, sb, sc, za, zb, zc, shape):
    """The RESCALE_ADD node, at our int8 values (uint8 - 128)."""
    exps = [exponent_of_scale(float(np.float32(s))) for s in (sa, sb, sc)]
    attrs = {"za": za - 128, "zb": zb - 128, "qlinear": 128,
             **{k: float(scale_of(e)) for k, e in zip(("sa", "sb", "sc"), exps)}}
    return QNode(QOp.RESCALE_ADD, (0, 1), shape, "int8", exps[2], attrs, zp=zc - 128)


def _ort_qlinear_add(a, b, sa, sb, sc, za, zb, zc, tmp_path):
    """onnxruntime on uint8 ``a``, ``b``: DequantizeLinear x2 -> Add -> QuantizeLinear, which
    its default optimizations fuse into one QLinearAdd (checked)."""
    init = [helper.make_tensor(n, TensorProto.FLOAT, [], [np.float32(v)])
            for n, v in (("sa", sa), ("sb", sb), ("sc", sc))]
    init += [helper.make_tensor(n, TensorProto.UINT8, [], [v]) for n, v in (("za", za), ("zb", zb), ("zc", zc))]
    nodes = [helper.make_node("DequantizeLinear", ["a", "sa", "za"], ["fa"]),
             helper.make_node("DequantizeLinear", ["b", "sb", "zb"], ["fb"]),
             helper.make_node("Add", ["fa", "fb"], ["s"]),
             helper.make_node("QuantizeLinear", ["s", "sc", "zc"], ["y"])]
    io = [helper.make_tensor_value_info(n, TensorProto.UINT8, list(a.shape)) for n in ("a", "b", "y")]
    m = helper.make_model(helper.make_graph(nodes, "add", io[:2], io[2:], init),
                          opset_imports=[helper.make_opsetid("", 13)])
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED   # QDQ fusion
    so.optimized_model_filepath = str(tmp_path / "opt.onnx")
    s = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    assert [n.op_type for n in onnx.load(tmp_path / "opt.onnx").graph.node] == ["QLinearAdd"]
    return s.run(None, {"a": a, "b": b})[0]


@pytest.mark.parametrize("sa, sb, sc, za, zb, zc", CASES)
def test_oracle_equals_onnxruntime_qlinear_add(tmp_path, sa, sb, sc, za, zb, zc):
    a, b = (v.astype(np.uint8) for v in np.meshgrid(np.arange(256), np.arange(256)))
    node = _node(sa, sb, sc, za, zb, zc, a.shape)
    got = eval_node(node, [(a - 128).astype(np.int8), (b - 128).astype(np.int8)], {})
    want = _ort_qlinear_add(a, b, sa, sb, sc, za, zb, zc, tmp_path)
    np.testing.assert_array_equal(got.astype(np.int32) + 128, want)


@pytest.mark.parametrize("sa, sb, sc, za, zb, zc", CASES)
def test_qlinear_kernel_equals_oracle(sa, sb, sc, za, zb, zc):
    node = _node(sa, sb, sc, za, zb, zc, (2, 5, 3, 7))
    rng = np.random.default_rng(4)
    a, b = (rng.integers(-128, 128, node.shape).astype(np.int8) for _ in range(2))
    got = run_kernel(kernels.rescale_add(node), a, b)
    np.testing.assert_array_equal(got, eval_node(node, [a, b], {}))
