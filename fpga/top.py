"""The board top level: clock (PLL when needed), reset, UART pins and LEDs around the SoC.

``BoardTop(board, cfg, clock_hz)`` runs the SoC at ``clock_hz`` made from the
board's oscillator by the PLL of its family (no PLL when they are equal),
holds reset until the PLL locks, puts the UART at ``fpga.protocol.DEFAULT_BAUD``
on the board's USB-serial pins, shows done on LED 0 and a 1 Hz heartbeat on
LED 1. On iCE40 boards the accelerator's memory addresses are only as wide as
the block RAM needs (``fpga.soc.soc_addr_bits``).
"""
from __future__ import annotations

import dataclasses
import logging

from amaranth import ClockDomain, Elaboratable, Module, Signal
from amaranth.build import ResourceError
from amaranth.lib.cdc import ResetSynchronizer

from fpga.boards import Board
from fpga.pll import add_pll, ecp5_pll, ice40_pll, xilinx_mmcm
from fpga.protocol import DEFAULT_BAUD, divisor_for
from fpga.soc import SoC, soc_addr_bits
from vta_hw.config import VTAConfig

_log = logging.getLogger(__name__)
PLL_SEARCH = {"ecp5": ecp5_pll, "ice40": ice40_pll, "xilinx": xilinx_mmcm}


def check_clock(board: Board, clock_hz: float) -> tuple[float, int]:
    """``(oscillator Hz, UART divisor)``; raises ValueError if the PLL cannot make
    ``clock_hz`` from the board's oscillator or the UART cannot divide it."""
    divisor = divisor_for(clock_hz, DEFAULT_BAUD)
    osc_hz = board.platform().default_clk_frequency
    if abs(osc_hz - clock_hz) > 1:
        PLL_SEARCH[board.family](osc_hz, clock_hz)
    return osc_hz, divisor


class BoardTop(Elaboratable):
    """Raises ValueError: a clock the PLL cannot make or the UART cannot divide."""

    def __init__(self, board: Board, cfg: VTAConfig, clock_hz: float):
        self.board, self.cfg, self.clock_hz = board, cfg, clock_hz
        self.osc_hz, self.divisor = check_clock(board, clock_hz)
        params = board.rtl_params
        if board.family == "ice40":
            # area is what limits the iCE40 boards: carry only the address bits the block RAM
            # needs. ECP5 keeps 32: the narrower netlist placed the ULX3S-85F's 1x8 under its
            # 50 MHz bar (a placement effect, not a longer path; docs/fpga-timing.md).
            params = dataclasses.replace(
                params, addr_bits=soc_addr_bits(board.mem_bytes, params.page_bytes))
        self.soc = SoC(cfg, mem_bytes=board.mem_bytes, clk_hz=int(clock_hz),
                       divisor=self.divisor, params=params)

    def elaborate(self, platform):
        m = Module()
        fin = self.osc_hz
        if abs(fin - self.clock_hz) > 1:
            clk_in = platform.request(platform.default_clk, dir="i").i
            m.domains.sync = cd = ClockDomain("sync")
            locked = Signal()
            add_pll(m, self.board.family, fin, self.clock_hz, clk_in, cd.clk, locked)
            m.submodules.reset_sync = ResetSynchronizer(~locked, domain="sync")
            if self.board.family != "xilinx":  # Vivado derives the MMCM output clock itself
                platform.add_clock_constraint(cd.clk, self.clock_hz)
        m.submodules.soc = soc = self.soc
        uart = platform.request("uart", 0)
        m.d.comb += [soc.rx.eq(uart.rx.i), uart.tx.o.eq(soc.tx)]
        beat = Signal(range(int(self.clock_hz) // 2 + 1))
        blink = Signal()
        with m.If(beat == int(self.clock_hz) // 2):
            m.d.sync += [beat.eq(0), blink.eq(~blink)]
        with m.Else():
            m.d.sync += beat.eq(beat + 1)
        for k, sig in enumerate((soc.done, blink)):
            try:
                m.d.comb += platform.request("led", k).o.eq(sig)
            except ResourceError:   # the board has fewer LEDs: this signal is not shown
                _log.info("%s has no LED %d: %s is not shown", self.board.name, k,
                          ("done", "the heartbeat")[k])
        return m
