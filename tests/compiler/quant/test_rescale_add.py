"""The int8 add between scales (``QOp.RESCALE_ADD``: a QDQ residual add whose scales are not
powers of two): onnxruntime's DequantizeLinear -> Add -> QuantizeLinear in float32, the
oracle equal to onnxruntime's own ops over every pair of inputs, the CPU kernel equal to
the oracle bit for bit."""
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


def _node(sa, sb, sy, za, zb, zy, shape=(2, 5, 3, 7)):
    exps = [exponent_of_scale(float(np.float32(s))) for s in (sa, sb, sy)]
    attrs = {"za": za, "zb": zb, **{k: float(scale_of(e)) for k, e in zip(("sa", "sb", "sc"), exps)}}
    return QNode(QOp.RESCALE_ADD, (0, 1), shape, "int8", exps[2], attrs, zp=zy)


def _ort_add(a, b, sa, sb, sy, za, zb, zy):
    """onnxruntime's int8 DequantizeLinear, Add, QuantizeLinear, run as three ops (graph
    optimizations off: no QLinearAdd fusion), on int8 ``a``, ``b``."""
    init = [helper.make_tensor(n, TensorProto.FLOAT, [], [np.float32(v)])
            for n, v in (("sa", sa), ("sb", sb), ("sy", sy))]
    init += [helper.make_tensor(n, TensorProto.INT8, [], [v]) for n, v in (("za", za), ("zb", zb), ("zy", zy))]
    nodes = [helper.make_node("DequantizeLinear", ["a", "sa", "za"], ["fa"]),
             helper.make_node("DequantizeLinear", ["b", "sb", "zb"], ["fb"]),
             helper.make_node("Add", ["fa", "fb"], ["s"]),
             helper.make_node("QuantizeLinear", ["s", "sy", "zy"], ["y"])]
    io = [helper.make_tensor_value_info(n, TensorProto.INT8, list(a.shape)) for n in ("a", "b", "y")]
    g = helper.make_graph(nodes, "add", io[:2], io[2:], init)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return s.run(None, {"a": a, "b": b})[0]


CASES = [(0.05, 0.031, 0.07, 0, 0, 0), (0.2, 0.011, 0.13, 5, -128, 9), (1e-3, 0.9, 0.5, 0, 0, -3)]


@pytest.mark.parametrize("sa, sb, sy, za, zb, zy", CASES)
def test_oracle_equals_onnxruntime_ops(sa, sb, sy, za, zb, zy):
    a, b = (v.astype(np.int8) for v in np.meshgrid(np.arange(-128, 128), np.arange(-128, 128)))
    node = _node(sa, sb, sy, za, zb, zy, a.shape)
    np.testing.assert_array_equal(eval_node(node, [a, b], {}),
                                  _ort_add(a, b, sa, sb, sy, za, zb, zy))


@pytest.mark.parametrize("sa, sb, sy, za, zb, zy", CASES)
def test_kernel_equals_oracle(sa, sb, sy, za, zb, zy):
    node = _node(sa, sb, sy, za, zb, zy)
    rng = np.random.default_rng(3)
    a, b = (rng.integers(-128, 128, node.shape).astype(np.int8) for _ in range(2))
    got = run_kernel(kernels.rescale_add(node), a, b)
    np.testing.assert_array_equal(got, eval_node(node, [a, b], {}))
