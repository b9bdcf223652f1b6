"""A synchronous FIFO with an exactly known latency (command and fetch queues).

An entry written in cycle t (``w_valid & w_ready``) can be read from cycle
t+1. ``r_data`` is the head entry while ``r_valid``; ``r_ready`` pops it.
``w_ready`` is ``level < depth`` at the start of the cycle (a pop in the same
cycle does not make room in that cycle). ``level`` counts the entries.

With ``tag_width`` > 0 every entry also carries a tag (``w_tag`` / ``r_tag``)
held in flip-flops rather than in the memory: a few bits of the head (fetch's
destination module) then come from a small multiplexer instead of through
the read pointer's fan-out to every bit of a wide memory.
"""
from __future__ import annotations

from amaranth import Array, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

#: Cycles from a write to the entry being readable (``timing.CMD_QUEUE_LATENCY``).
LATENCY = 1


class SyncQueue(wiring.Component):
    """``depth`` entries of ``width`` bits.

    Raises:
        ValueError: ``depth`` or ``width`` is not a positive int.
    """

    def __init__(self, width: int, depth: int, tag_width: int = 0):
        for name, v in (("width", width), ("depth", depth)):
            if not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive int, not {v!r}")
        if not isinstance(tag_width, int) or tag_width < 0:
            raise ValueError(f"tag_width must be a non-negative int, not {tag_width!r}")
        self.width, self.depth, self.tag_width = width, depth, tag_width
        ports = {"w_valid": In(1), "w_ready": Out(1), "w_data": In(width),
                 "r_valid": Out(1), "r_ready": In(1), "r_data": Out(width),
                 "level": Out(range(depth + 1))}
        if tag_width:
            ports.update(w_tag=In(tag_width), r_tag=Out(tag_width))
        super().__init__(ports)

    def elaborate(self, platform):
        m = Module()
        m.submodules.mem = mem = Memory(shape=self.width, depth=self.depth, init=[])
        wp = mem.write_port()
        rp = mem.read_port(domain="comb")
        wptr = Signal(range(self.depth))
        rptr = Signal(range(self.depth))
        last = self.depth - 1
        push = self.w_valid & self.w_ready
        pop = self.r_ready & self.r_valid
        m.d.comb += [self.w_ready.eq(self.level != self.depth),
                     self.r_valid.eq(self.level != 0),
                     wp.addr.eq(wptr), wp.data.eq(self.w_data), wp.en.eq(push),
                     rp.addr.eq(rptr), self.r_data.eq(rp.data)]
        if self.tag_width:
            tags = Array(Signal(self.tag_width, name=f"tag{k}") for k in range(self.depth))
            m.d.comb += self.r_tag.eq(tags[rptr])
            with m.If(push):
                m.d.sync += tags[wptr].eq(self.w_tag)
        with m.If(push):
            m.d.sync += wptr.eq(Mux(wptr == last, 0, wptr + 1))
        with m.If(pop):
            m.d.sync += rptr.eq(Mux(rptr == last, 0, rptr + 1))
        with m.If(push & ~pop):
            m.d.sync += self.level.eq(self.level + 1)
        with m.Elif(pop & ~push):
            m.d.sync += self.level.eq(self.level - 1)
        return m
