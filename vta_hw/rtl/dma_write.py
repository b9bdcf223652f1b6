"""2-D strided DMA from the OUT SRAM to memory (STORE).

``dram[dram_base + y*x_stride + x] = out[sram_base + y*x_size + x]`` for
``y < y_size``, ``x < x_size``, in elements; pads are ignored. Fields must
stay stable from ``start`` to ``done``.

Cycle behaviour:

- ``start`` in cycle t: FIN at t+1 if ``x_size == 0`` or ``y_size == 0``,
  else the first ROW cycle is t+1.
- Each row: one ROW cycle, then its bursts (``DramTiming.bursts``). A burst:
  REQ until the arbiter accepts in cycle q; BEATS: ``wr_valid`` is high and
  beat k is taken in the cycle the memory raises ``wr_ready`` (the memory
  model: cycle q+1+k*beat_interval); WAIT from the cycle after the last beat
  until the cycle of ``wr_done``; the next state begins the cycle after.
- FIN is one cycle with ``done`` high.

Byte addresses are ``addr_bits`` wide and taken modulo ``2**addr_bits``
(``vta_hw.rtl.memport``); counters are as wide as the values they hold.

The OUT read port address is kept one element ahead so that the element a
beat needs is always on ``rd_data`` (one-cycle read latency).
"""
from __future__ import annotations

from amaranth import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from vta_hw.config import MEMOP_DRAM_BITS, MEMOP_SIZE_BITS, MEMOP_SRAM_BITS
from vta_hw.rtl.memport import (ADDR_BITS, MemPortSignature, burst_beats, check_addr_bits,
                                 len_bits)


def _log2(n: int) -> int:
    return n.bit_length() - 1


class DmaWrite(wiring.Component):
    """The STORE DMA engine for elements of ``elem_bytes`` bytes (at least one bus beat).

    Raises:
        ValueError: ``elem_bytes`` is smaller than a bus beat.
    """

    def __init__(self, bus_width: int, max_burst_beats: int, page_bytes: int,
                 elem_bytes: int, log_depth: int, addr_bits: int = ADDR_BITS):
        self.bus_bytes = bus_width // 8
        if elem_bytes < self.bus_bytes:
            raise ValueError(f"an OUT element ({elem_bytes} bytes) must be at least one bus beat "
                             f"({self.bus_bytes} bytes); narrow BUS_WIDTH or widen BLOCK")
        self.max_burst_beats, self.page_bytes = max_burst_beats, page_bytes
        self.elem_bytes, self.log_depth = elem_bytes, log_depth
        self.addr_bits = check_addr_bits(addr_bits, page_bytes)
        super().__init__({
            "start": In(1), "done": Out(1), "busy": Out(1),
            "sram_base": In(MEMOP_SRAM_BITS), "dram_base": In(MEMOP_DRAM_BITS),
            "y_size": In(MEMOP_SIZE_BITS), "x_size": In(MEMOP_SIZE_BITS),
            "x_stride": In(MEMOP_SIZE_BITS),
            "mem": Out(MemPortSignature(bus_width, max_burst_beats, addr_bits)),
            "rd_addr": Out(max(log_depth, 1)), "rd_data": In(8 * elem_bytes),
        })

    def elaborate(self, platform):
        m = Module()
        BB, lBB = self.bus_bytes, _log2(self.bus_bytes)
        K = self.elem_bytes // BB
        lK, lEB = _log2(K), _log2(self.elem_bytes)
        bus = self.mem
        rows_left = Signal(MEMOP_SIZE_BITS)     # rows still to start
        # element address of the current row, used as a byte address modulo 2**addr_bits
        row_dram = Signal(max(self.addr_bits - lEB, 1))
        idx = Signal(MEMOP_SRAM_BITS + 1)       # the OUT element of the current beat
        lane = Signal(max(lK, 1))
        cur_beat = Signal(self.addr_bits - lBB)   # the memory address in beats
        # beats left in the row: x_size * K <= (2**MEMOP_SIZE_BITS - 1) * K
        row_left = Signal(range((2 ** MEMOP_SIZE_BITS - 1) * K + 1))
        burst_left = Signal(len_bits(self.max_burst_beats))
        n = burst_beats(m, cur_beat, row_left, self.max_burst_beats, self.page_bytes // BB)

        advance = Signal()
        m.d.comb += [self.rd_addr.eq(Mux(advance, idx + 1, idx)),
                     bus.wr_data.eq(self.rd_data.word_select(lane[:lK] if lK else 0, 8 * BB)
                                    if K > 1 else self.rd_data)]

        m.d.comb += self.busy.eq(1)
        with m.FSM():
            with m.State("IDLE"):
                m.d.comb += self.busy.eq(0)
                with m.If(self.start):
                    m.d.sync += [rows_left.eq(self.y_size), row_dram.eq(self.dram_base),
                                 idx.eq(self.sram_base)]
                    with m.If((self.x_size == 0) | (self.y_size == 0)):
                        m.next = "FIN"
                    with m.Else():
                        m.next = "ROW"
            with m.State("ROW"):
                m.d.sync += [rows_left.eq(rows_left - 1), row_dram.eq(row_dram + self.x_stride),
                             cur_beat.eq((row_dram << lEB)[lBB:self.addr_bits]),
                             row_left.eq(self.x_size << lK), lane.eq(0)]
                m.next = "REQ"
            with m.State("REQ"):
                m.d.comb += [bus.cmd_valid.eq(1), bus.cmd_addr.eq(cur_beat << lBB),
                             bus.cmd_len.eq(n), bus.cmd_write.eq(1)]
                with m.If(bus.cmd_ready):
                    m.d.sync += burst_left.eq(n)
                    m.next = "BEATS"
            with m.State("BEATS"):
                m.d.comb += bus.wr_valid.eq(1)
                with m.If(bus.wr_ready):
                    m.d.sync += [cur_beat.eq(cur_beat + 1), row_left.eq(row_left - 1),
                                 burst_left.eq(burst_left - 1)]
                    if K > 1:
                        m.d.sync += lane.eq(lane + 1)
                        m.d.comb += advance.eq(lane[:lK] == K - 1)
                    else:
                        m.d.comb += advance.eq(1)
                    with m.If(advance):
                        m.d.sync += idx.eq(idx + 1)
                    with m.If(burst_left == 1):
                        m.next = "WAIT"
            with m.State("WAIT"):
                with m.If(bus.wr_done):
                    with m.If(row_left != 0):
                        m.next = "REQ"
                    with m.Elif(rows_left == 0):
                        m.next = "FIN"
                    with m.Else():
                        m.next = "ROW"
            with m.State("FIN"):
                m.d.comb += self.done.eq(1)
                m.next = "IDLE"
        return m
