"""The boards a bitstream can be built for, and what each holds.

Each ``Board`` names its FPGA family, the block RAM given to the SoC as DRAM
(``mem_bytes``), the default SoC clock, the device's totals (LUT4/LUT6, FFs,
DSPs, block RAMs; from the vendors' data sheets, for the report when nextpnr
does not list one), the presets known to fit with timing met at the default
clock (``bench/fpga_fit.py``; largest last; none for PYNQ-Z1, never built
here) and a factory for its amaranth-boards platform. The default clocks are
what the accelerator RTL closes at today: the measurements behind them, and
what moved them, are in ``docs/fpga-timing.md``. ``open_flow`` is False for
boards whose bitstream needs a vendor tool: ``vta fpga build`` writes their
Verilog and project script only.

The iCEBreaker (iCE40 UP5K) gets ``ICE``: one MAC a cycle (``LOG_BLOCK=0``)
on an 8-bit memory bus, no command queues (``CMD_QUEUE_DEPTH=0``: fetch hands
each instruction to its module while the module is idle, in the RTL and in
``sim.cycle`` alike), its SoC's 128 KiB memory in the four SPRAMs
(``fpga.memory``: a 32-bit host word is four rows), 17-bit memory addresses
(``RtlParams.addr_bits``) and 4-beat bursts (so fetch shifts each
instruction's 16 beats straight into its one staging entry). The GEMM product
and the ALU's MUL take one SB_MAC16 each.
"""
from __future__ import annotations

import dataclasses
from typing import Callable

from vta_hw.config import preset_names
from vta_hw.errors import VtaError


@dataclasses.dataclass(frozen=True)
class Board:
    name: str
    title: str
    family: str               # "ecp5", "ice40", "xilinx"
    device: str
    mem_bytes: int            # block RAM standing in for DRAM, bytes
    clock_mhz: float          # default SoC clock
    totals: dict              # {"LUT": n, "FF": n, "DSP": n, "BRAM": n[, "SPRAM": n]}
    fits: tuple               # presets known to fit, smallest first
    smallest: str             # the preset CI builds (and the default when none is known to fit)
    make_platform: Callable   # () -> a fresh amaranth-boards platform object
    open_flow: bool = True
    max_burst_beats: int = 16  # the SoC's longest memory burst, beats (``RtlParams``)

    @property
    def rtl_params(self):
        """The accelerator's elaboration parameters in this board's SoC (``fpga.soc``)."""
        from vta_hw.rtl.top import RtlParams
        return RtlParams(max_burst_beats=self.max_burst_beats)

    @property
    def default_preset(self) -> str:
        """The largest preset known to fit, else ``smallest``."""
        return self.fits[-1] if self.fits else self.smallest

    def platform(self):
        """A fresh amaranth-boards platform object for this board."""
        return self.make_platform()


def _ulx3s_85f():
    from amaranth_boards.ulx3s import ULX3S_85F_Platform
    return ULX3S_85F_Platform()


def _ecpix5_85():
    from amaranth_boards.ecpix5 import ECPIX585Platform
    return ECPIX585Platform()


def _icebreaker():
    from amaranth_boards.icebreaker import ICEBreakerPlatform
    return ICEBreakerPlatform()


def _pynq_z1():
    """PYNQ-Z1: the Arty Z7-20's Zynq-7020 (xc7z020clg400-1) and 125 MHz clock; the
    UART on PMOD JA pins 1 (tx, Y18) and 2 (rx, Y19) for a 3.3 V USB-serial cable."""
    from amaranth.build import Attrs, Pins, Resource, Subsignal
    from amaranth_boards.arty_z7 import ArtyZ720Platform

    class PynqZ1Platform(ArtyZ720Platform):
        resources = ArtyZ720Platform.resources + [
            Resource("uart", 0, Subsignal("tx", Pins("Y18", dir="o")),
                     Subsignal("rx", Pins("Y19", dir="i")), Attrs(IOSTANDARD="LVCMOS33"))]
    return PynqZ1Platform(toolchain="Vivado")


ECP5_85 = {"LUT": 83640, "FF": 83640, "DSP": 156, "BRAM": 208}
SMALL, MID = "1x4_i8w8a32_10_10_10_11_bus32", "1x8_i8w8a32_11_12_13_14"
TINY = "1x4_i8w8a32_8_8_8_9_bus32"
#: The iCEBreaker's preset: 1x1 on an 8-bit bus with no command queues (module docstring).
ICE = "1x1_i8w8a32_10_9_9_11_bus8_cq0"

BOARDS = {b.name: b for b in (
    Board("ulx3s-85f", "Radiona ULX3S with LFE5U-85F", "ecp5", "LFE5U-85F-6BG381C",
          mem_bytes=64 * 1024, clock_mhz=50.0, totals=ECP5_85, fits=(SMALL, MID), smallest=SMALL,
          make_platform=_ulx3s_85f),
    Board("ecpix5-85", "LambdaConcept ECPIX-5 with LFE5UM5G-85F", "ecp5", "LFE5UM5G-85F-8BG554I",
          mem_bytes=64 * 1024, clock_mhz=40.0, totals=ECP5_85, fits=(SMALL, MID), smallest=SMALL,
          make_platform=_ecpix5_85),
    Board("icebreaker", "1BitSquared iCEBreaker with iCE40UP5K", "ice40", "iCE40UP5K-SG48",
          mem_bytes=128 * 1024, clock_mhz=12.0,
          totals={"LUT": 5280, "FF": 5280, "DSP": 8, "BRAM": 30, "SPRAM": 4}, fits=(ICE,),
          smallest=ICE, make_platform=_icebreaker, max_burst_beats=4),
    Board("pynq-z1", "Digilent PYNQ-Z1 with Zynq-7020 (Vivado, not run here)", "xilinx",
          "xc7z020clg400-1", mem_bytes=256 * 1024, clock_mhz=50.0,
          totals={"LUT": 53200, "FF": 106400, "DSP": 220, "BRAM": 140}, fits=(), smallest=SMALL,
          make_platform=_pynq_z1, open_flow=False),
)}


class BoardError(VtaError, ValueError):
    """Unknown board or preset; the message lists the valid names."""


def get_board(name: str) -> Board:
    try:
        return BOARDS[name.lower()]
    except KeyError:
        raise BoardError(f"no board named {name!r}; boards: {', '.join(BOARDS)}") from None


def check_preset(name: str) -> None:
    if name not in preset_names():
        raise BoardError(f"no preset named {name!r}; presets: {', '.join(preset_names())}")
