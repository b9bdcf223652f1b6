"""Single-node (or tiny) ONNX models built with onnx.helper for the per-op tests."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper


def single_node_model(op: str, inputs: list[tuple[str, np.ndarray | None, bool]], attrs: dict | None = None,
                      opset: int = 17, n_out: int = 1) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """A model with one `op` node. inputs: (name, value, is_constant) in input order; a None value
    leaves that optional input empty. Returns (model, feeds for the non-constant inputs)."""
    graph_inputs, inits, feeds, names = [], [], {}, []
    for name, value, is_const in inputs:
        if value is None:
            names.append("")
            continue
        names.append(name)
        value = np.asarray(value)
        if is_const:
            inits.append(numpy_helper.from_array(value, name))
        else:
            dtype = helper.np_dtype_to_tensor_dtype(value.dtype)
            graph_inputs.append(helper.make_tensor_value_info(name, dtype, list(value.shape)))
            feeds[name] = value
    outs = [f"out{i}" for i in range(n_out)]
    node = helper.make_node(op, names, outs, name=f"{op.lower()}_node", **(attrs or {}))
    graph = helper.make_graph([node], f"single_{op}", graph_inputs,
                              [helper.make_empty_tensor_value_info(o) for o in outs], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8 if opset <= 18 else 10
    return model, feeds
