"""The accelerator's RTL in Amaranth, one unit per file.

``top.VTA`` is the whole accelerator: control/status registers, fetch, the
load, compute and store modules, the four dependency token queues and the
memory-port arbiter. Its cycle behaviour is stated in ``vta_hw.timing``.
"""
from vta_hw.rtl.top import VTA, RtlParams

__all__ = ["VTA", "RtlParams"]
