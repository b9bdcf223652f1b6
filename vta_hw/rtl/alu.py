"""The vector ALU: one operation on every int32 lane, combinational.

``out[l] = op(a[l], b[l])`` for the ``lanes`` 32-bit lanes (``vta_hw.isa.AluOp``):
MIN, MAX (signed), ADD (wrapping), SHR (``b >= 0``: arithmetic shift right by
``min(b, 31)``; ``b < 0``: shift left by ``min(-b, 31)``, wrapping), MUL (low
32 bits of the signed product). Unknown opcodes give ``a``.
"""
from __future__ import annotations

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from vta_hw.isa import AluOp


class Alu(wiring.Component):
    """An ALU over ``lanes`` int32 lanes.

    Raises:
        ValueError: ``lanes`` is not a positive int.
    """

    def __init__(self, lanes: int):
        if not isinstance(lanes, int) or lanes < 1:
            raise ValueError(f"lanes must be a positive int, not {lanes!r}")
        self.lanes = lanes
        super().__init__({"op": In(3), "a": In(32 * lanes), "b": In(32 * lanes),
                          "out": Out(32 * lanes)})

    def elaborate(self, platform):
        m = Module()
        outs = []
        for lane in range(self.lanes):
            a = self.a.word_select(lane, 32).as_signed()
            b = self.b.word_select(lane, 32).as_signed()
            r = Signal(32, name=f"r{lane}")
            neg = Signal(32, name=f"neg{lane}")
            m.d.comb += neg.eq(-b)
            right = Mux(b > 31, 31, b[:5])
            left = Mux(b < -31, 31, neg[:5])
            with m.Switch(self.op):
                with m.Case(AluOp.MIN):
                    m.d.comb += r.eq(Mux(a < b, a, b))
                with m.Case(AluOp.MAX):
                    m.d.comb += r.eq(Mux(a > b, a, b))
                with m.Case(AluOp.ADD):
                    m.d.comb += r.eq(a + b)
                with m.Case(AluOp.SHR):
                    with m.If(b >= 0):
                        m.d.comb += r.eq(a >> right)
                    with m.Else():
                        m.d.comb += r.eq(a << left)
                with m.Case(AluOp.MUL):
                    m.d.comb += r.eq(a * b)
                with m.Default():
                    m.d.comb += r.eq(a)
            outs.append(r)
        m.d.comb += self.out.eq(Cat(*outs))
        return m
