"""``rtl``: the accelerator's RTL under Verilator (``driver.rtl.run_programs``)."""
from __future__ import annotations

from .base import BackendResult


class RtlBackend:
    """``Backend`` (``driver.backends.base``) on the Verilated RTL (built on first run)."""
    name = "rtl"
    timed = True
    description = "the RTL under Verilator (driver.rtl): values and cycles"
    options: dict[str, str] = {}

    def __init__(self, cfg, dram_timing=None):
        self.cfg, self.dram_timing = cfg, dram_timing

    def run(self, program, image, max_cycles=None) -> BackendResult:
        from driver.rtl.run import MAX_CYCLES, run_programs
        from sim.counters import program_gemm_macs
        r, = run_programs(self.cfg, [(program, image)], self.dram_timing,
                          max_cycles=max_cycles or MAX_CYCLES)
        return BackendResult(r.dram, r.cycles, program_gemm_macs(program),
                             sum(b * self.cfg.bus_bytes for _, _, b, w in r.bursts if not w),
                             sum(b * self.cfg.bus_bytes for _, _, b, w in r.bursts if w),
                             {"busy": dict(r.busy), "wall_s": r.wall_s})
