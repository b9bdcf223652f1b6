"""Event counters of a functional run (``FunctionalResult.counters``), and the counts a
program implies whatever runs it (GEMM MACs, bus bytes).

Units: instructions, bytes (of DRAM moved), uop iterations, SRAM elements, tokens.
"""
from __future__ import annotations

import dataclasses

from sim.dram import DramModel
from vta_hw.isa import Gemm, Load, MemId, Store
from vta_hw.timing import DramTiming


@dataclasses.dataclass
class Counters:
    """What one run did.

    Attributes:
        insns: instructions executed per kind ("LOAD", "STORE", "GEMM", "ALU", "FINISH").
        insns_by_module: instructions executed per module ("load", "compute", "store").
        bytes_loaded: DRAM bytes read by LOADs per memory ("uop", "wgt", "inp", "acc").
        bytes_stored: DRAM bytes written by STOREs per memory ("out").
        gemm_uops: GEMM uop iterations (resets included).
        alu_uops: ALU uop iterations (resets included); alu_ops: the same per ALU opcode.
        noop_memops: LOAD/STORE with x_size == 0 (token-only).
        padded_elems: SRAM elements zero-filled by LOAD padding.
        tokens_pushed, tokens_popped: per queue ("l2c", "c2l", "c2s", "s2c").
        steps: scheduler steps that executed an instruction.
    """

    insns: dict[str, int] = dataclasses.field(default_factory=dict)
    insns_by_module: dict[str, int] = dataclasses.field(default_factory=dict)
    bytes_loaded: dict[str, int] = dataclasses.field(default_factory=dict)
    bytes_stored: dict[str, int] = dataclasses.field(default_factory=dict)
    gemm_uops: int = 0
    alu_uops: int = 0
    alu_ops: dict[str, int] = dataclasses.field(default_factory=dict)
    noop_memops: int = 0
    padded_elems: int = 0
    tokens_pushed: dict[str, int] = dataclasses.field(default_factory=dict)
    tokens_popped: dict[str, int] = dataclasses.field(default_factory=dict)
    steps: int = 0

    def add_bytes(self, direction: str, mem: str, n: int) -> None:
        d = self.bytes_loaded if direction == "loaded" else self.bytes_stored
        d[mem] = d.get(mem, 0) + int(n)

    def to_dict(self) -> dict:
        """A plain, JSON-ready dict (nested dicts copied)."""
        return {k: (dict(v) if isinstance(v, dict) else v)
                for k, v in dataclasses.asdict(self).items()}


def program_gemm_macs(program) -> int:
    """Multiply-accumulates the GEMMs of ``program`` (a ``vta_hw.program.Program``) do.

    Every instruction runs exactly once, so this is a property of the stream: a
    non-reset GEMM does ``iter_out * iter_in * (uop_end - uop_bgn)`` uop iterations
    (none when ``uop_end <= uop_bgn``) of ``BATCH * BLOCK_IN * BLOCK_OUT`` MACs each.
    It equals ``sim.cycle``'s ``gemm_macs``; backends that count cycles but not MACs
    (RTL, FPGA) report it.
    """
    uops = sum(i.iter_out * i.iter_in * max(0, i.uop_end - i.uop_bgn)
               for i in program.insns if isinstance(i, Gemm) and not i.reset)
    return uops * program.config.macs_per_cycle


def program_bus_bytes(program, dram_timing=None) -> tuple[int, int]:
    """(read, written) bytes ``program`` moves on the memory port, as ``sim.cycle`` and the RTL
    count them: whole bus beats of every LOAD/STORE row and of the instruction fetch, split
    into the bursts of ``dram_timing`` (default ``DramTiming()``). No timing is involved, so
    the functional simulator reports the same DRAM bytes as the cycle simulator."""
    cfg = program.config
    dram = DramModel(dram_timing or DramTiming(), cfg.bus_bytes)
    read = sum(b for _, b in dram.bursts(program.insn_base, 16 * len(program.insns)))
    written = 0
    for insn in program.insns:
        if not isinstance(insn, (Load, Store)) or insn.x_size == 0 or insn.y_size == 0:
            continue
        if isinstance(insn, Load) and insn.mem == MemId.OUT:  # a compute LOAD of OUT moves nothing
            continue
        beats = sum(sum(r) for r in dram.rows(cfg.elem_bytes(insn.mem.name.lower()),
                                              insn.dram_base, insn.y_size, insn.x_size,
                                              insn.x_stride))
        if isinstance(insn, Store):
            written += beats
        else:
            read += beats
    return read * cfg.bus_bytes, written * cfg.bus_bytes
