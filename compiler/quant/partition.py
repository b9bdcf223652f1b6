"""Partition a ``QGraph`` between the accelerator and the CPU, and compile the accelerator part.

``partition(qg, cfg)`` marks a node ``target="vta"`` when the accelerator can run
it and packing pays:

- CONV2D / DENSE (GEMM + bias + requantize + relu + clip, ``conv2d_program``; per-tensor
  or per-channel shifts) with at least ``min_channels`` input channels (default
  BLOCK_IN / 4; a first conv over 1 or 3 image channels would waste 15/16 or 13/16 of
  every GEMM and stays on the CPU);
- ADD, the residual add (``add_program``: GEMM against identity blocks to widen the
  int8 operands into the accumulator, ALU shifts, rounding, relu, clip), on 2-D or
  3-D (as 2-D rows) or 4-D tensors with ``la``, ``lb`` and ``shift`` in [0, 31] (what int32 shifts allow;
  the quantizer's are small), else on the CPU.

Everything else (pooling, MEAN, reshapes, resize, concat, float ops such as
softmax, quantize/dequantize) runs on the CPU.

``build_plan(qg, cfg)`` compiles each accelerator node (weights, bias and identity
blocks baked into its program's "param" buffers) and lays out the execution plan:
a list of ``Step``s in order, with the data movement inserted:

    cpu     node             run the node on the CPU: a compiled kernel (``kernels``,
                             ``lower_plan``); ``qgraph.eval_node`` is its numpy oracle
    pack    value -> packed  NCHW int8 -> the accelerator's NCHWnc (``layout.pack_nchw``),
                             the shape of input ``arg`` of the node's program
    vta     packed.. -> packed  run the node's program: its "input" buffers ("data" for
                             conv/dense, "lhs" and "rhs" for add) in, "out" out
    unpack  packed -> value  NCHWnc -> NCHW, cropped to the real channels

A packed output feeds the next accelerator node directly when its layout is that
node's input layout (same packed shape): conv -> add -> conv chains stay packed,
with no unpack/pack round trip. A CPU value packs once per packed shape, however
many accelerator nodes read it.
"""
from __future__ import annotations

import dataclasses
import time

import numpy as np

from compiler.topi.vta import add_program, conv2d_program
from compiler.topi.vta.environment import Env
from vta_hw.config import VTAConfig
from vta_hw.program import Program
from vta_hw.timing import DramTiming

from .qgraph import QGraph, QOp


@dataclasses.dataclass(frozen=True)
class Step:
    """One step of the execution plan (module docstring). Values are named strings."""
    kind: str                 # "cpu" | "pack" | "vta" | "unpack"
    node: int                 # the QGraph node this step belongs to
    inputs: tuple[str, ...]
    output: str
    arg: int = 0              # pack: which input buffer of the node's program

    def to_json(self) -> dict:
        return {"kind": self.kind, "node": self.node, "inputs": list(self.inputs),
                "output": self.output, "arg": self.arg}

    @classmethod
    def from_json(cls, d: dict) -> "Step":
        return cls(d["kind"], d["node"], tuple(d["inputs"]), d["output"], d.get("arg", 0))


@dataclasses.dataclass
class Plan:
    """The partitioned, compiled model: plan steps and one program per accelerator node."""
    qgraph: QGraph
    steps: list[Step]
    programs: dict[int, Program]          # node index -> program
    config: VTAConfig
    layer_stats: dict[int, dict]          # node index -> compile figures
    compile_s: float
    placement: list = dataclasses.field(default_factory=list)  # placement.Decision per weighed node


def partition(qg: QGraph, cfg: VTAConfig, *, min_channels: int | None = None) -> QGraph:
    """Set ``target`` on every node (module docstring); returns a new QGraph."""
    env = Env(cfg)
    if min_channels is None:
        min_channels = max(1, env.BLOCK_IN // 4)
    nodes = []
    for n in qg.nodes:
        target = "cpu"
        if n.op in (QOp.CONV2D, QOp.DENSE) and n.attrs.get("table") is None:
            w = qg.params[n.params[0]]
            if w.shape[1] >= min_channels:
                target = "vta"
        elif n.op is QOp.ADD and len(n.shape) in (2, 3, 4) and all(
                0 <= n.attrs[k] <= 31 for k in ("la", "lb", "shift")):
            target = "vta"
        nodes.append(dataclasses.replace(n, target=target))
    return QGraph(nodes, list(qg.inputs), list(qg.outputs), list(qg.output_names), qg.params)


def _value(i: int) -> str:
    return f"%{i}"


def input_buffers(prog: Program) -> list[str]:
    """Names of a program's "input" buffers, in the order of its node's sources."""
    return [b.name for b in prog.buffers if b.kind == "input"]


def _as_image(shape) -> tuple[int, ...]:
    """The NCHW shape an accelerator program sees for a 2-D (N, C), 3-D (B, S, C) (as the
    2-D (B*S, C): a transformer's residual add) or 4-D value."""
    if len(shape) == 4:
        return tuple(shape)
    return (1, shape[-1], 1, int(np.prod(shape[:-1])))


def compile_node(qg: QGraph, i: int, cfg: VTAConfig, *, vthreads: int = 2,
                 dram: DramTiming | None = None, measure=None, tiling_for=None):
    """The kernel of accelerator node ``i``: a ``Conv2dKernel`` (conv2d/dense, weights and
    bias baked into its program) or an ``AddKernel`` (add). ``tiling_for(data_shape,
    kernel_shape, strides, padding, shift) -> Tiling | None`` gives a conv's tuned tiling
    (``compiler.autotune``; None: the tile search's)."""
    n = qg.nodes[i]
    a = n.attrs
    if n.op is QOp.ADD:
        return add_program(cfg, _as_image(n.shape), la=a["la"], lb=a["lb"], shift=a["shift"],
                           relu=a["relu"], vthreads=vthreads, dram=dram, measure=measure)
    x = qg.nodes[n.src[0]]
    w, b = (qg.params[p] for p in n.params)
    if n.op is QOp.CONV2D:
        t = tiling_for(x.shape, w.shape, a["strides"], a["padding"], a["shift"]) if tiling_for \
            else None
        k = conv2d_program(cfg, x.shape, w.shape, a["strides"], a["padding"], shift=a["shift"],
                           relu=a["relu"], bias=True, mult=a.get("mult"), post=a.get("post", 15),
                           zero=n.zp, vthreads=vthreads, dram=dram, measure=measure, tiling=t)
    else:
        # dense (N, C) x (O, C) as a 1x1 conv over a 1 x N image: the rows become pixels
        # of one image row, so the tile search blocks them and each DMA row moves many
        # (N batch blocks of one pixel each would run one pixel per tile: 5x the cycles)
        img, kshape = _as_image(x.shape), w.shape + (1, 1)
        t = tiling_for(img, kshape, 1, 0, a["shift"]) if tiling_for else None
        k = conv2d_program(cfg, img, kshape, shift=a["shift"], relu=a["relu"], bias=True,
                           mult=a.get("mult"), post=a.get("post", 15), zero=n.zp,
                           vthreads=vthreads, dram=dram, measure=measure, tiling=t)
        w = w[:, :, None, None]
    baked = k.params(w, b)   # kernel, bias and, with per-channel weights, the shifts
    bufs = [dataclasses.replace(s, data=baked[s.name]) if s.name in baked else s
            for s in k.program.buffers]
    k.program = dataclasses.replace(k.program, buffers=bufs)
    return k


def build_plan(qg: QGraph, cfg: VTAConfig, *, vthreads: int = 2, dram: DramTiming | None = None,
               measure=None, min_channels: int | None = None, tiling_for=None,
               placement=None) -> Plan:
    """Partition ``qg`` and compile its accelerator nodes (module docstring; ``tiling_for``
    as ``compile_node``'s); ``placement`` (a ``placement.Placement``) then moves nodes by
    cost or by the user's ``force``."""
    from .cpu_timing import kernel_seconds
    from .placement import decide
    t0 = time.perf_counter()
    qg = partition(qg, cfg, min_channels=min_channels)
    compiled: dict[int, object] = {}

    def kernel_of(i: int):
        if i not in compiled:
            compiled[i] = compile_node(qg, i, cfg, vthreads=vthreads, dram=dram, measure=measure,
                                       tiling_for=tiling_for)
        return compiled[i]
    decisions = []
    if placement is not None:
        qg, decisions = decide(qg, placement, kernel_of,
                               lambda i: kernel_seconds(qg, i, placement.cpu_target))
    programs, stats, steps = {}, {}, []
    packed_of: dict[int, str] = {}     # node -> name of its packed value (a program's "out")
    packed_cpu: dict[tuple, str] = {}  # (node, packed shape) -> name of a CPU value packed
    have_plain: set[int] = set(qg.inputs)
    unpack_needed = {i: False for i in range(len(qg.nodes))}
    for i, n in enumerate(qg.nodes):
        for s in n.src:
            if n.target != "vta":
                unpack_needed[s] = True
    for o in qg.outputs:
        unpack_needed[o] = True

    def plain(s: int) -> str:
        if s not in have_plain:
            steps.append(Step("unpack", s, (packed_of[s],), _value(s)))
            have_plain.add(s)
        return _value(s)

    def packed(s: int, i: int, arg: int, want: tuple) -> str:
        """Node ``s``'s value in the packed shape ``want`` of input ``arg`` of node ``i``."""
        src_prog = programs.get(s)
        if s in packed_of and src_prog is not None and src_prog.buffer("out").shape == want:
            return packed_of[s]
        if (s, want) not in packed_cpu:
            name = f"{_value(s)}.packed@{i}" + (f".{arg}" if arg else "")
            steps.append(Step("pack", i, (plain(s),), name, arg))
            packed_cpu[(s, want)] = name
        return packed_cpu[(s, want)]

    for i, n in enumerate(qg.nodes):
        if n.op is QOp.INPUT:
            continue
        if n.target != "vta":
            steps.append(Step("cpu", i, tuple(plain(s) for s in n.src), _value(i)))
            have_plain.add(i)
            continue
        k = kernel_of(i)
        programs[i] = k.program
        stats[i] = {"name": n.name, "op": n.op.value, "compile_s": k.compile_s,
                    "tiling": str(k.tiling),
                    "insns": len(k.program.insns), "uops": len(k.program.uops)}
        names = input_buffers(k.program)
        if len(names) != len(n.src):
            raise ValueError(f"node %{i} {n.name!r} ({n.op.value}) has {len(n.src)} inputs but "
                             f"its program takes {len(names)} ({names})")
        ins = tuple(packed(s, i, j, tuple(k.program.buffer(b).shape))
                    for j, (s, b) in enumerate(zip(n.src, names)))
        packed_of[i] = f"{_value(i)}.packed"
        steps.append(Step("vta", i, ins, packed_of[i]))
        if unpack_needed[i]:
            plain(i)
    return Plan(qg, steps, programs, cfg, stats, time.perf_counter() - t0, decisions)


def pack_value(cfg: VTAConfig, x: np.ndarray, shape) -> np.ndarray:
    """NCHW (or dense (N, C)) int8 -> the packed ``shape`` of a program's input buffer."""
    from compiler.topi.vta.layout import pack_nchw
    env = Env(cfg)
    x = np.asarray(x, np.int8)
    if x.ndim in (2, 3):  # rows as the pixels of a (1, C, 1, N) image (``compile_node``)
        x = x.reshape(-1, x.shape[-1]).T[None, :, None, :]
    p = pack_nchw(x, env.BATCH, env.BLOCK_IN)
    if p.shape != tuple(shape):
        raise ValueError(f"packed value has shape {p.shape}, the program's input buffer "
                         f"{tuple(shape)}; the module and its plan disagree, recompile it")
    return p


def unpack_value(packed: np.ndarray, shape) -> np.ndarray:
    """A program's packed "out" -> NCHW (or N, C) int8 of ``shape``."""
    from compiler.topi.vta.layout import unpack_nchw
    if len(shape) in (2, 3):  # dense: (1, O, 1, N) -> (N, O), 3-D rows (B, S, O)
        return np.ascontiguousarray(unpack_nchw(packed, 1, shape[-1])[0, :, 0, :].T).reshape(shape)
    return unpack_nchw(packed, shape[0], shape[1])
