"""INT8 and FLOAT nodes through the CPU graph lowering (a one-node FUSED group) vs
``eval_node``: int8 data movement exactly, float ops within 1e-5 relative."""
import numpy as np
import pytest
from quant_kernel_run import run_kernel

from compiler.quant import kernels
from compiler.quant.qgraph import QNode, QOp, eval_node

POOL = {"ceil_mode": 0, "dilations": (1, 1), "kernel": (3, 3), "pads": (1, 1, 1, 1),
        "strides": (2, 2)}
INT8_CASES = [
    ("MAX_POOL", POOL, [(1, 16, 9, 9)], (1, 16, 5, 5)),
    ("RESHAPE", {"newshape": (2, 48)}, [(2, 3, 4, 4)], (2, 48)),
    ("RELU", {}, [(1, 8, 3, 5)], (1, 8, 3, 5)),
    ("TRANSPOSE", {"perm": (0, 2, 3, 1)}, [(1, 8, 3, 5)], (1, 3, 5, 8)),
    ("CONCAT", {"axis": 1}, [(1, 8, 3, 3), (1, 4, 3, 3)], (1, 12, 3, 3)),
]


def _node(op, dtype, attrs, in_shapes, shape, exp=None):
    srcs = [QNode(QOp.INPUT if dtype == "float32" else QOp.INT8, (), s, dtype, exp)
            for s in in_shapes]
    kind = QOp.FLOAT if dtype == "float32" else QOp.INT8
    return QNode(kind, tuple(range(len(srcs))), shape, dtype, exp, {"op": op, "attrs": attrs},
                 name=op.lower()), srcs


@pytest.mark.parametrize("op,attrs,in_shapes,shape", INT8_CASES, ids=[c[0] for c in INT8_CASES])
def test_int8_ops_are_exact(rng, op, attrs, in_shapes, shape):
    node, srcs = _node(op, "int8", attrs, in_shapes, shape, exp=4)
    xs = [rng.integers(-128, 128, s).astype(np.int8) for s in in_shapes]
    got = run_kernel(kernels.cpu_kernel(node, srcs, {}, "k"), *xs)
    np.testing.assert_array_equal(got, eval_node(node, xs, {}))


FLOAT_CASES = [
    ("SOFTMAX", {"axis": 1}, [(4, 10)], (4, 10)),
    ("MUL", {}, [(1, 8, 4, 4), (1, 8, 1, 1)], (1, 8, 4, 4)),
    ("SIGMOID", {}, [(2, 37)], (2, 37)),
]


@pytest.mark.parametrize("op,attrs,in_shapes,shape", FLOAT_CASES, ids=[c[0] for c in FLOAT_CASES])
def test_float_ops_within_1e5(rng, op, attrs, in_shapes, shape):
    node, srcs = _node(op, "float32", attrs, in_shapes, shape)
    xs = [rng.standard_normal(s).astype(np.float32) * 4 for s in in_shapes]
    got = run_kernel(kernels.cpu_kernel(node, srcs, {}, "k"), *xs)
    np.testing.assert_allclose(got, eval_node(node, xs, {}), rtol=1e-5, atol=1e-7)


def test_a_shape_the_op_disagrees_with_is_named():
    node, srcs = _node("RESHAPE", "int8", {"newshape": (2, 48)}, [(2, 3, 4, 4)], (2, 47), exp=0)
    with pytest.raises(ValueError, match=r"node 'reshape': RESHAPE gives shape \[2, 48\]"):
        kernels.cpu_kernel(node, srcs, {}, "k")


def test_param_constants_have_no_kernel():
    node = QNode(QOp.FLOAT, (), (3,), "float32", attrs={"op": "PARAM", "attrs": {}},
                 params=("c",), name="c")
    with pytest.raises(ValueError, match="'c' \\(float\\) has no CPU kernel"):
        kernels.cpu_kernel(node, [], {"c": np.zeros(3, np.float32)}, "k")


def test_an_op_without_a_kernel_is_named_with_those_that_have_one():
    node = QNode(QOp.INPUT, (), (3,), "float32", name="x")
    with pytest.raises(ValueError, match=r"'x' \(input\) has no CPU kernel; ops with one: quantize"):
        kernels.cpu_kernel(node, [], {}, "k")
