"""``fsim``: the functional simulator (``sim.functional``): values only, no timing."""
from __future__ import annotations

from sim import functional

from .base import BackendResult


class FsimBackend:
    """``Backend`` (``driver.backends.base``) on ``sim.functional``; ``dram_timing`` only
    sizes the bus beats it counts (bytes as tsim reports them)."""
    name = "fsim"
    timed = False
    description = "functional simulator (sim.functional): values, no cycles"
    options: dict[str, str] = {}

    def __init__(self, cfg, dram_timing=None):
        self.cfg, self.dram_timing = cfg, dram_timing

    def run(self, program, image, max_cycles=None) -> BackendResult:
        from sim.counters import program_bus_bytes, program_gemm_macs
        r = functional.run(program, image)
        c = r.counters
        read, written = program_bus_bytes(program, self.dram_timing)
        return BackendResult(r.dram, None, program_gemm_macs(program), read, written,
                             {"counters": c.to_dict(),
                              "payload_bytes": {"loaded": sum(c.bytes_loaded.values()),
                                                "stored": sum(c.bytes_stored.values())}})
