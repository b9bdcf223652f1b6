"""The device API: DRAM buffers, copies in and out, programs, runs, counters.

One ``Device`` stands for one accelerator with its own DRAM, behind a backend
from the registry ``driver.backends`` (``driver.backends.names()``):

    fsim   the functional simulator (``sim.functional``): values, no cycles
    tsim   the cycle-accurate simulator (``sim.cycle``): values and cycles (default)
    rtl    the RTL under Verilator (``driver.rtl``): values and cycles
    fpga   a board over its UART bridge: values and cycles; needs option ``port``

Usage::

    dev = Device("tsim", config=cfg)
    h = dev.load(program)                 # allocates the program's DRAM image, writes
                                          # instructions, uops and baked params
    h.copy_in("data", packed_x)           # by buffer name (shape and dtype checked)
    run = dev.run(h)                      # starts; returns at once
    counters = dev.wait(run, timeout_s=60)
    y = h.copy_out("out")
    dev.counters                          # totals over every run of this device

Every run starts from the loaded image plus what ``copy_in`` wrote since the load:
output and scratch buffers are zeroed before each run (``Loaded.reset``), so
nothing a previous run left in DRAM can leak into the next one (repeated runs
give identical results).
"""
from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import time

import numpy as np

from vta_hw.config import VTAConfig, load_config
from vta_hw.program import Program
from vta_hw.timing import DramTiming

from . import backends
from .backends import BackendError, BackendResult
from vta_hw.errors import VtaError


class DeviceError(VtaError, RuntimeError):
    """A device operation failed (bad backend or option, buffer, program of another config)."""


class DeviceTimeout(DeviceError):
    """``wait`` ran past its timeout. A run still queued behind another is cancelled (the
    other goes on); a started one is stopped by a backend with ``cancel()`` (rtl, also
    between the worker taking the run and the simulator starting); another backend
    (fsim, tsim: bounded Python runs) lets it end, and the next run waits."""


@dataclasses.dataclass
class DramBuffer:
    """A region of device DRAM (uint8), ``nbytes`` long."""
    data: np.ndarray

    @property
    def nbytes(self) -> int:
        return self.data.size

    def copy_in(self, arr: np.ndarray, offset: int = 0) -> None:
        raw = np.ascontiguousarray(arr).view(np.uint8).ravel()
        if offset < 0 or offset + raw.size > self.nbytes:
            raise DeviceError(f"copy of {raw.size} bytes at offset {offset} does not fit a "
                              f"buffer of {self.nbytes} bytes")
        self.data[offset:offset + raw.size] = raw

    def copy_out(self, nbytes: int | None = None, offset: int = 0) -> np.ndarray:
        n = self.nbytes - offset if nbytes is None else nbytes
        return self.data[offset:offset + n].copy()


class Loaded:
    """A program loaded on a device: its DRAM image and named-buffer copies."""

    def __init__(self, device: "Device", program: Program):
        self.device, self.program = device, program
        self.image = device.alloc(program.dram_bytes)
        self.image.data[:] = program.dram_image()
        self._pristine = {b.name: self.image.data[b.offset:b.offset + b.nbytes].copy()
                          for b in program.buffers if b.kind in ("output", "scratch")}

    def copy_in(self, name: str, arr: np.ndarray) -> None:
        """Write ``arr`` (converted to the buffer's dtype; shape must match) into buffer ``name``."""
        try:
            self.program.write(self.image.data, name, arr)
        except (KeyError, ValueError) as e:
            raise DeviceError(str(e)) from None

    def copy_out(self, name: str) -> np.ndarray:
        """A copy of buffer ``name`` (its shape and dtype)."""
        try:
            return self.program.read(self.image.data, name)
        except KeyError as e:
            raise DeviceError(str(e)) from None

    def reset(self) -> None:
        """Restore output and scratch buffers to their loaded contents."""
        for b in self.program.buffers:
            if b.name in self._pristine:
                self.image.data[b.offset:b.offset + b.nbytes] = self._pristine[b.name]


@dataclasses.dataclass
class Run:
    loaded: Loaded
    future: cf.Future
    started: float


class Device:
    """One accelerator behind a backend (module docstring).

    Args:
        backend: a registered backend name: "fsim", "tsim" (default), "rtl", "fpga", ...
        config: VTAConfig or preset name (default preset).
        dram_timing: the DRAM model of fsim/tsim/rtl (default ``DramTiming()``).
        max_cycles: a bound on one run, cycles (timed backends; fpga: its WAIT timeout).
        options: the backend's own options (``driver.backends.get(name).options``),
            e.g. ``port="/dev/ttyUSB0"`` for fpga.

    Raises:
        DeviceError: unknown backend (the message lists the registered ones), an
            option the backend does not take, or one it needs (fpga without port).
    """

    def __init__(self, backend: str = "tsim", *, config: VTAConfig | str | None = None,
                 dram_timing: DramTiming | None = None, max_cycles: int | None = None,
                 **options):
        self.cfg = config if isinstance(config, VTAConfig) else load_config(config)
        self.backend_name = backend
        try:
            self.backend = backends.create(backend, self.cfg, dram_timing, **options)
        except BackendError as e:
            raise DeviceError(str(e)) from None
        self.max_cycles = max_cycles
        self._pool = cf.ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"vta-{backend}")
        self.counters = {"runs": 0, "cycles": 0, "gemm_macs": 0, "dram_read_bytes": 0,
                         "dram_write_bytes": 0, "wall_s": 0.0}
        self.last: BackendResult | None = None

    def alloc(self, nbytes: int) -> DramBuffer:
        """A zeroed DRAM region of ``nbytes`` bytes."""
        if nbytes <= 0:
            raise DeviceError(f"nbytes must be positive, not {nbytes}")
        return DramBuffer(np.zeros(int(nbytes), np.uint8))

    def load(self, program: Program) -> Loaded:
        """Allocate ``program``'s DRAM image and write it (instructions, uops, baked params)."""
        if program.config != self.cfg:
            raise DeviceError(f"program is for config {program.config.name}, the device is "
                              f"{self.cfg.name}; compile with --config {self.cfg.name}")
        return Loaded(self, program)

    def _execute(self, h: Loaded) -> BackendResult:
        t0 = time.perf_counter()
        r = self.backend.run(h.program, h.image.data.copy(), self.max_cycles)
        h.image.data[:] = r.dram
        c = self.counters
        c["runs"] += 1
        c["wall_s"] += time.perf_counter() - t0
        for k in ("cycles", "gemm_macs", "dram_read_bytes", "dram_write_bytes"):
            c[k] += getattr(r, k) or 0
        self.last = r
        return r

    def run(self, h: Loaded) -> Run:
        """Start ``h`` (outputs reset first); returns at once. ``wait`` for its result."""
        if h.device is not self:
            raise DeviceError("the program was loaded on another device")
        h.reset()
        return Run(h, self._pool.submit(self._execute, h), time.perf_counter())

    def wait(self, run: Run, timeout_s: float | None = None) -> BackendResult:
        """The finished run's result (cycles, bytes). Raises DeviceTimeout after ``timeout_s``."""
        try:
            return run.future.result(timeout=timeout_s)
        except cf.TimeoutError:
            if run.future.cancel():  # still queued behind another run: drop it, stop nothing
                raise DeviceTimeout(f"run on {self.backend_name} did not start within "
                                    f"{timeout_s} s (queued behind another run) and is "
                                    "cancelled; raise the timeout (Device.wait's timeout_s)"
                                    ) from None
            if run.future.done():  # it finished as the timeout expired
                return run.future.result()
            cancel = getattr(self.backend, "cancel", None)
            if cancel is not None:
                cancel()
                raise DeviceTimeout(f"run on {self.backend_name} did not finish within "
                                    f"{timeout_s} s and was stopped; raise the timeout "
                                    "(Device.wait's timeout_s; load_module(..., timeout_s=...))"
                                    ) from None
            raise DeviceTimeout(f"run on {self.backend_name} did not finish within {timeout_s} s; "
                                "wait on it again, or raise the timeout (Device.wait's "
                                "timeout_s; load_module(..., timeout_s=...))") from None

    def run_sync(self, h: Loaded, timeout_s: float | None = None) -> BackendResult:
        return self.wait(self.run(h), timeout_s)

    @property
    def peak_macs_per_cycle(self) -> int:
        return self.cfg.macs_per_cycle

    def gemm_utilization(self) -> float | None:
        """Total GEMM MACs / (total cycles x peak MACs per cycle), over every run: 0..1;
        None on an untimed backend (fsim: not timed), 0.0 before the first run."""
        if not self.backend.timed:
            return None
        c = self.counters
        return c["gemm_macs"] / (c["cycles"] * self.cfg.macs_per_cycle) if c["cycles"] else 0.0

    def close(self) -> None:
        self._pool.shutdown(wait=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
