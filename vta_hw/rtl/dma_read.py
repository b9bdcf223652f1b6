"""2-D strided DMA from memory into SRAMs, with zero padding on all four sides.

One engine serves several target SRAMs (load: INP, WGT; compute: UOP, ACC);
``sel`` picks one per instruction. Fields are those of a LOAD and must stay
stable from ``start`` to ``done``.

Cycle behaviour (see ``vta_hw.timing`` for the contract):

- ``start`` in cycle t: if ``x_size == 0`` or there are no rows
  (``y_pad_0 + y_size + y_pad_1 == 0``) the engine is in FIN at t+1;
  otherwise the first ROW cycle is t+1.
- Each of the ``y_pad_0 + y_size + y_pad_1`` rows costs one ROW cycle, then
  a pad row writes ``W = x_pad_0 + x_size + x_pad_1`` zero elements, one per
  cycle; a data row writes ``x_pad_0`` zeros (one per cycle), moves its bytes
  in bursts, then writes ``x_pad_1`` zeros.
- A burst: REQ (``cmd_valid`` high) until the arbiter accepts in cycle q;
  BEATS until the cycle of its last beat; the next state begins the cycle
  after. Bursts follow ``DramTiming.bursts``: at most ``max_burst_beats``
  beats, never across a ``page_bytes`` boundary.
- FIN is one cycle with ``done`` high; then IDLE.

Byte addresses are ``addr_bits`` wide and taken modulo ``2**addr_bits``
(``vta_hw.rtl.memport``); counters are as wide as the values they hold.

Targets whose element is at least one bus beat (``elem_bytes >= bus_bytes``)
assemble ``elem_bytes / bus_bytes`` beats into one element and write it in
the cycle of its last beat. Smaller elements (uops on a 64-bit bus) live in
``bus_bytes / elem_bytes`` SRAM banks (element ``s`` in bank ``s % R`` at
row ``s // R``) so one beat writes all its elements in one cycle, whatever
the alignment of the row in memory and in the SRAM.
"""
from __future__ import annotations

from amaranth import Array, Cat, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from vta_hw.config import MEMOP_DRAM_BITS, MEMOP_PAD_BITS, MEMOP_SIZE_BITS, MEMOP_SRAM_BITS
from vta_hw.rtl.memport import (ADDR_BITS, MemPortSignature, SramWriteSignature, burst_beats,
                                 check_addr_bits, len_bits)


def _log2(n: int) -> int:
    return n.bit_length() - 1


def _max_row_beats(t: "DmaTarget", bus_bytes: int) -> int:
    """The most bus beats one row of ``t`` spans: a row starts at a whole element, so at
    byte ``max(bus_bytes - elem_bytes, 0)`` of its first beat at most, and holds at most
    ``2**MEMOP_SIZE_BITS - 1`` elements; ``ceil((offset + bytes) / bus_bytes)``."""
    most = max(bus_bytes - t.elem_bytes, 0) + (2 ** MEMOP_SIZE_BITS - 1) * t.elem_bytes
    return -(-most // bus_bytes)


class DmaTarget:
    """One SRAM a DMA engine writes: ``elem_bytes`` per element, ``log_depth`` index bits."""

    def __init__(self, name: str, elem_bytes: int, log_depth: int, bus_bytes: int):
        self.name, self.elem_bytes, self.log_depth = name, elem_bytes, log_depth
        self.banks = max(1, bus_bytes // elem_bytes)
        self.log_banks = _log2(self.banks)
        self.bank_addr_bits = max(log_depth - self.log_banks, 1)
        if self.log_banks > log_depth:
            raise ValueError(f"SRAM {name} has fewer entries (2**{log_depth}) than one bus beat "
                             f"holds elements ({self.banks}); widen it or narrow BUS_WIDTH")


class DmaRead(wiring.Component):
    """The LOAD DMA engine for ``targets`` (a list of ``DmaTarget``).

    Ports: ``start``/``done``/``busy``; the LOAD fields; ``sel`` (index into
    ``targets``); ``mem`` (initiator); ``w_<name>``: one SRAM write port per
    bank of each target.
    """

    def __init__(self, bus_width: int, max_burst_beats: int, page_bytes: int, targets,
                 addr_bits: int = ADDR_BITS):
        self.bus_bytes = bus_width // 8
        self.max_burst_beats, self.page_bytes = max_burst_beats, page_bytes
        if page_bytes < self.bus_bytes:
            raise ValueError(f"page_bytes must be at least one bus beat ({self.bus_bytes} bytes), "
                             f"not {page_bytes}")
        self.addr_bits = check_addr_bits(addr_bits, page_bytes)
        self.targets = list(targets)
        members = {
            "start": In(1), "done": Out(1), "busy": Out(1), "sel": In(range(max(len(self.targets), 2))),
            "sram_base": In(MEMOP_SRAM_BITS), "dram_base": In(MEMOP_DRAM_BITS),
            "y_size": In(MEMOP_SIZE_BITS), "x_size": In(MEMOP_SIZE_BITS),
            "x_stride": In(MEMOP_SIZE_BITS), "y_pad_0": In(MEMOP_PAD_BITS),
            "y_pad_1": In(MEMOP_PAD_BITS), "x_pad_0": In(MEMOP_PAD_BITS),
            "x_pad_1": In(MEMOP_PAD_BITS),
            "mem": Out(MemPortSignature(bus_width, max_burst_beats, addr_bits)),
        }
        for t in self.targets:
            members[f"w_{t.name}"] = Out(SramWriteSignature(t.bank_addr_bits, 8 * t.elem_bytes)
                                         ).array(t.banks)
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        r = self._registers()
        self._row_geometry(m, r)
        self._strobes(m, r)
        self._fsm(m, r)
        for k, t in enumerate(self.targets):
            if t.banks == 1:
                self._write_whole(m, r, k, t)
            else:
                self._write_banked(m, r, k, t)
        return m

    def _registers(self) -> "_Regs":
        """The engine's counters and address registers."""
        BB = self.bus_bytes
        ts = self.targets
        r = _Regs()
        # rows still to start, in order: top pad rows, data rows, bottom pad rows
        r.top_left = Signal(MEMOP_PAD_BITS)
        r.data_left = Signal(MEMOP_SIZE_BITS)
        r.bot_left = Signal(MEMOP_PAD_BITS)
        r.data_row = Signal()           # the current row is a data row
        # Element address of the current row. Only its byte address modulo 2**addr_bits
        # (row_dram << log2(elem_bytes)) is used, and its lane in a beat, the low
        # log2(bus_bytes / elem_bytes) bits: it is kept modulo 2**(addr_bits - the smallest
        # log2(elem_bytes)), which covers both.
        r.row_dram = Signal(max(self.addr_bits - min(_log2(t.elem_bytes) for t in ts), 1))
        # SRAM element of the next zero, and of the next element of a whole-element target;
        # a banked target's row starts at sidx, which moves past the row at its end
        r.sidx = Signal(MEMOP_SRAM_BITS + 1)
        r.zcnt = Signal(MEMOP_SIZE_BITS)  # zeros left in the segment: x_pad_0, x_size or x_pad_1
        # the memory address in beats (the byte address is cur_beat * bus_bytes)
        r.cur_beat = Signal(self.addr_bits - _log2(BB))
        # beats left in the row: at most the most beats a row of any target spans
        r.row_left = Signal(range(max(_max_row_beats(t, BB) for t in ts) + 1))
        r.burst_left = Signal(len_bits(self.max_burst_beats))
        return r

    def _row_geometry(self, m: Module, r: "_Regs") -> None:
        """The current data row, for the selected target: its first beat and its beat count,
        which depends only on the row's byte offset in a beat and its length; and ``n``,
        the beats of the next burst (``memport.burst_beats``)."""
        BB, lBB = self.bus_bytes, _log2(self.bus_bytes)
        r.first_row_beat = Signal(self.addr_bits - lBB)
        r.row_beats = Signal.like(r.row_left)
        for k, t in enumerate(self.targets):
            with m.If(self.sel == k):
                lEB = _log2(t.elem_bytes)
                ba = (r.row_dram << lEB)[:self.addr_bits]
                m.d.comb += [r.first_row_beat.eq(ba[lBB:]),
                             r.row_beats.eq((ba[:lBB] + (self.x_size << lEB) + BB - 1) >> lBB)]
        r.n = burst_beats(m, r.cur_beat, r.row_left, self.max_burst_beats, self.page_bytes // BB)

    def _strobes(self, m: Module, r: "_Regs") -> None:
        """``pad_en`` (one zero element written this cycle), ``beat_en`` (a beat arrives),
        ``row_end`` (the row's last beat) and, with a banked target, the position of the
        beat in its row."""
        r.pad_en = Signal()   # a ZERO_* state: one zero element written a cycle
        with m.If(r.pad_en):  # (before the FSM: its own zcnt loads take precedence)
            m.d.sync += [r.sidx.eq(r.sidx + 1), r.zcnt.eq(r.zcnt - 1)]
        r.beat_en = Signal()
        r.row_end = Signal()            # the row's last beat
        m.d.comb += r.row_end.eq(r.beat_en & (r.row_left == 1))
        if any(t.banks > 1 for t in self.targets):
            ts = self.targets
            # beats since the row's first, modulo 2**(the most bank address bits)
            r.beat_in_row = Signal(max(t.bank_addr_bits for t in ts if t.banks > 1))
            r.first_beat = Signal()     # the next beat is the row's first
            r.row_lane = Signal(max(t.log_banks for t in ts))  # lane of the row's first element
            with m.If(r.beat_en):
                m.d.sync += [r.beat_in_row.eq(r.beat_in_row + 1), r.first_beat.eq(0)]

    def _fsm(self, m: Module, r: "_Regs") -> None:
        """IDLE -> ROW -> (ZERO_L) -> REQ/BEATS or ZERO_M -> (ZERO_R) -> ROW ... -> FIN."""
        lBB = _log2(self.bus_bytes)
        bus = self.mem
        banked = any(t.banks > 1 for t in self.targets)

        def after_row():
            with m.If((r.top_left == 0) & (r.data_left == 0) & (r.bot_left == 0)):
                m.next = "FIN"
            with m.Else():
                m.next = "ROW"

        def right_pad():
            with m.If(self.x_pad_1 != 0):
                m.d.sync += r.zcnt.eq(self.x_pad_1)
                m.next = "ZERO_R"
            with m.Else():
                after_row()

        m.d.comb += self.busy.eq(1)
        with m.FSM():
            with m.State("IDLE"):
                m.d.comb += self.busy.eq(0)
                with m.If(self.start):
                    m.d.sync += [r.top_left.eq(self.y_pad_0), r.data_left.eq(self.y_size),
                                 r.bot_left.eq(self.y_pad_1), r.row_dram.eq(self.dram_base),
                                 r.sidx.eq(self.sram_base)]
                    with m.If((self.x_size == 0) | ((self.y_pad_0 == 0) & (self.y_size == 0)
                                                    & (self.y_pad_1 == 0))):
                        m.next = "FIN"
                    with m.Else():
                        m.next = "ROW"
            with m.State("ROW"):
                is_data = (r.top_left == 0) & (r.data_left != 0)
                m.d.sync += r.data_row.eq(is_data)
                with m.If(r.top_left != 0):
                    m.d.sync += r.top_left.eq(r.top_left - 1)
                with m.Elif(r.data_left != 0):
                    m.d.sync += r.data_left.eq(r.data_left - 1)
                with m.Else():
                    m.d.sync += r.bot_left.eq(r.bot_left - 1)
                with m.If(is_data):
                    m.d.sync += [r.row_dram.eq(r.row_dram + self.x_stride),
                                 r.cur_beat.eq(r.first_row_beat), r.row_left.eq(r.row_beats)]
                    if banked:
                        m.d.sync += [r.beat_in_row.eq(0), r.first_beat.eq(1),
                                     r.row_lane.eq(r.row_dram)]
                with m.If(self.x_pad_0 != 0):
                    m.d.sync += r.zcnt.eq(self.x_pad_0)
                    m.next = "ZERO_L"
                with m.Elif(is_data):
                    m.next = "REQ"
                with m.Else():
                    m.d.sync += r.zcnt.eq(self.x_size)
                    m.next = "ZERO_M"
            # the zeros of a row: its left pad; a pad row's x_size middle ones (x_size >= 1:
            # rows run only then); its right pad. Each segment is left in its last cycle.
            with m.State("ZERO_L"):
                m.d.comb += r.pad_en.eq(1)
                with m.If(r.zcnt == 1):
                    with m.If(r.data_row):
                        m.next = "REQ"
                    with m.Else():
                        m.d.sync += r.zcnt.eq(self.x_size)
                        m.next = "ZERO_M"
            with m.State("ZERO_M"):
                m.d.comb += r.pad_en.eq(1)
                with m.If(r.zcnt == 1):
                    right_pad()
            with m.State("ZERO_R"):
                m.d.comb += r.pad_en.eq(1)
                with m.If(r.zcnt == 1):
                    after_row()
            with m.State("REQ"):
                m.d.comb += [bus.cmd_valid.eq(1), bus.cmd_addr.eq(r.cur_beat << lBB),
                             bus.cmd_len.eq(r.n), bus.cmd_write.eq(0)]
                with m.If(bus.cmd_ready):
                    m.d.sync += r.burst_left.eq(r.n)
                    m.next = "BEATS"
            with m.State("BEATS"):
                with m.If(bus.rd_valid):
                    m.d.comb += r.beat_en.eq(1)
                    m.d.sync += [r.cur_beat.eq(r.cur_beat + 1), r.row_left.eq(r.row_left - 1),
                                 r.burst_left.eq(r.burst_left - 1)]
                    with m.If(r.row_left == 1):
                        right_pad()
                    with m.Elif(r.burst_left == 1):
                        m.next = "REQ"
            with m.State("FIN"):
                m.d.comb += self.done.eq(1)
                m.next = "IDLE"

    def _write_whole(self, m: Module, r: "_Regs", k: int, t: DmaTarget) -> None:
        """SRAM writes of target ``k``, whose element is one or more whole beats.

        Element e of the row is beats e*K .. e*K+K-1 of it; the row has x_size*K beats (it
        starts at a beat), so beat i is an element's last when row_left = x_size*K - i is 1
        modulo K."""
        BB = self.bus_bytes
        beat = self.mem.rd_data
        p = getattr(self, f"w_{t.name}")[0]
        active = self.sel == k
        K = t.elem_bytes // BB
        lK = _log2(K)
        if K > 1:
            asm = Signal(8 * t.elem_bytes - 8 * BB, name=f"asm_{t.name}")
            full = Cat(asm, beat)
            with m.If(active & r.beat_en):
                m.d.sync += asm.eq(full[8 * BB:])
            last = r.row_left[:lK] == 1
        else:
            full = beat
            last = 1
        with m.If(active & r.pad_en):
            m.d.comb += [p.en.eq(1), p.addr.eq(r.sidx), p.data.eq(0)]
        with m.If(active & r.beat_en & last):
            m.d.comb += [p.en.eq(1), p.addr.eq(r.sidx), p.data.eq(full)]
            m.d.sync += r.sidx.eq(r.sidx + 1)

    def _write_banked(self, m: Module, r: "_Regs", k: int, t: DmaTarget) -> None:
        """SRAM writes of target ``k``, whose ``t.banks`` elements share a beat.

        Element e of the row sits in lane j of the row's beat b, e = b*R + j - off (off:
        the lane of its first element), and goes to SRAM element sidx + e. Lanes before off
        in the first beat and after the row's last element in its last beat are not the
        row's. Positions, not addresses: the same whatever the address width and wherever
        the row lies in memory."""
        beat = self.mem.rd_data
        ports = getattr(self, f"w_{t.name}")
        active = self.sel == k
        R, lR = t.banks, t.log_banks
        EB = t.elem_bytes
        lanes = Array(beat[8 * EB * j:8 * EB * (j + 1)] for j in range(R))
        off = r.row_lane[:lR]
        last_lane = Signal(lR, name=f"last_lane_{t.name}")
        delta = Signal(lR, name=f"delta_{t.name}")
        m.d.comb += [last_lane.eq(off + self.x_size - 1), delta.eq(r.sidx - off)]
        for b in range(R):
            p = ports[b]
            j = Signal(lR, name=f"lane_{t.name}_{b}")
            s = Signal(lR + t.bank_addr_bits, name=f"selem_{t.name}_{b}")
            m.d.comb += [j.eq(b - delta),
                         s.eq(Cat(j, r.beat_in_row[:t.bank_addr_bits]) + r.sidx - off)]
            ok = (~r.first_beat | (j >= off)) & ((r.row_left != 1) | (j <= last_lane))
            with m.If(active & r.pad_en & (r.sidx[:lR] == b)):
                m.d.comb += [p.en.eq(1), p.addr.eq(r.sidx[lR:]), p.data.eq(0)]
            with m.If(active & r.beat_en & ok):
                m.d.comb += [p.en.eq(1), p.addr.eq(s[lR:]), p.data.eq(lanes[j])]
        with m.If(active & r.row_end):
            m.d.sync += r.sidx.eq(r.sidx + self.x_size)


class _Regs:
    """The signals ``DmaRead``'s elaboration steps share (attributes set as they are made)."""
