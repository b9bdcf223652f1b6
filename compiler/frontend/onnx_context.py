"""Conversion state shared by the ONNX op converters (`compiler.frontend.onnx_ops`).

`Context` maps ONNX tensor names to graph nodes, owns the params dict, reads
node attributes and constant inputs, and builds nodes with `make`, which folds
a node whose inputs are all constants into a new PARAM on the spot (so ONNX
constant subgraphs such as Shape -> Gather -> Concat -> Reshape vanish).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import helper

from ..graph.errors import GraphError
from ..graph.ir import Node, make, param_node
from ..graph.ops import Op
from ..graph.reference import evaluate
from .errors import FrontendError


def where(node: onnx.NodeProto) -> str:
    return f"{node.op_type} node {node.name or '<unnamed>'!r}"


class Context:
    def __init__(self, opset: int):
        self.opset = opset
        self.tensors: dict[str, Node] = {}
        self.params: dict[str, np.ndarray] = {}
        self._names: set[str] = set()

    # -- values -------------------------------------------------------------
    def param(self, value: np.ndarray, hint: str) -> Node:
        """A PARAM node for `value` under a fresh name derived from `hint`."""
        value = np.require(value, requirements="C")
        name, k = hint or "const", 1
        while name in self.params or name in self._names:
            name, k = f"{hint}_{k}", k + 1
        self._names.add(name)
        self.params[name] = value
        return param_node(name, value)

    def input(self, node: onnx.NodeProto, i: int) -> Node | None:
        """Input i of `node`, None when absent (optional input left empty)."""
        if i >= len(node.input) or not node.input[i]:
            return None
        try:
            return self.tensors[node.input[i]]
        except KeyError:
            raise FrontendError(f"{where(node)}: input {node.input[i]!r} is not produced by any earlier node, "
                                "initializer or graph input (is the graph topologically sorted?)") from None

    def required(self, node: onnx.NodeProto, i: int) -> Node:
        x = self.input(node, i)
        if x is None:
            raise FrontendError(f"{where(node)}: required input {i} is missing")
        return x

    def const(self, node: onnx.NodeProto, i: int, what: str) -> np.ndarray | None:
        """Constant value of input i (None when absent); FrontendError if it depends on a graph input."""
        x = self.input(node, i)
        if x is None:
            return None
        if x.op is not Op.PARAM:
            raise FrontendError(f"{where(node)}: input {i} ({what}) must be a constant (initializer or constant "
                                f"subgraph), but it is computed from graph inputs; the graph IR needs static values")
        return self.params[x.name]

    # -- nodes --------------------------------------------------------------
    def make(self, node: onnx.NodeProto, op: Op, *src: Node, **attrs: Any) -> Node:
        """Build a graph node labelled with the ONNX node name; fold it when every input is constant."""
        try:
            out = make(op, *src, label=node.name, **attrs)
            if src and all(s.op is Op.PARAM for s in src):
                return self.param(evaluate(out, self.params), f"{node.name or op.name.lower()}_folded")
            return out
        except GraphError as exc:
            raise FrontendError(f"{where(node)}: {exc}") from None

    def fail(self, node: onnx.NodeProto, message: str) -> FrontendError:
        return FrontendError(f"{where(node)}: {message}")


def attributes(node: onnx.NodeProto) -> dict[str, Any]:
    """ONNX attributes as Python values (strings decoded, tensors as numpy arrays)."""
    out = {}
    for a in node.attribute:
        v = helper.get_attribute_value(a)
        if isinstance(v, bytes):
            v = v.decode()
        elif isinstance(v, onnx.TensorProto):
            v = onnx.numpy_helper.to_array(v)
        elif isinstance(v, list) and v and isinstance(v[0], bytes):
            v = [x.decode() for x in v]
        out[a.name] = v
    return out
