"""``rtl``: the accelerator's RTL under Verilator (``driver.rtl.run_programs``)."""
from __future__ import annotations

import tempfile
from pathlib import Path

from .base import BackendResult


class RtlBackend:
    """``Backend`` (``driver.backends.base``) on the Verilated RTL (built on first run).

    ``cancel()`` stops the run in progress (``Device.wait`` calls it when its timeout
    expires): the simulator looks for a stop file every ``driver.rtl.tb.POLL_CYCLES``
    cycles and the run ends with an ``RtlError``."""
    name = "rtl"
    timed = True
    description = "the RTL under Verilator (driver.rtl): values and cycles"
    options: dict[str, str] = {}

    def __init__(self, cfg, dram_timing=None):
        self.cfg, self.dram_timing = cfg, dram_timing
        self._stop: Path | None = None

    def cancel(self) -> None:
        """Stop the run in progress, if any."""
        stop = self._stop
        if stop is not None:
            stop.touch()

    def run(self, program, image, max_cycles=None) -> BackendResult:
        from driver.rtl.run import MAX_CYCLES, run_programs
        from sim.counters import program_gemm_macs
        with tempfile.TemporaryDirectory(prefix="vta-rtl-stop-") as d:
            self._stop = Path(d) / "stop"
            try:
                r, = run_programs(self.cfg, [(program, image)], self.dram_timing,
                                  max_cycles=max_cycles or MAX_CYCLES, stop_file=self._stop)
            finally:
                self._stop = None
        return BackendResult(r.dram, r.cycles, program_gemm_macs(program),
                             sum(b * self.cfg.bus_bytes for _, _, b, w in r.bursts if not w),
                             sum(b * self.cfg.bus_bytes for _, _, b, w in r.bursts if w),
                             {"busy": dict(r.busy), "wall_s": r.wall_s})
