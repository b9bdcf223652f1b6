"""The boards a bitstream can be built for, and what each holds.

Each ``Board`` names its amaranth-boards platform, its FPGA family, the
block RAM given to the SoC as DRAM (``mem_bytes``), the default SoC clock,
the device's totals (LUT4/LUT6, FFs, DSPs, block RAMs; from the vendors'
data sheets, for the report when nextpnr does not list one) and the presets
known to fit with timing met at the default clock (measured with
``bench/fpga_fit.py``; largest last; none for PYNQ-Z1, never built here). The default clocks are what the
accelerator RTL closes at today. On the ULX3S's ECP5-85F speed 6, 1x4
(``SMALL``) reaches 53.4 MHz and 1x8 (``MID``) 53.7 MHz at a 50 MHz
constraint (Yosys 0.70 + nextpnr-ecp5 from YoWASP, router2), so ULX3S runs at
50 MHz from its PLL (25 MHz oscillator). That needs the compute core's
six-stage pipeline (``vta_hw/rtl/core.py``: INP/WGT, ACC and product sums
registered, no SRAM or DSP output feeding logic into another), the
multi-cycle ALU MUL (``vta_hw/rtl/alu.py``) and the UART bridge's registered
range checks (``fpga/bridge.py``); with a one-cycle 32-bit MUL in four stages
they reached 36.8 and 30.8 MHz. The 1x8's slowest path now runs from the
UART bridge's request header through its range check into its status
register (1.4 ns slack at 50 MHz; with other placements it was the ALU's
opcode through a lane's adder); LUT 17.7 k, FF 7.9 k, 72 DSPs, 69 block RAMs. Placement moves the
figure by several MHz when the netlist changes anywhere (40.4 to 54.8 MHz
across variants of this RTL), so RTL changes rerun ``tests/fpga/test_build.py
-m slow``. The ECPIX-5's speed 8 part reached 55.6 and 49.4 MHz with the old
RTL (not measured since), so it runs at 40 MHz from its PLL. ``open_flow`` is False for boards whose
bitstream needs a vendor tool: ``vta fpga build`` writes their Verilog and
project script only.

The iCEBreaker (iCE40 UP5K: 5280 LCs, 8 SB_MAC16 DSPs, 30 block RAMs of
4 Kbit and at most 16 bits a row, 4 SPRAMs of 16 K x 16 bits) gets ``ICE``:
one MAC a cycle (``LOG_BLOCK=0``) on an 8-bit memory bus, no command queues
(``CMD_QUEUE_DEPTH=0``: fetch hands each instruction to its module while the
module is idle, in the RTL and in ``sim.cycle`` alike), its SoC's 128 KiB
memory in the four SPRAMs (``fpga.memory``: a 32-bit host word is four
rows), 17-bit memory addresses (``RtlParams.addr_bits``) and 4-beat bursts
(so fetch shifts each instruction's 16 beats straight into its one staging
entry). The GEMM product and the ALU's MUL take one SB_MAC16 each. It fits:
4842 of 5280 LCs (91 %), 2087 FFs, 13 of 30 block RAMs, 2 DSPs, 4 SPRAMs, and
reaches 21.3 MHz against its 12 MHz clock (Yosys 0.70 + nextpnr-ice40 from
YoWASP, router1: ``fpga.build.ROUTER``). Getting there from the 1x4
(``1x4_i8w8a32_10_10_12_12_bus32_cq1``: 11.5 k LCs) took the narrow preset
(6.1 k), no command queues (-280), right-sized address and DMA arithmetic,
one adder and one shifter per ALU lane, the in-place fetch staging and a
leaner UART bridge (``bench/fpga_area.py`` prints cells per module).
"""
from __future__ import annotations

import dataclasses

from vta_hw.config import preset_names


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
        if self.name == "ulx3s-85f":
            from amaranth_boards.ulx3s import ULX3S_85F_Platform
            return ULX3S_85F_Platform()
        if self.name == "ecpix5-85":
            from amaranth_boards.ecpix5 import ECPIX585Platform
            return ECPIX585Platform()
        if self.name == "icebreaker":
            from amaranth_boards.icebreaker import ICEBreakerPlatform
            return ICEBreakerPlatform()
        if self.name == "pynq-z1":
            return _pynq_z1()
        raise AssertionError(self.name)


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
          mem_bytes=64 * 1024, clock_mhz=50.0, totals=ECP5_85, fits=(SMALL, MID), smallest=SMALL),
    Board("ecpix5-85", "LambdaConcept ECPIX-5 with LFE5UM5G-85F", "ecp5", "LFE5UM5G-85F-8BG554I",
          mem_bytes=64 * 1024, clock_mhz=40.0, totals=ECP5_85, fits=(SMALL, MID), smallest=SMALL),
    Board("icebreaker", "1BitSquared iCEBreaker with iCE40UP5K", "ice40", "iCE40UP5K-SG48",
          mem_bytes=128 * 1024, clock_mhz=12.0,
          totals={"LUT": 5280, "FF": 5280, "DSP": 8, "BRAM": 30, "SPRAM": 4}, fits=(ICE,),
          smallest=ICE,
          max_burst_beats=4),
    Board("pynq-z1", "Digilent PYNQ-Z1 with Zynq-7020 (Vivado, not run here)", "xilinx",
          "xc7z020clg400-1", mem_bytes=256 * 1024, clock_mhz=50.0,
          totals={"LUT": 53200, "FF": 106400, "DSP": 220, "BRAM": 140}, fits=(), smallest=SMALL,
          open_flow=False),
)}


class BoardError(ValueError):
    """Unknown board or preset; the message lists the valid names."""


def get_board(name: str) -> Board:
    try:
        return BOARDS[name.lower()]
    except KeyError:
        raise BoardError(f"no board named {name!r}; boards: {', '.join(BOARDS)}") from None


def check_preset(name: str) -> None:
    if name not in preset_names():
        raise BoardError(f"no preset named {name!r}; presets: {', '.join(preset_names())}")
