"""What a device backend is: the ``Backend`` protocol, its ``BackendResult``, ``BackendError``.

A backend runs one accelerator program on a DRAM image. The registry
(``driver.backends.registry``) makes one from its class: ``cls(cfg, dram_timing,
**options)``; ``driver.device.Device`` wraps it with buffers, runs and counters.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import ClassVar, Protocol

import numpy as np
from vta_hw.errors import VtaError


class BackendError(VtaError, ValueError):
    """A backend cannot be made: unknown name, unknown or missing option, bad registration."""


@dataclasses.dataclass
class BackendResult:
    """One program run.

    Attributes:
        dram: the final DRAM image (uint8, the size of the one given).
        cycles: cycles from start to FINISH (None on the functional simulator: no timing).
        gemm_macs: multiply-accumulates done by GEMMs (None where the backend cannot count).
        dram_read_bytes, dram_write_bytes: bytes moved on the memory port (None if unknown).
        extra: backend-specific figures (module stats, counters).
    """
    dram: np.ndarray
    cycles: int | None = None
    gemm_macs: int | None = None
    dram_read_bytes: int | None = None
    dram_write_bytes: int | None = None
    extra: dict = dataclasses.field(default_factory=dict)


class Backend(Protocol):
    """One accelerator that runs programs. What a backend class declares:

    Attributes:
        name: the registry key (``Device(name)``, ``vta run --device name``).
        timed: True if ``run`` reports cycles (``BackendResult.cycles`` not None).
        description: one line for listings and help.
        options: option name -> one line of help; the keyword arguments its
            constructor takes besides ``cfg`` and ``dram_timing`` (e.g. the FPGA's
            ``port``). Any other option is refused by the registry.

    The constructor is ``cls(cfg: VTAConfig, dram_timing: DramTiming | None = None,
    **options)`` and raises ``BackendError`` for a missing or bad option. A backend
    whose runs can outlast a caller's patience may also have ``cancel()``: stop the
    run in progress (called from another thread by ``Device.wait`` on its timeout;
    that run then raises).
    """
    name: ClassVar[str]
    timed: ClassVar[bool]
    description: ClassVar[str]
    options: ClassVar[Mapping[str, str]]

    def run(self, program, image: np.ndarray, max_cycles: int | None = None) -> BackendResult:
        """Run ``program`` (a ``vta_hw.program.Program``) on ``image`` (uint8 DRAM, its
        ``dram_bytes``; the backend may work on it in place or on a copy); ``max_cycles``
        bounds the run where the backend counts cycles (None: its own default)."""
        ...
