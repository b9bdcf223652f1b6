"""``fsim``: the functional simulator (``sim.functional``): values only, no timing."""
from __future__ import annotations

from sim import functional
from sim.dram import DramModel
from vta_hw.isa import Load, MemId, Store
from vta_hw.timing import DramTiming

from .base import BackendResult


def bus_bytes_moved(program, insns, dram_timing=None) -> tuple[int, int]:
    """(read, written) bytes on the memory port, counted as tsim and the RTL count them: whole
    bus beats of every LOAD/STORE row and of the instruction fetch. No timing is involved, so
    the functional simulator reports the same DRAM bytes as the cycle simulator."""
    cfg = program.config
    dram = DramModel(dram_timing or DramTiming(), cfg.bus_bytes)
    read = sum(b for _, b in dram.bursts(program.insn_base, 16 * len(insns)))
    written = 0
    for insn in insns:
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


class FsimBackend:
    name = "fsim"

    def __init__(self, cfg, dram_timing=None):
        self.cfg, self.dram_timing = cfg, dram_timing

    def run(self, program, image, max_cycles=None) -> BackendResult:
        from sim.counters import program_gemm_macs
        r = functional.run(program, image)
        c = r.counters
        read, written = bus_bytes_moved(program, program.insns, self.dram_timing)
        return BackendResult(r.dram, None, program_gemm_macs(program), read, written,
                             {"counters": c.to_dict(),
                              "payload_bytes": {"loaded": sum(c.bytes_loaded.values()),
                                                "stored": sum(c.bytes_stored.values())}})
