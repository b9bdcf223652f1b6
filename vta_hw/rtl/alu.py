"""The vector ALU: the one-cycle ops (combinational) and the multi-cycle MUL.

``Alu``: ``out[l] = op(a[l], b[l])`` for the ``lanes`` 32-bit lanes
(``vta_hw.isa.AluOp``, semantics in ``vta_hw.alu``): MIN, MAX (signed), ADD
(wrapping), SHR (``b >= 0``: arithmetic shift right by ``min(b, 31)``;
``b < 0``: shift left by ``min(-b, 31)``, wrapping), and REQUANT's first
stage, the sum ``a + b`` as ADD (the core registers it for ``rtl/requant.py``,
the second stage, so that the adder never chains into a shift and a clip).
MUL and unknown opcodes give ``a``: MUL is ``SeqMul``'s. ``op`` is registered:
``out`` in a cycle applies the ``op`` of the cycle before (the core feeds it the
instruction's field, stable a cycle before the first operands), decoded into
one-hot flags with one copy per lane (``lane_flags``), so that a lane's adder
and result multiplexer see local registers instead of an opcode decode fanned
out to every lane (the 1x8 ULX3S build's slowest path; ``docs/fpga-timing.md``).
Per lane, ADD and
the MIN/MAX comparison share one adder (``a - b`` gives the comparison), and
both shift directions share one right shifter (a left shift is a right shift
of the bit-reversed operand), to save area on small FPGAs
(``docs/fpga-timing.md``).

``SeqMul``: MUL (the low 32 bits of the signed product) with one registered
16x16-bit multiplier per lane, used three times per product
(``a*b mod 2**32 = al*bl + ((ah*bl + al*bh) mod 2**16) * 2**16``, the
halves unsigned); ``out`` holds the product ``MUL_LATENCY`` = 5 cycles after
the cycle in which ``start`` sampled ``a`` and ``b``, and until the next
``start``. Nothing combinational runs from ``a``/``b`` through the
multiplier, so the core's ACC read -> write path never holds a multiplier
(``timing.ALU_MUL_CYCLES_PER_UOP`` = ``MUL_LATENCY + 1``).
"""
from __future__ import annotations

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from vta_hw.config import ALU_OPCODE_BITS
from vta_hw.isa import AluOp

#: Cycles from ``SeqMul.start`` (operands sampled in cycle T) to ``out`` holding
#: the product (cycle T + MUL_LATENCY).
MUL_LATENCY = 5


def check_lanes(lanes) -> None:
    """Raises ``ValueError`` unless ``lanes`` (a vector unit's int32 lanes) is a positive int."""
    if not isinstance(lanes, int) or lanes < 1:
        raise ValueError(f"lanes must be a positive int, not {lanes!r}")


def lane_flags(m: Module, value, name: str, lanes: int) -> list[Signal]:
    """One register per lane holding ``value`` (copies: each drives a lane's 32 or so
    multiplexers; the FPGA build keeps them apart by the ``_dup`` in their names,
    ``fpga.build.KEEP_DUPLICATES``)."""
    regs = [Signal(name=f"{name}_dup{k}") for k in range(lanes)]
    m.d.sync += [r.eq(value) for r in regs]
    return regs


class Alu(wiring.Component):
    """The one-cycle ALU ops (and REQUANT's sum) over ``lanes`` int32 lanes.

    Ports: ``op`` (``AluOp``, registered: it applies from the next cycle), ``a``,
    ``b`` (32 bits per lane), ``out`` (combinational from ``a`` and ``b``).

    Raises:
        ValueError: ``lanes`` is not a positive int.
    """

    def __init__(self, lanes: int):
        check_lanes(lanes)
        self.lanes = lanes
        super().__init__({"op": In(ALU_OPCODE_BITS), "a": In(32 * lanes), "b": In(32 * lanes),
                          "out": Out(32 * lanes)})

    def elaborate(self, platform):
        m = Module()
        op = self.op
        # the registered op, one-hot, one copy per lane; none high: ``a`` (MUL, unknown)
        is_cmp = lane_flags(m, (op == AluOp.MIN) | (op == AluOp.MAX), "cmp", self.lanes)
        is_max = lane_flags(m, op == AluOp.MAX, "max", self.lanes)
        is_sum = lane_flags(m, (op == AluOp.ADD) | (op == AluOp.REQUANT), "sum", self.lanes)
        is_shr = lane_flags(m, op == AluOp.SHR, "shr", self.lanes)
        outs = []
        for lane in range(self.lanes):
            a, b = self.a.word_select(lane, 32), self.b.word_select(lane, 32)
            cmp, mx = is_cmp[lane], is_max[lane]
            # one 33-bit adder: a + b (ADD, REQUANT), or a - b whose sign says a < b (MIN, MAX)
            s = Signal(33, name=f"s{lane}")
            m.d.comb += s.eq(Cat(a, a[31]) + Cat(b ^ cmp.replicate(32), b[31] ^ cmp) + cmp)
            take_a = Signal(name=f"take_a{lane}")
            m.d.comb += take_a.eq(s[32] ^ mx)   # MAX with a == b: either operand
            # SHR: one right shifter; a left shift is a right shift of the bit-reversed
            # operand, filled with zeros instead of the sign, reversed back. Left by
            # n = min(-b, 31) shifts the reversed operand by one in the wiring and by
            # n - 1 in the shifter: ~b for -31 <= b <= -1, so no negation adder
            right = ~b[31]
            amount = Signal(5, name=f"amount{lane}")
            m.d.comb += amount.eq(Mux(right, Mux(b[5:].any(), 31, b[:5]),
                                      Mux(b[5:].all() & b[:5].any(), ~b[:5], 30)))
            x = Signal(32, name=f"x{lane}")
            m.d.comb += x.eq(Mux(right, a, Cat(a[::-1][1:], 0)))
            y = Signal(32, name=f"y{lane}")
            m.d.comb += y.eq((Cat(x, (right & a[31]).replicate(32)) >> amount)[:32])
            r = Signal(32, name=f"r{lane}")
            m.d.comb += r.eq(Mux(cmp, Mux(take_a, a, b),
                                 Mux(is_sum[lane], s[:32],
                                     Mux(is_shr[lane], Mux(right, y, y[::-1]), a))))
            outs.append(r)
        m.d.comb += self.out.eq(Cat(*outs))
        return m


class SeqMul(wiring.Component):
    """MUL over ``lanes`` int32 lanes, one 16x16 multiplier per lane (module docstring).

    Ports: ``start`` (sample ``a`` and ``b`` this cycle), ``a``, ``b``, ``out``
    (valid ``MUL_LATENCY`` cycles after ``start``). A ``start`` while a
    product is in progress restarts it.

    Raises:
        ValueError: ``lanes`` is not a positive int.
    """

    def __init__(self, lanes: int):
        check_lanes(lanes)
        self.lanes = lanes
        super().__init__({"start": In(1), "a": In(32 * lanes), "b": In(32 * lanes),
                          "out": Out(32 * lanes)})

    def elaborate(self, platform):
        m = Module()
        # phase[k] is high in cycle T+1+k after a start in cycle T
        phase = Signal(4)
        m.d.sync += phase.eq(Cat(self.start, phase[:3]))
        outs = []
        for lane in range(self.lanes):
            a, b = self.a.word_select(lane, 32), self.b.word_select(lane, 32)
            # the operand halves, sampled at T; separate from the multiplier's input
            # registers x, y so that the placer can keep each near its own logic
            ah, al, bh, bl = (Signal(16, name=f"{n}{lane}") for n in ("ah", "al", "bh", "bl"))
            x, y = Signal(16, name=f"x{lane}"), Signal(16, name=f"y{lane}")
            p, s = Signal(32, name=f"p{lane}"), Signal(32, name=f"s{lane}")
            m.d.sync += p.eq(x * y)                       # the lane's one multiplier
            with m.If(self.start):                        # T
                m.d.sync += [al.eq(a[:16]), ah.eq(a[16:]), bl.eq(b[:16]), bh.eq(b[16:])]
            with m.If(phase[0]):                          # T+1: x*y = al*bl next
                m.d.sync += [x.eq(al), y.eq(bl)]
            with m.Elif(phase[1]):                        # T+2: p <= al*bl; then ah*bl
                m.d.sync += x.eq(ah)
            with m.Elif(phase[2]):                        # T+3: p <= ah*bl; then al*bh
                m.d.sync += [s.eq(p), x.eq(al), y.eq(bh)]
            with m.Elif(phase[3]):                        # T+4: p <= al*bh
                m.d.sync += s[16:].eq(s[16:] + p[:16])
            outs.append(Cat(s[:16], (s[16:] + p[:16])[:16]))   # T+5
        m.d.comb += self.out.eq(Cat(*outs))
        return m
