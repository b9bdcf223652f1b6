"""On-chip block RAM standing in for DRAM: the accelerator's memory port plus a host word port.

``BlockRamMemory(bus_width, max_burst_beats, mem_bytes)`` answers the
accelerator's burst port ``mem`` (``vta_hw.rtl.memport``) from one block RAM
of ``mem_bytes`` bytes, ``bus_width`` bits a row, one burst at a time:

- a read burst accepted in cycle g puts beat k on ``rd_data`` in cycle
  g + 2 + k (latency 2, one beat a cycle);
- a write burst raises ``wr_ready`` from cycle g + 1, takes one beat a cycle
  and pulses ``wr_done`` two cycles after the last beat;
- the next burst is accepted from the cycle after the last read beat or
  after ``wr_done``.

This is ``vta_hw.timing.DramTiming(latency=2, bytes_per_cycle=bus bytes)``,
so ``sim.cycle`` with that timing predicts the SoC's cycle counts exactly
(checked in ``tests/fpga/soc_tb.py``).

Addresses wrap modulo ``mem_bytes`` (the host bridge checks its own ranges).

The RAM has one address for reads and writes (a read and a write never share
a cycle) and its read data holds while a write happens, so it maps to a
single-port RAM: the iCE40 UltraPlus's SPRAM (``SB_SPRAM256KA``, 16 K x 16
bits each; Yosys ``synth_ice40 -spram``; rows of an 8-bit bus go two to a
16-bit SPRAM word through its nibble write masks, so 128 KiB still takes the
four) as well as true dual-port block RAM.

The host port ``host_*`` moves one 32-bit word at byte address ``host_addr``
(a multiple of 4): hold ``host_req`` until ``host_ack`` (one cycle); a read's
word is on ``host_rdata`` with the ack. Host accesses are served between
bursts and take precedence over a waiting burst. A host word is one row
access on a bus of 32 bits or more and ``32 / bus_width`` row accesses on a
narrower one (lowest address first), one a cycle from the cycle of the
request: a write acks in the cycle of its last row, a read the cycle after.
"""
from __future__ import annotations

from amaranth import Cat, Module, Signal
from amaranth.lib import memory, wiring
from amaranth.lib.wiring import In, Out

from vta_hw.rtl.memport import ADDR_BITS, MemPortSignature, len_bits


class BlockRamMemory(wiring.Component):
    """Raises ValueError: ``mem_bytes`` not a power of two of at least one bus row."""

    def __init__(self, bus_width: int, max_burst_beats: int, mem_bytes: int,
                 addr_bits: int = ADDR_BITS):
        bb = bus_width // 8
        if (not isinstance(mem_bytes, int) or mem_bytes < max(bb, 4)
                or mem_bytes & (mem_bytes - 1)):
            raise ValueError(f"mem_bytes must be a power of two of at least {max(bb, 4)}, "
                             f"not {mem_bytes!r}")
        self.bus_width, self.mem_bytes = bus_width, mem_bytes
        self.depth = mem_bytes // bb
        super().__init__({
            "mem": In(MemPortSignature(bus_width, max_burst_beats, addr_bits)),
            "host_req": In(1), "host_we": In(1), "host_addr": In(ADDR_BITS),
            "host_wdata": In(32), "host_rdata": Out(32), "host_ack": Out(1)})

    def elaborate(self, platform):
        m = Module()
        bw = self.bus_width
        bb, lanes, parts = bw // 8, bw // 32, max(32 // bw, 1)
        row_shift = bb.bit_length() - 1
        m.submodules.ram = ram = memory.Memory(shape=bw, depth=self.depth, init=[])
        rd = ram.read_port()
        wr = ram.write_port(granularity=8)
        mem = self.mem
        row = Signal(range(self.depth))
        left = Signal(len_bits(mem.signature.max_burst_beats) + 1)
        rd_pending = Signal()
        m.d.sync += [rd_pending.eq(0), mem.wr_done.eq(0)]
        m.d.comb += mem.rd_valid.eq(rd_pending)
        addr = Signal(range(self.depth))
        m.d.comb += [mem.rd_data.eq(rd.data), wr.data.eq(mem.wr_data), addr.eq(row),
                     rd.addr.eq(addr), wr.addr.eq(addr), rd.en.eq(~wr.en.any())]

        # the host word's current row: its address, write data and byte enables, whether it
        # is the word's last row, and the read word once its last row's data is on rd.data
        host_row = self.host_addr[row_shift:row_shift + max(self.depth.bit_length() - 1, 1)]
        if parts > 1:
            part = Signal(range(parts))       # rows of the word done; 0 between host words
            earlier = Signal(32 - bw)         # read data of the rows before the last
            h_addr = Cat(part, host_row[part.shape().width:])
            h_data, h_en, h_last = self.host_wdata.word_select(part, bw), -1, part == parts - 1
            h_rdata = Cat(earlier, rd.data)
        else:
            lane_of = self.host_addr[2:row_shift]
            lane = Signal(range(max(lanes, 2)))
            h_addr, h_data, h_last = host_row, self.host_wdata.replicate(lanes), 1
            h_en = Cat((lane_of == k).replicate(4) for k in range(lanes)) if lanes > 1 else -1
            h_rdata = rd.data.word_select(lane, 32) if lanes > 1 else rd.data

        def host_row_access():
            m.d.comb += addr.eq(h_addr)
            if parts > 1:
                m.d.sync += part.eq(part + 1)
            elif lanes > 1:
                m.d.sync += lane.eq(lane_of)
            with m.If(self.host_we):
                m.d.comb += [wr.data.eq(h_data), wr.en.eq(h_en), self.host_ack.eq(h_last)]
                m.next = "IDLE"
            with m.Else():
                m.next = "HOST_READ"
            if parts > 1:
                with m.If(~h_last):
                    m.next = "HOST_ROWS"

        with m.FSM():
            with m.State("IDLE"):
                with m.If(self.host_req):
                    host_row_access()
                with m.Else():
                    m.d.comb += mem.cmd_ready.eq(1)
                    with m.If(mem.cmd_valid):
                        m.d.sync += [row.eq(mem.cmd_addr[row_shift:]), left.eq(mem.cmd_len)]
                        with m.If(mem.cmd_write):
                            m.next = "WRITE"
                        with m.Else():
                            m.next = "READ"
            if parts > 1:
                with m.State("HOST_ROWS"):  # rows 1.. of a host word on a narrow bus
                    with m.If(~self.host_we):
                        m.d.sync += earlier.eq(Cat(earlier[bw:], rd.data))
                    host_row_access()
            with m.State("HOST_READ"):
                m.d.comb += [self.host_rdata.eq(h_rdata), self.host_ack.eq(1)]
                m.next = "IDLE"
            with m.State("READ"):
                m.d.sync += [rd_pending.eq(1), row.eq(row + 1), left.eq(left - 1)]
                with m.If(left == 1):
                    m.next = "IDLE"
            with m.State("WRITE"):
                m.d.comb += mem.wr_ready.eq(1)
                with m.If(mem.wr_valid):
                    m.d.comb += wr.en.eq(-1)
                    m.d.sync += [row.eq(row + 1), left.eq(left - 1)]
                    with m.If(left == 1):
                        m.next = "WRITE_DONE"
            with m.State("WRITE_DONE"):  # last beat + 1: wr_done is high in the next cycle
                m.d.sync += mem.wr_done.eq(1)
                m.next = "WRITE_IDLE"
            with m.State("WRITE_IDLE"):  # last beat + 2, as DramTiming(latency=2)
                m.next = "IDLE"
        return m
