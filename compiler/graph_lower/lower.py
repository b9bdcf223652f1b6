"""One FUSED graph node -> one scheduled ``te`` kernel (``KernelDef``).

A fused group is declared by walking its body in topological order; each op
is declared by the implementation that the strategy registry selects for it
on the target (``compiler.graph_lower.strategy``, entries in ``impls/``):

* injective ops compose :class:`~compiler.topi.injective.Lazy` index
  functions (inlined, no loop nest of their own);
* the group's master (conv2d, dense, matmul, pooling, reduction, softmax,
  layer norm) becomes real ``te`` stages from ``compiler.topi`` and records a
  :class:`~compiler.graph_lower.master.Master` (kind, accumulator, node, its
  schedule template at the chosen config point);
* the group's result is materialised as the kernel's output stage.

When everything after the master is elementwise on the master's shape
("aligned"), the output stage *is* the epilogue: the master's accumulator
is ``compute_at`` its column-tile loop, so bias, residual and activation
are applied to the register tile before it is stored. Otherwise the master
runs at the root and the output stage is an injective kernel reading it
(``compiler.graph_lower.schedule``).

Constant weights are re-laid out here, once, at compile time, as the chosen
implementation asks (conv: ``OIHW -> [O/ob, I, KH, KW, ob]``; dense:
``[N, K] -> [N/nb, K, nb]``); ``KernelDef.packs`` says, per input, which
packing feeds it, so kernels of equally shaped layers are shared.

Kernel ABI: ``int32 name(void *arg0, ...)``: the group's inputs in ``node.src``
order, then compile-time constant tables (``KernelDef.constants``), then
workspace buffers (padded copies, softmax stages: scratch the runtime
provides), then the output; all C-contiguous, in the shapes of
``KernelDef.args``.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np

from compiler import te
from compiler.codegen.llvm.target import Target, host_target, parse_target
from compiler.graph import Graph, Node, Op
from compiler.topi import conv2d as tconv
from compiler.topi import dense as tdense
from compiler.topi import winograd as twino
from compiler.topi.injective import Lazy

from .builder import Builder, view
from .master import Master
from .schedule import schedule_group
from .space import Config
from .strategy import LoweringError, Workload, default_registry


@dataclass
class KernelDef:
    """A scheduled kernel for one fused-group signature.

    Attributes:
        schedule: the ``te.Schedule``.
        args: te tensors in ABI order (inputs, workspaces, output).
        n_inputs: how many leading args are the group's inputs.
        packs: per input, None or a packing tag ("conv:<ob>", "dense:<nb>")
            applied to that (constant) input before it is passed.
        workspace: the workspace tensors (between the constants and the output).
        pattern: the group's pattern name.
        constants: compile-time tables (numpy arrays) passed right after the
            inputs (e.g. resize source indices and weights).
        master: the group's master (None for an injective group).
    """

    schedule: object
    args: list
    n_inputs: int
    packs: list
    workspace: list = field(default_factory=list)
    pattern: str = ""
    constants: list = field(default_factory=list)
    master: "Master | None" = None


def pack_param(value: np.ndarray, tag: str) -> np.ndarray:
    """Apply a packing tag from :class:`KernelDef` to a constant."""
    kind, b = tag.split(":")
    if kind == "conv":
        return tconv.pack_conv_kernel(value, int(b))
    if kind in ("wino2", "wino4"):
        return twino.transform_weight(value, int(kind[4:]), int(b))
    if kind == "dense":
        return tdense.pack_dense_weight(value, int(b))
    if kind == "dense_t":
        return tdense.pack_dense_weight(np.ascontiguousarray(value.T), int(b))
    raise ValueError(f"unknown packing tag {tag!r}")


def signature(node: Node) -> tuple:
    """Cache key of a FUSED node: its body (structural) and, per input, shape, dtype and
    whether it is a constant (constants may be packed)."""
    return (node.attr("body"),
            tuple((s.shape, s.dtype, s.op is Op.PARAM) for s in node.src))


def _packed_shape(shape, tag):
    kind, b = tag.split(":")
    b = int(b)
    if kind == "conv":
        O, I, KH, KW = shape
        return (O // b, I, KH, KW, b)
    if kind in ("wino2", "wino4"):
        O, I, _, _ = shape
        alpha = int(kind[4:]) + 2
        return (alpha, alpha, O // b, I, b)
    if kind == "dense":
        N, K = shape
        return (N // b, K, b)
    K, N = shape
    return (N // b, K, b)


def lower_group(node: Node, name: str, target: "Target | str | None" = None,
                config: "Config | None" = None) -> KernelDef:
    """Declare and schedule the kernel of FUSED ``node`` (see the module docstring).

    Args:
        node: a FUSED node.
        name: the kernel's name (stage names are made unique within it).
        target: the LLVM target whose implementations apply (default: this machine).
        config: a point of the master implementation's config space (default: its
            default point, the hand-picked schedule).

    Raises:
        LoweringError: an operator or attribute value that no implementation lowers
            (the message says why each one does not apply), or conflicting packings of
            one constant.
        ValueError: ``config`` is not a point of the master's space, or the group has
            no master to apply it to.
    """
    tgt = host_target() if target is None else parse_target(target)
    body: Graph = node.attr("body")
    consts = tuple(inp for inp, s in zip(body.inputs, node.src) if s.op is Op.PARAM)
    chosen = _choose(body, tgt, consts, config, node.attr("name"))
    packs = _packing(body, chosen, node.attr("name"))
    placeholders = []
    env: dict = {}
    for i, inp in enumerate(body.inputs):
        shape = _packed_shape(inp.shape, packs[i]) if i in packs else inp.shape
        if shape == ():
            # 0-d tensors travel as one element (the loop IR indexes with at least one axis)
            ph = te.placeholder((1,), inp.dtype, f"p{i}")
            env[inp] = Lazy((), inp.dtype, lambda ph=ph: ph[0])
        else:
            ph = te.placeholder(shape, inp.dtype, f"p{i}")
            env[inp] = view(ph)
        placeholders.append(ph)
    b = Builder(name, {body.inputs[i]: tag for i, tag in packs.items()})
    for n in body.nodes():
        if n in env:
            continue
        impl, _, cfg = chosen[n]
        env[n], acc = impl.compute(b, n, [env[s] for s in n.src], cfg)
        if impl.kind is not None:
            b.master = Master(impl.kind, acc, n, functools.partial(impl.schedule, cfg=cfg))
    root = body.outputs[0]
    s, out = schedule_group(b, body, root, env[root])
    workspace = [t for t in b.workspace if t is not out]
    args = placeholders + [ph for ph, _ in b.constants] + workspace + [out]
    return KernelDef(s, args, len(placeholders), [packs.get(i) for i in range(len(placeholders))],
                     workspace, node.attr("pattern"), [v for _, v in b.constants], b.master)


def _choose(body: Graph, target: Target, consts: tuple, config: "Config | None",
            group: str) -> dict:
    """Body node -> (implementation, workload, config point), for every non-input node."""
    registry = default_registry()
    inputs = set(body.inputs)
    chosen: dict = {}
    for n in body.nodes():
        if n in inputs or n in chosen:
            continue
        w = Workload(n, target, consts)
        impl = registry.select(w)
        space = impl.space(w)
        master = impl.kind is not None
        cfg = space.point(**config.as_dict()) if config is not None and master else space.default
        chosen[n] = (impl, w, cfg)
    if config is not None and all(impl.kind is None for impl, _, _ in chosen.values()):
        raise ValueError(f"config {config.as_dict()} given for group {group!r}, which has no "
                         "master op to apply it to")
    return chosen


def _packing(body: Graph, chosen: dict, group: str) -> dict:
    """Input index -> packing tag, for the constant inputs the chosen implementations pack."""
    index = {n: i for i, n in enumerate(body.inputs)}
    packs: dict = {}
    for n, (impl, w, cfg) in chosen.items():
        for s, tag in impl.packs(w, cfg).items():
            if not w.is_const(n.src[s]):
                continue
            i = index[n.src[s]]
            if packs.setdefault(i, tag) != tag:
                raise LoweringError(f"constant input {i} of group {group!r} is packed two ways: "
                                    f"{packs[i]!r} and {tag!r} ({impl.name} of node "
                                    f"{n.label or n})")
    return packs
