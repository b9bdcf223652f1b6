"""The memory port: one burst read/write interface, seen from its initiator.

Members (initiator view; a responder uses ``In(MemPortSignature(...))``):

======== ===== ==========================================================
cmd      dir   burst request: ``cmd_valid``/``cmd_ready``; ``cmd_addr`` byte
               address of the first beat (``addr_bits`` bits, a multiple of the
               bus width in bytes), ``cmd_len`` beats (1..max_burst_beats, not
               minus one), ``cmd_write`` 1 for a write burst.
rd       in    read data: ``rd_valid`` marks a beat on ``rd_data``; the
               initiator always accepts (there is no ready).
wr       out   write data: ``wr_valid``/``wr_ready`` handshake per beat on
               ``wr_data``; the initiator keeps ``wr_valid`` high for the whole
               burst, so the responder alone paces the beats.
wr_done  in    one-cycle pulse: the write burst has completed.
======== ===== ==========================================================

Data beats are little-endian: byte ``i`` of a beat is ``data[8*i : 8*i+8]``
and lives at byte address ``addr + i``.

Address width. The port reaches ``2**addr_bits`` bytes (``RtlParams.addr_bits``;
default ``ADDR_BITS`` = 32, what the Verilator and cocotb runs use; the FPGA
SoC uses the log2 of its block RAM's size). An initiator computes byte
addresses modulo ``2**addr_bits``: what an instruction (or the instruction
stream at ``insn_base``) addresses at byte ``A`` is read or written at
``A mod 2**addr_bits``. As ``addr_bits`` is at least log2(``page_bytes``), pages
divide ``2**addr_bits``, so ``A`` and ``A mod 2**addr_bits`` are split into the
same bursts (``DramTiming.bursts``) and cost the same cycles. A program whose
addresses all lie below ``2**addr_bits`` (the host loads an image at byte 0
that fits the memory) never sees the wrap.
"""
from __future__ import annotations

from amaranth import Module, Mux, Signal, Value
from amaranth.lib.wiring import In, Out, Signature

#: The default byte-address width of the memory port (4 GiB).
ADDR_BITS = 32


def check_addr_bits(addr_bits: int, page_bytes: int) -> int:
    """``addr_bits`` if it is an int from log2(``page_bytes``) to ``ADDR_BITS``, else ValueError."""
    low = page_bytes.bit_length() - 1
    if not isinstance(addr_bits, int) or not low <= addr_bits <= ADDR_BITS:
        raise ValueError(f"addr_bits must be an int from log2(page_bytes) = {low} to {ADDR_BITS} "
                         f"(pages must divide the 2**addr_bits-byte memory), not {addr_bits!r}")
    return addr_bits


def len_bits(max_burst_beats: int) -> int:
    """Width of ``cmd_len`` for bursts of up to ``max_burst_beats`` beats."""
    return max(1, int(max_burst_beats).bit_length())


def burst_beats(m: Module, beat: Value, left: Value, max_burst_beats: int,
                page_beats: int) -> Signal:
    """The length of the next burst (``DramTiming.bursts``) from beat address ``beat`` with
    ``left`` beats to go (at least one): ``min(max_burst_beats, beats to the end of the
    page, left)``, where a page is ``page_beats`` beats. ``left`` may be wide; it is
    compared at the width of the burst length."""
    page_left = Signal(range(page_beats + 1))   # 1..page_beats
    m.d.comb += page_left.eq(page_beats - beat[:page_beats.bit_length() - 1])
    cap = Signal(len_bits(min(max_burst_beats, page_beats)))    # min(max burst, page_left)
    m.d.comb += cap.eq(Mux(page_left < max_burst_beats, page_left, max_burst_beats))
    w = len(cap)
    n = Signal(len_bits(max_burst_beats))
    m.d.comb += n.eq(Mux((left[w:] == 0) & (left[:w] < cap), left[:w], cap))
    return n


class MemPortSignature(Signature):
    """A memory port of ``bus_width`` data bits, bursts of up to ``max_burst_beats`` and
    ``addr_bits``-bit byte addresses."""

    def __init__(self, bus_width: int, max_burst_beats: int, addr_bits: int = ADDR_BITS):
        self.bus_width = bus_width
        self.max_burst_beats = max_burst_beats
        self.addr_bits = addr_bits
        super().__init__({
            "cmd_valid": Out(1), "cmd_ready": In(1), "cmd_addr": Out(addr_bits),
            "cmd_len": Out(len_bits(max_burst_beats)), "cmd_write": Out(1),
            "rd_valid": In(1), "rd_data": In(bus_width),
            "wr_valid": Out(1), "wr_ready": In(1), "wr_data": Out(bus_width),
            "wr_done": In(1),
        })

    def __eq__(self, other):
        return (isinstance(other, MemPortSignature) and other.bus_width == self.bus_width
                and other.max_burst_beats == self.max_burst_beats
                and other.addr_bits == self.addr_bits)

    def __hash__(self):
        return hash((MemPortSignature, self.bus_width, self.max_burst_beats, self.addr_bits))


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
