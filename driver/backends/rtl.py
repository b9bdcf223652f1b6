"""``rtl``: the accelerator's RTL under Verilator (``driver.rtl.run_programs``)."""
from __future__ import annotations

import tempfile
import threading
from pathlib import Path

from .base import BackendResult


class RtlBackend:
    """``Backend`` (``driver.backends.base``) on the Verilated RTL (built on first run).

    ``cancel()`` stops the run in progress (``Device.wait`` calls it when its timeout
    expires): the simulator looks for a stop file every ``driver.rtl.tb.POLL_CYCLES``
    cycles and the run ends with an ``RtlError``. A cancel that comes before the run
    has reached the simulator (the worker thread not yet in ``run``) is kept: the next
    ``run`` raises ``RtlError`` at once instead of starting."""
    name = "rtl"
    timed = True
    description = "the RTL under Verilator (driver.rtl): values and cycles"
    options: dict[str, str] = {}

    def __init__(self, cfg, dram_timing=None):
        self.cfg, self.dram_timing = cfg, dram_timing
        self._stop: Path | None = None
        self._cancelled = False
        self._lock = threading.Lock()

    def cancel(self) -> None:
        """Stop the run in progress; with none in progress, the next run (sticky)."""
        with self._lock:
            if self._stop is not None:
                self._stop.touch()
            else:
                self._cancelled = True

    def run(self, program, image, max_cycles=None) -> BackendResult:
        """Raises ``driver.rtl.run.RtlError`` (stopped, failed, timed out) and the
        simulators' errors for a program the RTL ends with an error status."""
        from driver.rtl.run import MAX_CYCLES, RtlError, run_programs
        from sim.counters import program_gemm_macs
        with tempfile.TemporaryDirectory(prefix="vta-rtl-stop-") as d:
            stop = Path(d) / "stop"
            with self._lock:
                if self._cancelled:
                    self._cancelled = False
                    raise RtlError("the RTL run was stopped by the host before it started "
                                   "(Device.wait's timeout expired first); raise the timeout")
                self._stop = stop
            try:
                r, = run_programs(self.cfg, [(program, image)], self.dram_timing,
                                  max_cycles=max_cycles or MAX_CYCLES, stop_file=stop)
            finally:
                with self._lock:
                    self._stop = None
        return BackendResult(r.dram, r.cycles, program_gemm_macs(program),
                             sum(b * self.cfg.bus_bytes for _, _, b, w in r.bursts if not w),
                             sum(b * self.cfg.bus_bytes for _, _, b, w in r.bursts if w),
                             {"busy": dict(r.busy), "wall_s": r.wall_s})
