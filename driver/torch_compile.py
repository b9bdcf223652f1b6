"""``torch.compile(model, backend="vta")``: a TorchDynamo backend over ``build_model``.

Registered through the ``torch_dynamo_backends`` entry-point group (pyproject.toml),
so the name works without importing this module. Per graph that Dynamo captures:

1. for each new combination of input shapes and dtypes (the shape cache), the graph
   is exported (``torch.export``) with those inputs and decomposed to core ATen ops,
   the weights Dynamo passes as inputs (parameters and buffers) frozen as constants;
2. the ATen graph is partitioned: runs of ops with converters
   (``compiler.frontend.torch_ops``) become one compiled module each (``build_model``
   for ``options["target"]``, the host CPU by default), the rest runs in eager
   PyTorch (the fallback), as does any partition the compiler rejects;
3. compiled partitions run through ``driver.runtime`` (inputs shared by DLPack, outputs
   returned as owning tensors).

Usage::

    compiled = torch.compile(model, backend="vta")                        # host CPU
    compiled = torch.compile(model, backend="vta", options={"target": "llvm -mcpu=x86-64-v3"})
    y = compiled(x)

Weights are read at compile time: after changing them, call ``torch._dynamo.reset()``.
``STATS`` counts graphs, compiles (shape-cache misses), cache hits, compiled
partitions and the ATen ops left to eager.
"""
from __future__ import annotations

import collections
import operator

import torch
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase

from compiler.frontend.errors import FrontendError
from compiler.frontend.torch_context import Context, op_name
from compiler.frontend.torch_export import (convert_graph, decompose, numpy_dtype,
                                            to_numpy)
from compiler.frontend.torch_ops import CONVERTERS

#: counters over this process: graphs (backend calls), compiles (shape-cache misses),
#: cache_hits, partitions (compiled modules), eager_ops (ATen op -> count left to eager)
STATS = {"graphs": 0, "compiles": 0, "cache_hits": 0, "partitions": 0,
         "eager_ops": collections.Counter()}


def vta_backend(gm: torch.fx.GraphModule, example_inputs, options: "dict | None" = None,
                mode: "str | None" = None):
    """The backend: a callable that runs ``gm`` (compiled per input shapes, on first use).

    Args:
        gm: the FX graph Dynamo captured; ``example_inputs``: its (fake or real) inputs.
        options: ``target`` (default ``"llvm"``) and any other ``build_model`` keyword
            (``opt_level``, or for ``target="vta"``: ``config``, ``calib``, ...).
        mode: ignored (torch.compile's modes are inductor's).
    """
    STATS["graphs"] += 1
    return ShapeCache(gm, dict(options or {}))


class ShapeCache:
    """Runs a Dynamo graph, one compiled program per input shapes/dtypes."""

    def __init__(self, gm, options: dict):
        self.gm, self.options = gm, options
        self.programs: dict = {}

    def __call__(self, *args):
        key = tuple((tuple(a.shape), a.dtype) if isinstance(a, torch.Tensor) else a for a in args)
        run = self.programs.get(key)
        if run is None:
            STATS["compiles"] += 1
            run = self.programs[key] = _compile(self.gm, args, self.options)
        else:
            STATS["cache_hits"] += 1
        return run(*args)


def _frozen(t) -> bool:
    """Whether Dynamo passed ``t`` as a weight (a parameter or a static buffer)."""
    return isinstance(t, torch.nn.Parameter) or getattr(t, "_dynamo_static_input_type", None) is not None


class _Supported(OperatorSupportBase):
    def is_node_supported(self, submodules, node) -> bool:
        if node.op != "call_function":
            return False
        if node.target is operator.getitem:
            src = node.args[0]
            return src.op == "call_function" and op_name(src) in CONVERTERS
        return op_name(node) in CONVERTERS


def _compile(gm, args, options):
    """A function of ``args`` that runs ``gm`` with supported partitions compiled."""
    with torch.no_grad():
        ep = torch.export.export(gm, tuple(args), strict=False)
        ep = decompose(ep)
    kinds = torch.export.graph_signature.InputKind
    consts = {**ep.state_dict, **ep.constants}
    flat, known = [], {}       # per placeholder: an arg index or a fixed tensor
    k = 0
    for spec in ep.graph_signature.input_specs:
        if spec.kind == kinds.USER_INPUT:
            flat.append(k)
            if isinstance(args[k], torch.Tensor) and _frozen(args[k]):
                known[spec.arg.name] = args[k]
            k += 1
        else:
            flat.append(consts[spec.target])
            known[spec.arg.name] = consts[spec.target]
    fused_gm = ep.graph_module
    partitioner = CapabilityBasedPartitioner(fused_gm, _Supported(), allows_single_node_partition=True)
    fused_gm = partitioner.fuse_partitions(partitioner.propose_partitions())
    for node in fused_gm.graph.nodes:
        if node.op == "call_module":
            sub = getattr(fused_gm, node.target)
            runner = _compile_partition(sub, node, known, options)
            if runner is not None:
                setattr(fused_gm, node.target, runner)
                STATS["partitions"] += 1
        elif node.op == "call_function" and node.target is not operator.getitem:
            STATS["eager_ops"][op_name(node)] += 1
    fused_gm.recompile()

    def run(*call_args):
        return fused_gm(*[call_args[v] if isinstance(v, int) else v for v in flat])
    return run


def _compile_partition(sub, call, known, options):
    """A ``_Runner`` for one partition, or None (eager) when the compiler rejects it."""
    from compiler import build_model
    from compiler.graph.ir import Graph, input_node
    from compiler.graph_lower import LoweringError
    from driver.runtime import load_module

    ctx = Context()
    inputs = []
    places = [n for n in sub.graph.nodes if n.op == "placeholder"]
    for place, outer in zip(places, call.args):
        name = f"in{len(inputs)}"
        if isinstance(outer, torch.fx.Node) and outer.op == "placeholder" and outer.name in known:
            ctx.values[place.name] = ctx.param(to_numpy(known[outer.name]), outer.name)
            continue
        val = place.meta.get("val", outer.meta.get("val") if isinstance(outer, torch.fx.Node) else None)
        if not isinstance(val, torch.Tensor):
            return None
        inputs.append(input_node(name, tuple(int(d) for d in val.shape), numpy_dtype(val.dtype)))
        ctx.values[place.name] = inputs[-1]
    out_node = next(n for n in sub.graph.nodes if n.op == "output")
    single = not isinstance(out_node.args[0], (tuple, list))
    try:
        outs = convert_graph(ctx, sub.graph)
        graph = Graph(tuple(inputs), tuple(outs), tuple(f"out{i}" for i in range(len(outs))))
        used = graph.params_used()
        cm = build_model(graph, params={k: v for k, v in ctx.params.items() if k in used},
                         **options)
    except (FrontendError, LoweringError):
        for n in sub.graph.nodes:
            if n.op == "call_function" and n.target is not operator.getitem:
                STATS["eager_ops"][op_name(n)] += 1
        return None
    frozen_positions = [i for i, (place, outer) in enumerate(zip(places, call.args))
                        if isinstance(outer, torch.fx.Node) and outer.op == "placeholder"
                        and outer.name in known]
    return _Runner(load_module(cm), frozen_positions, single)


class _Runner(torch.nn.Module):
    """A compiled partition in the FX graph: tensors in (shared by DLPack), tensors out."""

    def __init__(self, module, frozen_positions, single: bool):
        super().__init__()
        self.module, self.single = module, single
        self.frozen = set(frozen_positions)

    def forward(self, *tensors):
        k = 0
        for i, t in enumerate(tensors):
            if i in self.frozen:
                continue
            self.module.set_input(k, t.detach())
            k += 1
        self.module.run()
        outs = tuple(torch.from_numpy(self.module.get_output(i))
                     for i in range(self.module.num_outputs))
        return outs[0] if self.single else outs
