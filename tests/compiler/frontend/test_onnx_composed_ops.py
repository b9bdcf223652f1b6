"""The operators built as compositions of graph ops: Range folds away, a BERT-style position-id
subgraph (Range -> Unsqueeze -> Expand -> Gather) folds to a constant, and what they refuse
is named with the node, the value and the fix."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler.frontend.errors import FrontendError
from compiler.frontend.onnx import from_onnx
from compiler.graph import Op, run
from tests.models.oracle import assert_close, ort_run
from tests.models.single_node import single_node_model


def _model(nodes, inputs, inits=(), opset=13):
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    m = helper.make_model(helper.make_graph(nodes, "g", inputs, [y], list(inits)),
                          opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def test_position_ids_from_range_fold_to_a_constant():
    """Range(0, 5) -> Unsqueeze -> Expand -> Gather(table): the position embedding of an encoder."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5, 4])
    table = np.random.default_rng(0).standard_normal((8, 4)).astype(np.float32)
    inits = [numpy_helper.from_array(np.array(v, np.int64), k) for k, v in
             (("start", 0), ("limit", 5), ("delta", 1), ("axes", [0]), ("shape", [2, 5]))]
    inits.append(numpy_helper.from_array(table, "table"))
    nodes = [helper.make_node("Range", ["start", "limit", "delta"], ["r"]),
             helper.make_node("Unsqueeze", ["r", "axes"], ["r1"]),
             helper.make_node("Expand", ["r1", "shape"], ["ids"]),
             helper.make_node("Gather", ["table", "ids"], ["pos"]),
             helper.make_node("Add", ["x", "pos"], ["y"])]
    m = _model(nodes, [x], inits)
    graph, params = from_onnx(m)
    assert [n.op for n in graph.nodes()] == [Op.INPUT, Op.PARAM, Op.ADD]
    feeds = {"x": np.ones((2, 5, 4), np.float32)}
    assert_close(run(graph, params, feeds)[0], ort_run(m, feeds)[0])


@pytest.mark.parametrize("op,inputs,attrs,message", [
    ("Einsum", [("a", np.ones((2, 3), np.float32), False)], dict(equation="ii->i"),
     r"Einsum node 'einsum_node': equation 'ii->i'.*no letter may repeat"),
    ("Einsum", [("a", np.ones((2, 3), np.float32), False), ("b", np.ones((3, 4), np.float32), False)],
     dict(equation="ij,kl->il"), r"a letter summed out of one operand alone"),
    ("Einsum", [("a", np.ones((2, 3), np.float32), False), ("b", np.ones((4, 5), np.float32), False)],
     dict(equation="ij,jk->ik"), r"letter 'j' has size 3 in 'ij' but 4 in 'jk'"),
    ("TopK", [("x", np.ones((2, 3), np.float32), False), ("k", np.array([4], np.int64), True)], {},
     r"TopK node 'topk_node': K must be in 1..3 \(the size of axis 1\), not 4"),
    ("TopK", [("x", np.ones((2, 3), np.float32), False), ("k", np.array([2], np.int64), False)], {},
     r"input 1 \(K\) must be a constant"),
    ("Tile", [("x", np.ones((2, 3), np.float32), False), ("r", np.array([2], np.int64), True)], {},
     r"repeats \[2\] must hold one positive count per axis of \[2, 3\]"),
    ("DepthToSpace", [("x", np.ones((1, 6, 2, 2), np.float32), False)], dict(blocksize=2),
     r"channels 6 must divide by blocksize\^2 = 4"),
    ("Dropout", [("x", np.ones((2, 3), np.float32), False), ("r", np.float32(0.5), True),
                 ("t", np.bool_(True), True)], {}, r"training_mode=1 is not supported"),
    ("Not", [("x", np.ones((2, 3), np.float32), False)], {}, r"NOT.*input must be bool, not float32"),
])
def test_refusals_name_node_value_and_fix(op, inputs, attrs, message):
    model, _ = single_node_model(op, inputs, attrs, 13)
    with pytest.raises(FrontendError, match=message):
        from_onnx(model)
