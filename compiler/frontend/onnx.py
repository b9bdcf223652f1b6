"""ONNX frontend: `from_onnx(model_or_path, input_shapes=None) -> (Graph, params)`.

Supports default-domain opsets 11 to 21 and the operators in
`compiler.frontend.onnx_ops.CONVERTERS` (see `SUPPORTED_OPS`). Models at an
older opset (the ONNX Model Zoo's classic CNNs are at 7 to 9) are converted on
load to `UPGRADE_OPSET` with `onnx.version_converter` (one logged line says so). Constant
subgraphs (Shape, ConstantOfShape, Constant, and any node whose inputs are
all constants) are folded during import, so every shape in the graph is static.
"""

from __future__ import annotations

import logging
import os
import re
from typing import Mapping

import onnx
from onnx import helper, numpy_helper, version_converter

from ..graph.errors import GraphError
from ..graph.ir import Graph, input_node
from .errors import FrontendError, UnsupportedOperatorError
from .onnx_context import Context, attributes, where
from .onnx_ops import CONVERTERS
from .shapes import suggest_input_shape

MIN_OPSET, MAX_OPSET = 11, 21
UPGRADE_OPSET = 13   # where models below MIN_OPSET are converted to
SUPPORTED_OPS = tuple(sorted(CONVERTERS))
_log = logging.getLogger(__name__)


def load_model(model_or_path) -> onnx.ModelProto:
    """A ModelProto from a path / bytes / ModelProto. FrontendError if the file is unreadable,
    truncated, or not ONNX."""
    if isinstance(model_or_path, onnx.ModelProto):
        model = model_or_path
        label = "model"
    else:
        label = repr(os.fspath(model_or_path)) if not isinstance(model_or_path, bytes) else "bytes"
        if not isinstance(model_or_path, bytes) and not os.path.isfile(model_or_path):
            raise FrontendError(f"cannot read ONNX model {label}: no such file")
        try:
            # onnx.load also reads external weight files stored next to the model
            model = (onnx.load_model_from_string(model_or_path) if isinstance(model_or_path, bytes)
                     else onnx.load(model_or_path))
        except OSError as exc:
            raise FrontendError(f"cannot read ONNX model {label}: {exc}") from None
        except Exception as exc:  # protobuf DecodeError and friends
            raise FrontendError(f"{label} is not a valid ONNX model (protobuf decode failed: {exc}); "
                                "the file may be truncated or of another format") from None
    if model.ir_version <= 0 or not model.HasField("graph") or not model.opset_import:
        raise FrontendError(f"{label} is not an ONNX model: no ir_version, graph or opset_import "
                            "(the file may be truncated or of another format)")
    return model


def static_shapes(model: onnx.ModelProto, input_shapes=None) -> dict:
    """``input_shapes`` plus, for each other input whose only dynamic dimension is the first
    (the batch), its shape with that dimension set to 1. An input with any other dynamic
    dimension (height, width, sequence length) is left out, so that ``from_onnx`` says it
    has a dynamic shape and asks for a static one: no size is guessed."""
    shapes = dict(input_shapes or {})
    init = {t.name for t in model.graph.initializer}
    for v in model.graph.input:
        if v.name in init or v.name in shapes:
            continue
        dims = [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else None
                for d in v.type.tensor_type.shape.dim]
        if dims and dims[0] is None and None not in dims[1:]:
            shapes[v.name] = (1,) + tuple(dims[1:])
    return shapes


def default_opset(model: onnx.ModelProto) -> int:
    """The default-domain opset; FrontendError when the model imports none or one above MAX_OPSET."""
    versions = [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")]
    if not versions:
        raise FrontendError("model imports no default-domain (ai.onnx) opset")
    v = versions[0]
    if v > MAX_OPSET:
        raise FrontendError(f"opset {v} is not supported; the ONNX frontend reads opsets {MIN_OPSET} to "
                            f"{MAX_OPSET}. Convert with onnx.version_converter.convert_version(model, {MAX_OPSET})")
    return v


def upgrade_opset(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` itself at opsets MIN_OPSET..MAX_OPSET; below, a copy converted to UPGRADE_OPSET
    by ``onnx.version_converter`` (logged as one WARNING line of logger ``compiler.frontend.onnx``).

    Raises FrontendError naming the opsets and the converter's reason when it cannot convert
    (e.g. an operator with no registered schema, or one without an adapter)."""
    v = default_opset(model)
    if v >= MIN_OPSET:
        return model
    unknown = [(n.op_type, n.name or f"<unnamed #{i}>", n.domain) for i, n in enumerate(model.graph.node)
               if n.domain in ("", "ai.onnx") and not onnx.defs.has(n.op_type)]
    if unknown:  # the converter needs a schema for every node; report them as the frontend does
        raise UnsupportedOperatorError(unknown)
    try:
        converted = version_converter.convert_version(model, UPGRADE_OPSET)
    except Exception as exc:  # the converter raises RuntimeError / ConvertError with C++ context
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[-1]
        reason = re.sub(r"^.*Assertion `.*?` failed: ", "", reason)
        raise FrontendError(f"opset {v} is below {MIN_OPSET} and onnx.version_converter cannot convert "
                            f"the model to opset {UPGRADE_OPSET}: {reason}. Re-export the model at opset "
                            f"{MIN_OPSET} to {MAX_OPSET}") from None
    _log.warning("ONNX model at opset %d converted to opset %d with onnx.version_converter", v, UPGRADE_OPSET)
    return converted


def check_operators(model: onnx.ModelProto) -> None:
    """Raise UnsupportedOperatorError listing every node whose operator has no converter."""
    bad = [(n.op_type, n.name or f"<unnamed #{i}>", n.domain) for i, n in enumerate(model.graph.node)
           if n.domain not in ("", "ai.onnx") or n.op_type not in CONVERTERS]
    if bad:
        raise UnsupportedOperatorError(bad)


def _input_shape(value: onnx.ValueInfoProto, override) -> tuple[int, ...]:
    t = value.type.tensor_type
    if not value.type.HasField("tensor_type"):
        raise FrontendError(f"input {value.name!r} is not a tensor; only tensor inputs are supported")
    dims = [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else None for d in t.shape.dim]
    labels = [d.dim_param or "?" for d in t.shape.dim]
    if override is not None:
        override = tuple(int(d) for d in override)
        if t.HasField("shape") and len(override) != len(dims):
            declared = "x".join(str(d) if d else labels[i] for i, d in enumerate(dims))
            raise FrontendError(f"input_shapes[{value.name!r}] = {override} has rank {len(override)}, "
                                f"but the model declares rank {len(dims)} ({declared}); give "
                                f"{len(dims)} dimensions (CLI: --input-shape {value.name}:"
                                f"{'x'.join(str(d or 1) for d in dims)})")
        if any(d <= 0 for d in override):
            raise FrontendError(f"input_shapes[{value.name!r}] = {override}: dimensions must be positive")
        return override
    if not t.HasField("shape") or None in dims:
        shown = "x".join(str(d) if d else labels[i] for i, d in enumerate(dims)) if t.HasField("shape") else "unknown"
        hint = (suggest_input_shape(value.name, [d or (labels[i] if labels[i] != "?" else None)
                                                 for i, d in enumerate(dims)])
                if t.HasField("shape") else f"--input-shape {value.name}:DIMS, e.g. 1x3x224x224")
        raise FrontendError(f"input {value.name!r} has dynamic shape {shown}; give a static one with "
                            f"input_shapes={{{value.name!r}: (...)}} (CLI: {hint})")
    return tuple(dims)


def from_onnx(model_or_path, input_shapes: Mapping[str, tuple[int, ...]] | None = None):
    """Import an ONNX model.

    model_or_path: path, bytes or onnx.ModelProto. input_shapes: optional
    {input name: static shape} overriding declared (or dynamic) input shapes.
    Returns (Graph, params): params maps PARAM names to numpy arrays (only
    those the graph reads).

    A model below opset MIN_OPSET is first converted to UPGRADE_OPSET (``upgrade_opset``).

    Raises FrontendError (unreadable/truncated/non-ONNX file, an opset above
    MAX_OPSET or one the version converter cannot lift, dynamic dimension
    without override, unknown input_shapes name, bad node attributes) and its
    subclass UnsupportedOperatorError (all unsupported operators at once).
    """
    model = upgrade_opset(load_model(model_or_path))
    opset = default_opset(model)
    check_operators(model)
    g = model.graph
    ctx = Context(opset)
    inits = {t.name for t in g.initializer}
    graph_inputs = [v for v in g.input if v.name not in inits]
    overrides = dict(input_shapes or {})
    unknown = set(overrides) - {v.name for v in graph_inputs}
    if unknown:
        raise FrontendError(f"input_shapes names {sorted(unknown)} are not graph inputs; the inputs are "
                            f"{[v.name for v in graph_inputs]} (CLI: --input-shape NAME:DIMS takes "
                            "one of those names)")
    for t in g.initializer:
        ctx.tensors[t.name] = ctx.param(numpy_helper.to_array(t), t.name)
    inputs, hint = [], ""
    for v in graph_inputs:
        dtype = helper.tensor_dtype_to_np_dtype(v.type.tensor_type.elem_type)
        inputs.append(input_node(v.name, _input_shape(v, overrides.get(v.name)), dtype))
        ctx.tensors[v.name] = inputs[-1]
        dims = v.type.tensor_type.shape.dim
        given = overrides.get(v.name)
        if given is not None and any(d.dim_value > 0 and d.dim_value != g
                                     for d, g in zip(dims, given)):
            declared = "x".join(str(d.dim_value) if d.dim_value > 0 else d.dim_param or "?"
                                for d in dims)
            hint += (f"; input {v.name!r} was given shape {'x'.join(map(str, given))} "
                     f"(input_shapes / --input-shape), the model declares {declared}")
    for node in g.node:
        try:
            outs = CONVERTERS[node.op_type](ctx, node, attributes(node))
        except GraphError as exc:
            raise FrontendError(f"{where(node)}: {exc}{hint}") from None
        except FrontendError as exc:
            if not hint:
                raise
            raise FrontendError(f"{exc}{hint}") from None
        outs = outs if isinstance(outs, tuple) else (outs,)
        for name, value in zip(node.output, outs):
            if name:
                ctx.tensors[name] = value
    outputs = []
    for v in g.output:
        if v.name not in ctx.tensors:
            raise FrontendError(f"graph output {v.name!r} is produced by no node")
        outputs.append(ctx.tensors[v.name])
    graph = Graph(tuple(inputs), tuple(outputs), tuple(v.name for v in g.output))
    used = graph.params_used()
    return graph, {k: v for k, v in ctx.params.items() if k in used}
