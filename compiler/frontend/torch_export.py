"""PyTorch frontend: a ``torch.export`` program -> ``(Graph, params)``.

``from_torch(module, example_inputs)`` exports an ``nn.Module`` (in eval mode),
``load_program(path)`` reads a saved program (``torch.export.save``, ``.pt2``),
and ``from_exported_program(ep)`` converts one: the program is decomposed to
core ATen ops (except ``KEEP``, converted whole), its parameters, buffers and
constants become PARAMs (named by their state-dict keys), its user inputs
become INPUTs (named by the ``forward`` arguments), and every ATen call goes
through ``compiler.frontend.torch_ops.CONVERTERS``. Outputs are named
``output`` (one) or ``output_0``, ``output_1``, ...

Dynamic dimensions (``dynamic_shapes`` at export) are a FrontendError naming
the input, the dimension and its symbol, unless ``input_shapes`` fixes the
input's shape; the program is then re-exported for those static shapes.
Importing this module imports torch (the ``torch`` extra).
"""

from __future__ import annotations

import operator
import os
import warnings
from typing import Mapping

import numpy as np
import torch

from ..graph.ir import Graph, Node, input_node
from .errors import FrontendError, UnsupportedAtenError
from .shapes import suggest_input_shape
from .torch_context import Context, op_name, source_line, where
from .torch_ops import CONVERTERS

#: composite ops kept out of the decompositions: each is one graph op (or a short
#: chain) here, and their decompositions would cost kernels (hardswish: four;
#: attention: masks for rows of -inf)
KEEP = ("aten.hardswish.default", "aten.scaled_dot_product_attention.default")
SUPPORTED_OPS = tuple(sorted(CONVERTERS))


def decompositions() -> dict:
    """The core-ATen decomposition table without the ops of ``KEEP``."""
    table = torch.export.default_decompositions()
    for op in list(table):
        if str(op) in KEEP:
            del table[op]
    return table


#: the FutureWarning torch 2.13 raises from inside ``ExportedProgram.run_decompositions``
_LEAF_SPEC_WARNING = r"`isinstance\(treespec, LeafSpec\)` is deprecated"


def decompose(ep):
    """``ep.run_decompositions(decompositions())``: the program in core ATen but ``KEEP``.

    torch 2.13's ``run_decompositions`` deep-copies the program's module call graph
    (``exported_program._get_updated_module_call_graph``); copying its pytree specs
    re-creates ``LeafSpec`` objects, a class torch marks deprecated
    (``torch/utils/_pytree.py``), so every call warns about torch's own use of it, which
    no argument of ours avoids. Exactly that warning is silenced here."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_LEAF_SPEC_WARNING, category=FutureWarning)
        return ep.run_decompositions(decompositions())


def numpy_dtype(dtype: torch.dtype) -> np.dtype:
    """The numpy dtype of a torch dtype; FrontendError for ones numpy lacks (bfloat16)."""
    try:
        return torch.empty((), dtype=dtype).numpy().dtype
    except TypeError:
        raise FrontendError(f"dtype {dtype} has no numpy equivalent; convert the model to "
                            "float32 (model.float())") from None


def to_numpy(t: torch.Tensor) -> np.ndarray:
    """A C-contiguous numpy copy of a tensor (parameters, buffers, constants)."""
    return np.ascontiguousarray(t.detach().cpu().numpy()).copy()


def export(module: torch.nn.Module, example_inputs, dynamic_shapes=None):
    """``torch.export.export`` of ``module`` in eval mode; FrontendError when the export fails
    (a data-dependent branch, an untraceable call)."""
    if not isinstance(module, torch.nn.Module):
        raise FrontendError(f"a PyTorch model must be a torch.nn.Module, not "
                            f"{type(module).__name__}")
    if example_inputs is None:
        raise FrontendError(f"{type(module).__name__}: give example_inputs=(tensor, ...) to "
                            "export a torch.nn.Module (e.g. example_inputs=(torch.randn(1, 3, 224, "
                            "224),)), or pass a torch.export.ExportedProgram")
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    if not isinstance(module, torch.fx.GraphModule):   # ep.module() refuses eval()
        module.eval()
    try:
        return torch.export.export(module, tuple(example_inputs), dynamic_shapes=dynamic_shapes)
    except Exception as exc:  # torch raises many types (UserError, Unsupported, ...)
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise FrontendError(f"torch.export of {type(module).__name__} failed: {first}; see "
                            "https://pytorch.org/docs/stable/export.html for what it traces"
                            ) from exc


def load_program(path) -> "torch.export.ExportedProgram":
    """A saved ``torch.export`` program (``torch.export.save``, ``.pt2``); FrontendError if the
    file is missing or not such a program."""
    label = repr(os.fspath(path))
    if not os.path.isfile(path):
        raise FrontendError(f"cannot read PyTorch program {label}: no such file")
    try:
        return torch.export.load(path)
    except Exception as exc:
        raise FrontendError(f"{label} is not a torch.export program ({type(exc).__name__}: "
                            f"{str(exc).strip().splitlines()[0] if str(exc).strip() else ''}); save "
                            "one with torch.export.save(torch.export.export(model, args), path)"
                            ) from None


def check_operators(graph) -> None:
    """UnsupportedAtenError listing every call of ``graph`` (an FX graph) without a converter."""
    bad = [(op_name(n), n.name, source_line(n)) for n in graph.nodes
           if n.op == "call_function" and n.target is not operator.getitem
           and op_name(n) not in CONVERTERS]
    if bad:
        raise UnsupportedAtenError(bad)


def _dynamic_dims(ep, input_shapes) -> list[tuple[str, str]]:
    """(input name, "input 'x' dimension 0 (s77)") for every symbolic dimension no input
    shape fixes."""
    out = []
    for spec in ep.graph_signature.input_specs:
        if spec.kind != torch.export.graph_signature.InputKind.USER_INPUT:
            continue
        name = spec.arg.name
        val = _placeholder(ep, name).meta.get("val")
        if name in input_shapes or not isinstance(val, torch.Tensor):
            continue
        for i, d in enumerate(val.shape):
            if not isinstance(d, int):
                out.append((name, f"input {name!r} dimension {i} ({d})"))
    return out


def _placeholder(ep, name):
    return next(n for n in ep.graph.nodes if n.op == "placeholder" and n.name == name)


def _user_inputs(ep) -> list:
    kinds = torch.export.graph_signature.InputKind
    return [s for s in ep.graph_signature.input_specs if s.kind == kinds.USER_INPUT]


def _static(ep, input_shapes: Mapping[str, tuple]) -> "torch.export.ExportedProgram":
    """``ep`` re-exported for the static shapes ``input_shapes`` gives (dynamic dims fixed)."""
    args = []
    for spec in _user_inputs(ep):
        val = _placeholder(ep, spec.arg.name).meta["val"]
        shape = input_shapes.get(spec.arg.name)
        if shape is None:
            shape = tuple(int(d) for d in val.shape)
        elif len(shape) != val.dim():
            raise FrontendError(f"input_shapes[{spec.arg.name!r}] = {tuple(shape)} has rank "
                                f"{len(shape)}, the program's input has rank {val.dim()}; give "
                                f"{val.dim()} dimensions")
        args.append(torch.zeros(tuple(shape), dtype=val.dtype))
    return export(ep.module(), tuple(args))


def from_exported_program(ep, input_shapes: Mapping[str, tuple] | None = None):
    """Convert a ``torch.export.ExportedProgram``: ``(Graph, params)``.

    Args:
        ep: the program (any dialect: it is decomposed to core ATen here).
        input_shapes: user input name -> static shape, fixing dynamic dimensions (the
            program is re-exported); names must be ``forward``'s tensor arguments.

    Raises:
        FrontendError: a dynamic dimension that ``input_shapes`` leaves open (naming the
            input, the dimension and its symbol), an unknown input name, a non-tensor
            input, a bad attribute of an op (naming the op, the node and its source line).
        UnsupportedAtenError: every ATen op without a converter, at once.
    """
    shapes = dict(input_shapes or {})
    names = [s.arg.name for s in _user_inputs(ep)]
    unknown = sorted(set(shapes) - set(names))
    if unknown:
        raise FrontendError(f"input_shapes names {unknown} are not inputs of the program; its "
                            f"inputs are {names} (CLI: --input-shape NAME:DIMS takes one of those)")
    dynamic = _dynamic_dims(ep, shapes)
    if dynamic:
        first = dynamic[0][0]     # the first input with a dynamic dimension
        hint = suggest_input_shape(first, [d if isinstance(d, int) else str(d)
                                           for d in _placeholder(ep, first).meta["val"].shape])
        raise FrontendError(f"the program has dynamic shapes: "
                            f"{', '.join(t for _, t in dynamic)}; give static shapes with "
                            f"input_shapes={{{first!r}: (1, ...)}} (CLI: {hint}), or export "
                            "without dynamic_shapes")
    fixed = {k: v for k, v in shapes.items()
             if tuple(v) != tuple(_placeholder(ep, k).meta["val"].shape)}
    if fixed:
        ep = _static(ep, shapes)
    ep = decompose(ep)
    check_operators(ep.graph)
    ctx = Context()
    consts = {**ep.state_dict, **ep.constants}
    kinds = torch.export.graph_signature.InputKind
    inputs = []
    for spec in ep.graph_signature.input_specs:
        name = spec.arg.name
        if spec.kind == kinds.USER_INPUT:
            val = _placeholder(ep, name).meta.get("val")
            if not isinstance(val, torch.Tensor):
                raise FrontendError(f"input {name!r} is a {type(val).__name__}, not a tensor; "
                                    "only tensor inputs are supported (bind other arguments "
                                    "with functools.partial or a wrapper module)")
            inputs.append(input_node(name, tuple(val.shape), numpy_dtype(val.dtype)))
            ctx.values[name] = inputs[-1]
        elif spec.kind in (kinds.PARAMETER, kinds.BUFFER, kinds.CONSTANT_TENSOR):
            ctx.values[name] = ctx.param(to_numpy(consts[spec.target]), spec.target)
        else:
            raise FrontendError(f"input {name!r} of kind {spec.kind.name} is not supported")
    outputs = convert_graph(ctx, ep.graph)
    kinds_out = torch.export.graph_signature.OutputKind
    user = [o for o, s in zip(outputs, ep.graph_signature.output_specs)
            if s.kind == kinds_out.USER_OUTPUT]
    names_out = ("output",) if len(user) == 1 else tuple(f"output_{i}" for i in range(len(user)))
    graph = Graph(tuple(inputs), tuple(user), names_out)
    used = graph.params_used()
    return graph, {k: v for k, v in ctx.params.items() if k in used}


def convert_graph(ctx: Context, graph) -> list[Node]:
    """Convert the calls of an FX ``graph`` whose placeholders ``ctx.values`` already holds;
    returns the output nodes (FrontendError for an output that is no tensor)."""
    for n in graph.nodes:
        if n.op == "call_function":
            if n.target is operator.getitem:
                ctx.values[n.name] = ctx.values[n.args[0].name][n.args[1]]
                continue
            value = CONVERTERS[op_name(n)](ctx, n)
            _check_shape(ctx, n, value)
            ctx.values[n.name] = value
        elif n.op == "output":
            outs = n.args[0] if isinstance(n.args[0], (list, tuple)) else (n.args[0],)
            result = []
            for o in outs:
                value = ctx.values.get(getattr(o, "name", None))
                if not isinstance(value, Node):
                    raise FrontendError(f"output {o} is not a tensor; return tensors only")
                result.append(value)
            return result
    raise FrontendError("the FX graph has no output node")


def _check_shape(ctx, n, value) -> None:
    """A converter's result must have torch's shape (catches converter bugs at their node)."""
    val = n.meta.get("val")
    if isinstance(value, Node) and isinstance(val, torch.Tensor):
        want = tuple(int(d) for d in val.shape)
        if value.shape != want:
            raise FrontendError(f"{where(n)}: converted to shape {list(value.shape)}, torch "
                                f"computes {list(want)}; this is a converter bug in "
                                "compiler/frontend/torch_ops/")


def from_torch(model, example_inputs=None, input_shapes=None):
    """An ``nn.Module`` (exported with ``example_inputs``), a ``torch.export`` program, or the
    path of a saved one (``.pt2``) -> ``(Graph, params)``; see ``from_exported_program``."""
    if isinstance(model, (str, os.PathLike)):
        model = load_program(model)
    if isinstance(model, torch.nn.Module):
        model = export(model, example_inputs)
    return from_exported_program(model, input_shapes)
