"""Conversion state shared by the ATen op converters (`compiler.frontend.torch_ops`).

`Context` maps FX node names to graph IR values (a `Node`, a tuple of them for
multi-output ops, or a plain Python value), owns the params dict, binds a call's
arguments to its ATen schema (`args`), and builds graph nodes with `make`, which
folds a node whose inputs are all constants into a new PARAM on the spot.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ..graph.errors import GraphError
from ..graph.ir import Node, make, param_node
from ..graph.ops import Op
from ..graph.reference import evaluate
from .errors import FrontendError


def op_name(fx_node) -> str:
    """'aten.convolution.default' for an ATen call, the function's name otherwise."""
    target = fx_node.target
    return str(target) if hasattr(target, "_schema") else getattr(target, "__name__", str(target))


def source_line(fx_node) -> str:
    """'model.py:12' of the user code that made `fx_node` (the innermost frame outside torch),
    '' when the export recorded no stack trace."""
    import torch
    trace = fx_node.meta.get("stack_trace") or ""
    torch_dir = os.path.dirname(torch.__file__)
    frames = []
    for line in trace.splitlines():
        line = line.strip()
        if line.startswith('File "') and ", line " in line:
            path = line[6:line.index('"', 6)]
            num = line.split(", line ", 1)[1].split(",", 1)[0]
            frames.append((path, num))
    user = [f for f in frames if not f[0].startswith(torch_dir)] or frames
    return f"{os.path.basename(user[-1][0])}:{user[-1][1]}" if user else ""


def where(fx_node) -> str:
    line = source_line(fx_node)
    return f"{op_name(fx_node)} node {fx_node.name!r}" + (f" ({line})" if line else "")


class Context:
    """Values, params and node construction for one FX graph."""

    def __init__(self):
        self.values: dict[str, Any] = {}
        self.params: dict[str, np.ndarray] = {}

    # -- values -------------------------------------------------------------
    def param(self, value, hint: str) -> Node:
        """A PARAM node for `value` (numpy array or scalar) under a fresh name from `hint`."""
        value = np.require(np.asarray(value), requirements="C")
        name, k = hint or "const", 1
        while name in self.params:
            name, k = f"{hint}_{k}", k + 1
        self.params[name] = value
        return param_node(name, value)

    def resolve(self, value):
        """FX arguments -> converted values (recursively through lists and tuples)."""
        import torch.fx
        if isinstance(value, torch.fx.Node):
            return self.values[value.name]
        if isinstance(value, (list, tuple)):
            return type(value)(self.resolve(v) for v in value)
        return value

    def args(self, fx_node) -> dict[str, Any]:
        """The call's arguments by schema name, defaults filled, FX nodes resolved."""
        schema = fx_node.target._schema
        out = {}
        for i, arg in enumerate(schema.arguments):
            if i < len(fx_node.args):
                out[arg.name] = self.resolve(fx_node.args[i])
            elif arg.name in fx_node.kwargs:
                out[arg.name] = self.resolve(fx_node.kwargs[arg.name])
            elif arg.has_default_value():
                out[arg.name] = arg.default_value
        return out

    def tensor(self, fx_node, value, like: Node | None = None, what: str = "operand") -> Node:
        """`value` as a graph node: Python numbers become constants of `like`'s dtype."""
        if isinstance(value, Node):
            return value
        if isinstance(value, (bool, int, float)):
            dtype = like.dtype if like is not None else np.float32
            return self.param(np.asarray(value, dtype), f"{fx_node.name}_{what}")
        raise self.fail(fx_node, f"{what} must be a tensor or a number, not {type(value).__name__}")

    def const(self, fx_node, value: Node, what: str) -> np.ndarray:
        """The constant behind `value`; FrontendError when it is computed from inputs."""
        if value.op is not Op.PARAM:
            raise self.fail(fx_node, f"{what} must be a constant (a parameter or buffer), but it "
                                     "is computed from the inputs; the graph IR needs it static")
        return self.params[value.name]

    # -- nodes --------------------------------------------------------------
    def make(self, fx_node, op: Op, *src: Node, **attrs: Any) -> Node:
        """A graph node labelled with the FX node's name; folded when every input is constant."""
        try:
            out = make(op, *src, label=fx_node.name, **attrs)
            if src and all(s.op is Op.PARAM for s in src):
                return self.param(evaluate(out, self.params), f"{fx_node.name}_folded")
            return out
        except GraphError as exc:
            raise self.fail(fx_node, str(exc)) from None

    def fail(self, fx_node, message: str) -> FrontendError:
        return FrontendError(f"{where(fx_node)}: {message}")
