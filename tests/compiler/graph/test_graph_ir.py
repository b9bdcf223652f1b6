"""Graph IR: structural equality/hashing, inference errors, layout transforms, the verifier."""

from __future__ import annotations

import time

import numpy as np
import pytest

from compiler.graph import Graph, GraphError, Op, input_node, make, param_node, run
from compiler.graph.ir import Node, toposort
from compiler.graph.opdefs.transform import layout_transform, parse_layout
from compiler.graph.verify import verify


def _conv(label=""):
    x = input_node("x", (1, 4, 8, 8))
    w = param_node("w", np.zeros((8, 4, 3, 3), np.float32))
    return make(Op.CONV2D, x, w, label=label, strides=(1, 1), pads=(1, 1, 1, 1))


def test_structurally_equal_nodes_are_equal_and_hash_equal():
    a, b = _conv("first"), _conv("second")  # labels are debug names only
    assert a == b and hash(a) == hash(b) and a is not b
    assert make(Op.RELU, a) == make(Op.RELU, b)
    assert make(Op.RELU, a) != make(Op.SIGMOID, a)
    assert a.shape == (1, 8, 8, 8) and a.dtype == "float32"


def test_hash_of_deep_shared_dag_is_cheap():
    """50 diamonds (2**50 paths): hashing and equality must not walk paths."""
    x = input_node("x", (4,))
    y = x
    for _ in range(50):
        y = make(Op.ADD, make(Op.RELU, y), make(Op.SIGMOID, y))
    t = time.perf_counter()
    z = x
    for _ in range(50):
        z = make(Op.ADD, make(Op.RELU, z), make(Op.SIGMOID, z))
    assert y == z and hash(y) == hash(z)
    assert len(toposort([y])) == 1 + 150
    assert time.perf_counter() - t < 1.0


def test_toposort_handles_long_chains_without_recursion():
    y = input_node("x", (2,))
    for _ in range(5000):
        y = make(Op.RELU, y)
    assert len(Graph((toposort([y])[0],), (y,)).nodes()) == 5001


def test_make_errors_name_op_label_and_values():
    x = input_node("x", (2, 3))
    with pytest.raises(GraphError, match=r"ADD \(node 'n1'\): shapes \[2, 3\] and \[4\] do not broadcast"):
        make(Op.ADD, x, input_node("y", (4,)), label="n1")
    with pytest.raises(GraphError, match=r"RESHAPE: newshape \[7\] does not hold the 6 elements"):
        make(Op.RESHAPE, x, newshape=(7,))
    with pytest.raises(GraphError, match="expects 2 inputs, got 1"):
        make(Op.ADD, x)
    with pytest.raises(GraphError, match="every dimension must be a positive int"):
        input_node("z", (1, 0))


@pytest.mark.parametrize("src,dst,shape", [("NCHW", "NCHW4c", (2, 8, 3, 5)), ("OIHW", "OIHW4i2o", (6, 8, 3, 3)),
                                           ("NCHW", "NHWC", (1, 3, 2, 2))])
def test_layout_transform_roundtrip(src, dst, shape):
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    y = layout_transform(x, src, dst)
    np.testing.assert_array_equal(layout_transform(y, dst, src), x)
    node = make(Op.LAYOUT_TRANSFORM, input_node("x", shape), src_layout=src, dst_layout=dst)
    assert node.shape == y.shape


def test_layout_transform_blocks_channels():
    x = np.arange(16, dtype=np.float32).reshape(1, 8, 1, 2)
    y = layout_transform(x, "NCHW", "NCHW4c")
    assert y.shape == (1, 2, 1, 2, 4)
    assert y[0, 1, 0, 1, 2] == x[0, 1 * 4 + 2, 0, 1]


def test_layout_errors():
    with pytest.raises(GraphError, match="layout 'NCHW4' is malformed"):
        parse_layout("NCHW4")
    with pytest.raises(GraphError, match="axis C of size 6 is not divisible by block 4"):
        make(Op.LAYOUT_TRANSFORM, input_node("x", (1, 6, 2, 2)), src_layout="NCHW", dst_layout="NCHW4c")


def test_verify_catches_stale_types_and_missing_params():
    x = input_node("x", (2, 3))
    bad = Node(Op.RELU, (x,), (), (3, 2), "float32")  # hand-built with a wrong shape
    with pytest.raises(GraphError, match="stored type differs from inferred float32\\[2, 3\\]"):
        verify(Graph((x,), (bad,)))
    p = param_node("bias", np.zeros(3, np.float32))
    g = Graph((x,), (make(Op.ADD, x, p),))
    with pytest.raises(GraphError, match="'bias'.*no entry in params"):
        verify(g, {})
    with pytest.raises(GraphError, match="is read but is not a declared graph input"):
        verify(Graph((), (make(Op.RELU, x),)))


def test_reference_run_checks_inputs():
    x = input_node("x", (2, 3))
    g = Graph((x,), (make(Op.RELU, x),), ("y",))
    with pytest.raises(GraphError, match=r"input 'x' not given"):
        run(g, {}, {})
    with pytest.raises(GraphError, match=r"input 'x' has shape \[3\], graph expects \[2, 3\]"):
        run(g, {}, {"x": np.zeros(3)})
    out = run(g, {}, {"x": np.array([[-1, 2, -3], [4, -5, 6]], np.float32)})[0]
    np.testing.assert_array_equal(out, [[0, 2, 0], [4, 0, 6]])


def test_format_graph_text():
    from compiler.graph import format_graph
    from compiler.graph.passes import fuse_ops
    x = input_node("x", (1, 2))
    g = Graph((x,), (make(Op.RELU, make(Op.ADD, x, param_node("b", np.zeros(2, np.float32)))),))
    assert format_graph(g) == ("%0 = input x: float32[1, 2]\n%1 = param b: float32[2]\n"
                               "%2 = add(%0, %1) -> float32[1, 2]\n%3 = relu(%2) -> float32[1, 2]\nreturn %3")
    text = format_graph(fuse_ops(g, {})[0])
    assert "fused(%0, %1) name='fused_add_relu' pattern='INJECTIVE'" in text and "    %2 = add(%0, %1)" in text
