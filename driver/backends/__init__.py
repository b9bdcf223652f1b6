"""Device backends: one registry (``registry``) of classes that run accelerator programs.

Built in, in this order (``names()``):

    fsim   the functional simulator (``sim.functional``): values, no cycles
    tsim   the cycle-accurate simulator (``sim.cycle``): values and cycles
    rtl    the RTL under Verilator (``driver.rtl``): values and cycles
    fpga   a board's SoC over its UART host bridge (option ``port``): values and cycles

``create(name, cfg, dram_timing, **options)`` makes one; ``register(cls)`` adds another.
"""
from .base import Backend, BackendError, BackendResult
from .fpga import FpgaBackend
from .fsim import FsimBackend
from .registry import create, get, names, register
from .rtl import RtlBackend
from .tsim import TsimBackend

for _cls in (FsimBackend, TsimBackend, RtlBackend, FpgaBackend):
    register(_cls)
del _cls

__all__ = ["Backend", "BackendError", "BackendResult", "create", "get", "names", "register"]
