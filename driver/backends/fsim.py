"""``fsim``: the functional simulator (``sim.functional``): values only, no timing."""
from __future__ import annotations

from sim import functional

from .base import BackendResult


class FsimBackend:
    name = "fsim"

    def __init__(self, cfg, dram_timing=None):
        self.cfg = cfg

    def run(self, program, image, max_cycles=None) -> BackendResult:
        r = functional.run(program, image)
        c = r.counters
        return BackendResult(r.dram, None, None, sum(c.bytes_loaded.values()),
                             sum(c.bytes_stored.values()), {"counters": c.to_dict()})
