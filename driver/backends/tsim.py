"""``tsim``: the cycle-accurate simulator (``sim.cycle``), the default device."""
from __future__ import annotations

from sim import cycle

from .base import BackendResult


class TsimBackend:
    """``Backend`` (``driver.backends.base``) on ``sim.cycle`` with DRAM model ``dram_timing``."""
    name = "tsim"
    timed = True
    description = "cycle-accurate simulator (sim.cycle): values and cycles, equal to the RTL's"
    options: dict[str, str] = {}

    def __init__(self, cfg, dram_timing=None):
        self.cfg, self.dram_timing = cfg, dram_timing

    def run(self, program, image, max_cycles=None) -> BackendResult:
        r = cycle.run(program, image, dram_timing=self.dram_timing, max_cycles=max_cycles)
        return BackendResult(r.dram, r.cycles, r.gemm_macs, r.dram_read_bytes, r.dram_write_bytes,
                             {"modules": {m: s.to_dict() for m, s in r.modules.items()},
                              "leftover_tokens": dict(r.leftover_tokens)})
