"""Placement by cost: each accelerator-able node goes where its estimated time is lower.

``partition`` marks every node the accelerator supports (the default placement,
``"supported"``). With ``Placement(kind="cost", ...)`` each of those nodes is then
weighed:

    accelerator  cycles of the node's compiled program (``cycles``: a runner handed in,
                 e.g. the cycle model's; else :func:`program_cycles`, the compiler's own
                 serial estimate) / ``clock_mhz``
    CPU          the node's int8 CPU kernel (``kernels.cpu_kernel``), built for this
                 machine and timed here (``cpu_timing.kernel_seconds``), or its MACs /
                 ``cpu_gmacs`` when the user states another host's throughput

and keeps the side with the lower time. ``force`` (op type -> "cpu" or "vta") overrides
both placements for that op type: "cpu" keeps every such node on the CPU; "vta" puts
every such node the accelerator can run (also a stem conv under the channel rule) on it.
The data movement around a node (pack/unpack on the CPU) is not counted.

Every weighed or forced node gets a :class:`Decision`; ``vta compile`` prints them as a table.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Mapping

import numpy as np

from vta_hw import timing
from vta_hw.isa import Alu, Gemm, Load, MemId, Store
from vta_hw.program import Program
from vta_hw.timing import DramTiming

from .qgraph import QGraph, QOp

#: placement kinds: "supported" (every node the accelerator runs), "cost" (per node, the faster side)
KINDS = ("supported", "cost")
#: sides a node can be forced to
SIDES = ("cpu", "vta")
#: op types the accelerator runs (QOp values) and so the ones ``force`` may name
ACCEL_OPS = (QOp.CONV2D.value, QOp.DENSE.value, QOp.ADD.value)


class PlacementError(ValueError):
    """A bad placement option; the message names it, the value and the choices."""


@dataclasses.dataclass(frozen=True)
class Placement:
    """How ``build_plan`` places nodes (module docstring).

    Attributes:
        kind: "supported" (default) or "cost".
        clock_mhz: the accelerator clock, MHz (cost only; required there).
        cycles: ``Program -> cycles`` runner (e.g. ``sim.cycle``'s); None: :func:`program_cycles`.
        cpu_gmacs: a stated host's int8 throughput, 1e9 multiply-accumulates per second
            (adds count one per element); None: measure each CPU kernel on this machine.
        cpu_target: the LLVM target the measured kernels are built for.
        force: op type ("conv2d", "dense", "add") -> "cpu" | "vta".
    """
    kind: str = "supported"
    clock_mhz: float | None = None
    cycles: Callable[[Program], float] | None = None
    cpu_gmacs: float | None = None
    cpu_target: str = "llvm"
    force: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        if self.kind not in KINDS:
            raise PlacementError(f"placement must be one of {', '.join(KINDS)}, not {self.kind!r}")
        for op, side in self.force.items():
            if op not in ACCEL_OPS:
                raise PlacementError(f"force: op type must be one of {', '.join(ACCEL_OPS)} (the "
                                     f"accelerator runs no other), not {op!r}")
            if side not in SIDES:
                raise PlacementError(f"force[{op!r}] must be 'cpu' or 'vta', not {side!r}")
        if self.kind == "cost" and not (self.clock_mhz and self.clock_mhz > 0):
            raise PlacementError(f"placement 'cost' needs the accelerator clock: clock_mhz must "
                                 f"be a positive number of MHz, not {self.clock_mhz!r} (the "
                                 "CLI defaults to the preset's board clock)")
        if self.cpu_gmacs is not None and not self.cpu_gmacs > 0:
            raise PlacementError(f"cpu_gmacs must be a positive number (1e9 int8 MACs per "
                                 f"second of the stated host), not {self.cpu_gmacs!r}")


@dataclasses.dataclass(frozen=True)
class Decision:
    """Where node ``node`` went and why: ``reason`` "cost" (times compared), "forced"."""
    node: int
    name: str
    op: str
    side: str
    reason: str
    vta_cycles: float | None = None
    vta_s: float | None = None
    cpu_s: float | None = None

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


def program_cycles(prog: Program, dram: DramTiming | None = None) -> float:
    """The compiler's own cycle estimate of ``prog``: every instruction's fetch (its 16 bytes
    over the bus) and decode, every DMA (bursts, DRAM latency, beats) and every GEMM/ALU
    uop iteration plus its pipeline, one after the other, no overlap. Within a few percent
    of the cycle model for DRAM-bound programs (a dense layer at batch 1: 22136 vs 22506
    cycles for 512 x 256), up to 1.7x above it where the cycle model overlaps loads with
    compute (3x3 convs); ``tests/e2e/test_vta_placement_cost.py`` checks the range."""
    from compiler.topi.vta.tiling import _dma_cycles
    cfg = prog.config
    dram = dram or DramTiming()
    per_insn = (timing.FETCH_CYCLES_PER_INSN + timing.INSN_DECODE_CYCLES
                + 16 * dram.beat_interval(cfg.bus_bytes) // cfg.bus_bytes)
    total = float(len(prog.insns) * per_insn)
    for insn in prog.insns:
        if isinstance(insn, (Load, Store)) and insn.x_size:
            elem = cfg.elem_bytes(MemId(insn.mem).name)
            total += _dma_cycles(insn.y_size, insn.x_size * elem, cfg, dram)
        elif isinstance(insn, (Gemm, Alu)):
            total += timing.GEMM_PIPELINE_DEPTH + (insn.uop_end - insn.uop_bgn) * max(
                insn.iter_out, 1) * max(insn.iter_in, 1)
    return total


def node_macs(qg: QGraph, i: int) -> int:
    """Multiply-accumulates of conv2d/dense node ``i`` (elements for an add)."""
    n = qg.nodes[i]
    out = int(np.prod(n.shape))
    if n.op is QOp.ADD:
        return out
    w = qg.params[n.params[0]]
    return out * int(np.prod(w.shape[1:]))


def decide(qg: QGraph, placement: Placement, kernel_of, cpu_seconds) -> tuple[QGraph, list[Decision]]:
    """Apply ``placement`` to a partitioned ``qg`` (module docstring).

    Args:
        qg: the output of ``partition`` (``target`` set on every node).
        placement: the options.
        kernel_of: ``i -> kernel`` compiling accelerator node ``i`` (``partition.compile_node``).
        cpu_seconds: ``i -> seconds`` of node ``i``'s CPU kernel on this machine.

    Returns:
        (the QGraph with the new targets, one Decision per weighed or forced node).
    """
    nodes, decisions = list(qg.nodes), []
    for i, n in enumerate(qg.nodes):
        forced = placement.force.get(n.op.value)
        if forced is not None and (n.target == "vta" or _runs_on_vta(qg, i)):
            nodes[i] = dataclasses.replace(n, target=forced)
            decisions.append(Decision(i, n.name, n.op.value, forced, "forced"))
            continue
        if placement.kind != "cost" or n.target != "vta":
            continue
        prog = kernel_of(i).program
        cyc = float(placement.cycles(prog) if placement.cycles else program_cycles(prog))
        vta_s = cyc / (placement.clock_mhz * 1e6)
        cpu_s = (node_macs(qg, i) / (placement.cpu_gmacs * 1e9) if placement.cpu_gmacs
                 else cpu_seconds(i))
        side = "vta" if vta_s <= cpu_s else "cpu"
        nodes[i] = dataclasses.replace(n, target=side)
        decisions.append(Decision(i, n.name, n.op.value, side, "cost", cyc, vta_s, cpu_s))
    return (QGraph(nodes, list(qg.inputs), list(qg.outputs), list(qg.output_names), qg.params),
            decisions)


def _runs_on_vta(qg: QGraph, i: int) -> bool:
    """Conv2d and dense run on the accelerator whatever their channels; adds as ``partition``."""
    return qg.nodes[i].op in (QOp.CONV2D, QOp.DENSE)


def format_table(decisions: list[Decision]) -> list[str]:
    """The decisions as text lines: node, op, accelerator cycles and time, CPU time, side."""
    lines = [f"  {'node':<28} {'op':<7} {'vta cycles':>11} {'vta us':>9} {'cpu us':>9}  side"]
    for d in decisions:
        def us(s):
            return f"{s * 1e6:9.1f}" if s is not None else f"{'-':>9}"
        cyc = f"{d.vta_cycles:11.0f}" if d.vta_cycles is not None else f"{'-':>11}"
        lines.append(f"  {(d.name or '%' + str(d.node))[:28]:<28} {d.op:<7} {cyc} {us(d.vta_s)} "
                     f"{us(d.cpu_s)}  {d.side}{' (forced)' if d.reason == 'forced' else ''}")
    return lines
