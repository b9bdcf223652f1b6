"""The memory port: one burst read/write interface, seen from its initiator.

Members (initiator view; a responder uses ``In(MemPortSignature(...))``):

======== ===== ==========================================================
cmd      dir   burst request: ``cmd_valid``/``cmd_ready``; ``cmd_addr`` byte
               address of the first beat (a multiple of the bus width in
               bytes), ``cmd_len`` beats (1..max_burst_beats, not minus one),
               ``cmd_write`` 1 for a write burst.
rd       in    read data: ``rd_valid`` marks a beat on ``rd_data``; the
               initiator always accepts (there is no ready).
wr       out   write data: ``wr_valid``/``wr_ready`` handshake per beat on
               ``wr_data``; the initiator keeps ``wr_valid`` high for the whole
               burst, so the responder alone paces the beats.
wr_done  in    one-cycle pulse: the write burst has completed.
======== ===== ==========================================================

Data beats are little-endian: byte ``i`` of a beat is ``data[8*i : 8*i+8]``
and lives at byte address ``addr + i``.
"""
from __future__ import annotations

from amaranth.lib.wiring import In, Out, Signature

ADDR_BITS = 32


def len_bits(max_burst_beats: int) -> int:
    """Width of ``cmd_len`` for bursts of up to ``max_burst_beats`` beats."""
    return max(1, int(max_burst_beats).bit_length())


class MemPortSignature(Signature):
    """A memory port of ``bus_width`` data bits and bursts of up to ``max_burst_beats``."""

    def __init__(self, bus_width: int, max_burst_beats: int):
        self.bus_width = bus_width
        self.max_burst_beats = max_burst_beats
        super().__init__({
            "cmd_valid": Out(1), "cmd_ready": In(1), "cmd_addr": Out(ADDR_BITS),
            "cmd_len": Out(len_bits(max_burst_beats)), "cmd_write": Out(1),
            "rd_valid": In(1), "rd_data": In(bus_width),
            "wr_valid": Out(1), "wr_ready": In(1), "wr_data": Out(bus_width),
            "wr_done": In(1),
        })

    def __eq__(self, other):
        return (isinstance(other, MemPortSignature) and other.bus_width == self.bus_width
                and other.max_burst_beats == self.max_burst_beats)

    def __hash__(self):
        return hash((MemPortSignature, self.bus_width, self.max_burst_beats))


class SramWriteSignature(Signature):
    """A write port into an SRAM of ``2**addr_bits`` entries of ``data_bits`` bits."""

    def __init__(self, addr_bits: int, data_bits: int):
        self.addr_bits, self.data_bits = addr_bits, data_bits
        super().__init__({"en": Out(1), "addr": Out(max(addr_bits, 1)), "data": Out(data_bits)})

    def __eq__(self, other):
        return (isinstance(other, SramWriteSignature) and other.addr_bits == self.addr_bits
                and other.data_bits == self.data_bits)

    def __hash__(self):
        return hash((SramWriteSignature, self.addr_bits, self.data_bits))
