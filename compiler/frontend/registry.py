"""The front ends ``compiler.build_model`` imports models through, as a registry.

Each entry is a :class:`Frontend`: a name, ``accepts(model) -> bool`` (cheap: it
never imports a heavy package the model cannot come from) and
``load(model, params, input_shapes, example_inputs) -> (Graph, params)``.
``find(model)`` returns the first entry that accepts the model, in registration
order: the graph IR, PyTorch (``nn.Module``, ``torch.export`` program, ``.pt2``
path), then ONNX (``ModelProto``, bytes, any other path). ``register`` adds one.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Callable

from .errors import FrontendError


@dataclass(frozen=True)
class Frontend:
    """One importer: ``load(model, params, input_shapes, example_inputs) -> (Graph, params)``."""

    name: str
    accepts: Callable[[object], bool]
    load: Callable[..., tuple]


FRONTENDS: list[Frontend] = []


def register(name: str, accepts: Callable[[object], bool], load: Callable[..., tuple]) -> Frontend:
    """Add a front end after the existing ones; ValueError for a name already taken."""
    if any(f.name == name for f in FRONTENDS):
        raise ValueError(f"frontend name must be new, not {name!r} (taken)")
    entry = Frontend(name, accepts, load)
    FRONTENDS.append(entry)
    return entry


def find(model) -> Frontend:
    """The front end for ``model``; FrontendError naming its type when none accepts it."""
    for f in FRONTENDS:
        if f.accepts(model):
            return f
    raise FrontendError(f"no frontend takes a {type(model).__name__}; give an ONNX model (path, "
                        "bytes or ModelProto), a PyTorch nn.Module with example_inputs, a "
                        "torch.export program or its .pt2 path, or a compiler.graph.Graph")


def _is_path(model) -> bool:
    return isinstance(model, (str, os.PathLike))


def _no_examples(name):
    def check(example_inputs):
        if example_inputs is not None:
            raise FrontendError(f"example_inputs applies to PyTorch nn.Modules, not to {name} "
                                "models; give input_shapes instead")
    return check


# -- graph IR ------------------------------------------------------------------
def _graph_accepts(model) -> bool:
    from ..graph import Graph
    return isinstance(model, Graph)


def _graph_load(model, params, input_shapes, example_inputs):
    _no_examples("graph IR")(example_inputs)
    return model, dict(params or {})


# -- PyTorch -------------------------------------------------------------------
def _torch_accepts(model) -> bool:
    if _is_path(model):
        return os.fspath(model).endswith(".pt2")
    torch = sys.modules.get("torch")    # a torch object implies torch is imported
    return torch is not None and isinstance(model, (torch.nn.Module, torch.export.ExportedProgram))


def _torch_load(model, params, input_shapes, example_inputs):
    try:
        from .torch_export import from_torch
    except ImportError:
        raise FrontendError("PyTorch models need torch: pip install 'vta-stack[torch]' "
                            "(torch==2.13.0, the CPU build)") from None
    return from_torch(model, example_inputs, input_shapes)


# -- ONNX ----------------------------------------------------------------------
def _onnx_accepts(model) -> bool:
    if _is_path(model) or isinstance(model, bytes):
        return True
    onnx = sys.modules.get("onnx")
    return onnx is not None and isinstance(model, onnx.ModelProto)


def _onnx_load(model, params, input_shapes, example_inputs):
    from .onnx import from_onnx, load_model, static_shapes
    _no_examples("ONNX")(example_inputs)
    proto = load_model(model)
    return from_onnx(proto, static_shapes(proto, input_shapes))


register("graph", _graph_accepts, _graph_load)
register("torch", _torch_accepts, _torch_load)
register("onnx", _onnx_accepts, _onnx_load)


def import_model(model, params=None, input_shapes=None, example_inputs=None):
    """The front end of every route: ``(Graph, params)``, through the first entry of the
    frontend registry (``compiler.frontend.registry``) that accepts ``model``.

    Args:
        model: an ONNX ``ModelProto``, path or bytes; a PyTorch ``nn.Module`` (with
            ``example_inputs``), ``torch.export`` program or ``.pt2`` path; or a graph
            IR ``Graph``.
        params: the constants of a ``Graph`` model (ignored otherwise).
        input_shapes: name -> static shape; dynamic ONNX dimensions default to 1,
            dynamic torch.export dimensions must be given here.
        example_inputs: a tuple of tensors, the arguments an ``nn.Module`` is exported with.

    Raises:
        compiler.frontend.FrontendError: the model does not import (no frontend for its
            type, unknown input name, wrong rank, a dynamic dimension left open,
            unsupported operators, unreadable file).
    """
    return find(model).load(model, params, input_shapes, example_inputs)
