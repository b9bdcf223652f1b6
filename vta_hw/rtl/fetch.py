"""Fetch: reads the instruction stream from memory and routes each instruction.

On ``start`` (cycle t) fetch latches ``insn_base`` (bytes, a multiple of the
bus width in bytes) and ``insn_count`` and goes to REQ at t+1. The stream of
``16 * insn_count`` bytes is read in bursts (``DramTiming.bursts``); fetch
requests a burst only while its staging queue is empty (``cmd_valid`` is
``staging.level == 0``). Every completed 128-bit instruction enters the staging
queue in the cycle of its last beat. In REQ with no beats left fetch returns
to IDLE (one cycle).

When every burst ends on an instruction boundary (``max_burst_beats``
divides the beats of an instruction: bursts start at the 16-byte aligned
``insn_base`` and pages hold whole instructions), the staging queue has one
entry and no beat arrives while it is full, so the beats are shifted straight
into that entry: one 128-bit register instead of an assembly register and a
queue entry (the iCEBreaker's 8-bit bus, ``fpga.boards``), with the same
cycles.

The dispatcher moves the head of the staging queue, one instruction per
cycle, into the command queue of load (LOAD INP/WGT), store (STORE) or
compute (everything else) when that queue has room (with no command queues,
``CMD_QUEUE_DEPTH = 0``, into the module itself while it is idle). The destination is
decoded when an instruction is staged and kept beside it as the staging
queue's tag (flip-flops), so the dispatch decision does not wait for the
staging memory's 128-bit read.

An undefined instruction (an unknown opcode, or a value no enum defines in a
field of ``vta_hw.isa.ENUM_FIELDS``: a LOAD/STORE memory id, an ALU opcode, whose
position depends on ``cfg``: ``_undefined``) is tagged so when it is staged and never
dispatched: with it at the head of staging fetch raises ``error`` and holds
``dispatched``, the number of instructions dispatched before it (its index),
and ``control`` ends the run with an error status. ``stall`` is high while
the head waits for room in its module's command queue; ``quiet`` while fetch
does nothing that can make progress by itself (IDLE, or REQ behind a stalled
head), for ``control``'s no-progress watchdog.
"""
from __future__ import annotations

import functools
import operator

from amaranth import Cat, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from vta_hw import isa
from vta_hw.config import INSN_BITS, VTAConfig
from vta_hw.isa import Opcode
from vta_hw.rtl.control import REG_BITS
from vta_hw.rtl.memport import (ADDR_BITS, MemPortSignature, burst_beats, check_addr_bits,
                                len_bits)
from vta_hw.rtl.queue import SyncQueue


#: Instructions the dispatcher moves per cycle is one: cycles per instruction
#: (``timing.FETCH_CYCLES_PER_INSN``).
DISPATCH_CYCLES_PER_INSN = 1


def _log2(n: int) -> int:
    return n.bit_length() - 1


def queue_write_signature():
    return wiring.Signature({"w_valid": Out(1), "w_ready": In(1), "w_data": Out(INSN_BITS)})


def _destination(insn, cfg: VTAConfig):
    """``Cat(to_load, to_store, undefined)`` of a 128-bit instruction (else compute): the
    routing of ``vta_hw.isa.module_of``."""
    # opcode and memory id sit at the same bits on every config (isa.layout)
    where = {f.name: f for f in isa.layout(Opcode.LOAD, VTAConfig())}
    opcode = insn[where["opcode"].lsb:where["opcode"].msb + 1]
    mem = insn[where["mem"].lsb:where["mem"].msb + 1]
    on_load = functools.reduce(operator.or_, (mem == m for m in isa.LOAD_MODULE_MEMS))
    return Cat((opcode == Opcode.LOAD) & on_load,
               opcode == Opcode.STORE, _undefined(insn, opcode, cfg))


def _undefined(insn, opcode, cfg: VTAConfig):
    """High for an opcode ``vta_hw.isa.Opcode`` does not define, or an instruction whose
    enum field (``vta_hw.isa.ENUM_FIELDS``: memory id, ALU opcode; at ``cfg``'s bits)
    holds a value its enum does not define: what the simulators reject as
    ``UnknownOpcodeError`` (``sim.prologue.decode_word``)."""
    bad = ~functools.reduce(operator.or_, (opcode == o for o in Opcode))
    for op in Opcode:
        for f in isa.layout(op, cfg):
            enum_t = isa.ENUM_FIELDS.get(f.name)
            if enum_t is not None:
                v = insn[f.lsb:f.lsb + f.width]
                bad |= (opcode == op) & ~functools.reduce(operator.or_, (v == e for e in enum_t))
    return bad


class Fetch(wiring.Component):
    """Instruction fetch and dispatch for a ``bus_width``-bit memory port of
    ``addr_bits``-bit byte addresses (``insn_base`` is taken modulo ``2**addr_bits``;
    ``insn_count`` is the 32-bit INSN_COUNT register of ``control``); ``cfg`` places
    the instruction fields whose values fetch checks (``_undefined``).

    Raises:
        ValueError: ``bus_width`` is over 128 bits (one beat would hold several
            instructions, which this fetch unit does not split), or a bad ``addr_bits``.
    """

    def __init__(self, bus_width: int, max_burst_beats: int, page_bytes: int,
                 addr_bits: int = ADDR_BITS, *, cfg: VTAConfig):
        if bus_width > INSN_BITS:
            raise ValueError(f"the fetch unit needs BUS_WIDTH <= {INSN_BITS} bits, not {bus_width}")
        self.addr_bits = check_addr_bits(addr_bits, page_bytes)
        self.bus_bytes = bus_width // 8
        self.max_burst_beats, self.page_bytes = max_burst_beats, page_bytes
        self.beats_per_insn = INSN_BITS // bus_width
        self.cfg = cfg
        # fetch requests a burst only while the staging queue is empty, and a burst of
        # at most max_burst_beats beats completes at most this many instructions
        self.stage_depth = -(-max_burst_beats // self.beats_per_insn)
        super().__init__({
            "start": In(1), "insn_base": In(addr_bits), "insn_count": In(REG_BITS),
            "busy": Out(1), "stall": Out(1), "quiet": Out(1),
            "error": Out(1), "dispatched": Out(REG_BITS),
            "mem": Out(MemPortSignature(bus_width, max_burst_beats, addr_bits)),
            "to_load": Out(queue_write_signature()), "to_compute": Out(queue_write_signature()),
            "to_store": Out(queue_write_signature()),
        })

    def elaborate(self, platform):
        m = Module()
        BB, lBB, IB = self.bus_bytes, _log2(self.bus_bytes), self.beats_per_insn
        bus = self.mem
        in_place = IB % self.max_burst_beats == 0
        stage = _StagingRegister() if in_place else SyncQueue(INSN_BITS, self.stage_depth,
                                                               tag_width=3)
        m.submodules.staging = stage
        cur_beat = Signal(self.addr_bits - lBB)   # the memory address in beats
        # beats of the stream left: insn_count * IB < 2**(REG_BITS + log2(IB))
        beats_left = Signal(REG_BITS + _log2(IB))
        burst_left = Signal(len_bits(self.max_burst_beats))
        bc = Signal(max(_log2(IB), 1))

        # (used in REQ only while beats_left != 0)
        n = burst_beats(m, cur_beat, beats_left, self.max_burst_beats, self.page_bytes // BB)

        beat = bus.rd_data
        if IB > 1:
            # the first IB - 1 beats of an instruction: in the staging entry itself when it
            # is empty for all of them (``in_place``), else in a register of their own
            asm = stage.r_data[8 * BB:] if in_place else Signal(INSN_BITS - 8 * BB)
            full = Cat(asm, beat)
            insn_done = bc == IB - 1
        else:
            full, insn_done = beat, 1

        m.d.comb += self.busy.eq(1)
        with m.FSM():
            with m.State("IDLE"):
                m.d.comb += [self.busy.eq(0), self.quiet.eq(1)]
                with m.If(self.start):
                    m.d.sync += [cur_beat.eq(self.insn_base[lBB:]),
                                 beats_left.eq(self.insn_count << _log2(IB)), bc.eq(0)]
                    m.next = "REQ"
            with m.State("REQ"):
                m.d.comb += self.quiet.eq(self.stall | self.error)
                with m.If(beats_left == 0):
                    m.next = "IDLE"
                with m.Else():
                    m.d.comb += [bus.cmd_valid.eq(stage.level == 0),
                                 bus.cmd_addr.eq(cur_beat << lBB), bus.cmd_len.eq(n)]
                    with m.If(bus.cmd_valid & bus.cmd_ready):
                        m.d.sync += burst_left.eq(n)
                        m.next = "BEATS"
            with m.State("BEATS"):
                with m.If(bus.rd_valid):
                    m.d.sync += [cur_beat.eq(cur_beat + 1), beats_left.eq(beats_left - 1),
                                 burst_left.eq(burst_left - 1)]
                    if IB > 1:
                        m.d.sync += bc.eq(bc + 1)
                        if in_place:
                            m.d.comb += stage.shift_en.eq(1)
                        else:
                            m.d.sync += asm.eq(full[8 * BB:])
                    m.d.comb += [stage.w_valid.eq(insn_done), stage.w_data.eq(full),
                                 stage.w_tag.eq(_destination(full, self.cfg))]
                    with m.If(burst_left == 1):
                        m.next = "REQ"

        # dispatch: one instruction per cycle to its module's command queue
        head = stage.r_data
        to_load, to_store, bad = stage.r_tag[0], stage.r_tag[1], stage.r_tag[2]
        for q, sel in ((self.to_load, to_load), (self.to_store, to_store),
                       (self.to_compute, ~to_load & ~to_store)):
            m.d.comb += q.w_data.eq(head)
            with m.If(sel & ~bad):
                m.d.comb += [q.w_valid.eq(stage.r_valid), stage.r_ready.eq(q.w_ready),
                             self.stall.eq(stage.r_valid & ~q.w_ready)]
        m.d.comb += self.error.eq(stage.r_valid & bad)
        with m.If(self.start):
            m.d.sync += self.dispatched.eq(0)
        with m.Elif(stage.r_valid & stage.r_ready):
            m.d.sync += self.dispatched.eq(self.dispatched + 1)
        return m



class _StagingRegister(wiring.Component):
    """A one-entry staging queue whose entry also collects the beats of the instruction
    (``Fetch``, when bursts end on instruction boundaries).

    The ports and cycles of ``SyncQueue(INSN_BITS, 1, tag_width=3)`` (an entry written in
    cycle t is readable from t+1; ``level`` 0 or 1; ``r_data`` is the entry), plus
    ``shift_en``: in a cycle in which it is high the entry takes ``w_data`` without
    becoming valid (an earlier beat of the instruction). The writer writes and shifts
    only while ``level`` is 0.
    """

    def __init__(self):
        super().__init__({"w_valid": In(1), "w_ready": Out(1), "w_data": In(INSN_BITS),
                          "w_tag": In(3), "r_valid": Out(1), "r_ready": In(1),
                          "r_data": Out(INSN_BITS), "r_tag": Out(3), "level": Out(range(2)),
                          "shift_en": In(1)})

    def elaborate(self, platform):
        m = Module()
        m.d.comb += [self.w_ready.eq(~self.level), self.r_valid.eq(self.level)]
        with m.If(self.shift_en | self.w_valid):
            m.d.sync += self.r_data.eq(self.w_data)
        with m.If(self.w_valid):
            m.d.sync += [self.r_tag.eq(self.w_tag), self.level.eq(1)]
        with m.Elif(self.r_valid & self.r_ready):
            m.d.sync += self.level.eq(0)
        return m
