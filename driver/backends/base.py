"""What every device backend returns: the final DRAM image and its counters."""
from __future__ import annotations

import dataclasses

import numpy as np


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
