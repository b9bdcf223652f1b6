"""REQUANT's second stage: the registered sum shifted right and clipped to int8.

``Requant``: ``out[l] = clip(sum[l] >> ctl[4:0], lo, 127)`` (arithmetic
shift) for the ``lanes`` int32 lanes, ``lo`` = 0 if ``ctl[5]`` (relu) else
-128, ``OUT_BITS`` = 8 bits per lane (the semantics: ``vta_hw.alu``,
REQUANT). Combinational. The core (``rtl/core.py``) feeds it, in stage S6,
the sum ``acc + b`` that ``Alu`` computed as for ADD in S5 and the core
registered, so no path chains the 32-bit adder into the shift and the clip:
in one stage they took the smallest preset's ULX3S Fmax from 53.4 to 41.2 MHz
(``docs/fpga-timing.md``).

Area: ``ctl`` holds for a whole instruction, so instead of a 32-bit shifter
per lane this computes only the 8 bits that can reach OUT, in five stages
(shift by 16, 8, 4, 2, 1) that each keep only the bits the later stages read
(23, 15, 11, 9, 8: 66 two-input multiplexers per lane, where Yosys made 32-to-1
selects of ``(sum >> sh)[:8]`` in 46 more iCE40 LUTs), and tests the range with
one mask, decoded from ``ctl`` once for all lanes by a table (``_at_or_above``;
comparisons with constants took a carry chain each, 72 iCE40 carry cells):
``sum >> sh`` fits int8 iff the sum's bits ``sh + 7`` to 31 all equal its sign.
"""
from __future__ import annotations

from amaranth import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from vta_hw.alu import OUT_BITS, OUT_MAX, OUT_MIN, REQUANT_RELU_BIT, REQUANT_SHIFT_BITS
from vta_hw.rtl.alu import check_lanes


class Requant(wiring.Component):
    """REQUANT's shift and clip over ``lanes`` lanes (module docstring).

    Ports: ``sum`` (32 bits per lane), ``ctl`` (the immediate's low bits: ``[4:0]``
    the shift, ``[5]`` relu), ``out`` (``OUT_BITS`` per lane).

    Raises:
        ValueError: ``lanes`` is not a positive int.
    """

    def __init__(self, lanes: int):
        check_lanes(lanes)
        self.lanes = lanes
        super().__init__({"sum": In(32 * lanes), "ctl": In(REQUANT_SHIFT_BITS + 1),
                          "out": Out(OUT_BITS * lanes)})

    def elaborate(self, platform):
        m = Module()
        sh, relu = self.ctl[:REQUANT_SHIFT_BITS], self.ctl[REQUANT_RELU_BIT]
        # bit i of the sum lands at or above OUT's sign bit (i >= sh + 7)
        high = Signal(32)
        with m.Switch(sh):
            for v in range(1 << REQUANT_SHIFT_BITS):
                with m.Case(v):
                    m.d.comb += high.eq(_at_or_above(v + OUT_BITS - 1))
        outs = []
        for lane in range(self.lanes):
            s = self.sum.word_select(lane, 32)
            y = Signal(OUT_BITS, name=f"y{lane}")
            m.d.comb += y.eq(_shift_right_low(s, sh, OUT_BITS))
            over, under = Signal(name=f"over{lane}"), Signal(name=f"under{lane}")
            m.d.comb += [over.eq(~s[31] & (s & high).any()),
                         under.eq(s[31] & (relu | ~(s | ~high).all()))]
            q = Signal(OUT_BITS, name=f"q{lane}")
            m.d.comb += q.eq(Mux(over, OUT_MAX, Mux(under, Mux(relu, 0, OUT_MIN), y)))
            outs.append(q)
        m.d.comb += self.out.eq(Cat(*outs))
        return m


def _at_or_above(bit: int) -> int:
    """The 32-bit mask of bits ``bit`` to 31."""
    return ((1 << 32) - 1) >> bit << bit


def _shift_right_low(s, sh, width: int):
    """``(s.as_signed() >> sh)[:width]`` for 32-bit ``s``: one stage per bit of ``sh``,
    largest shift first, each keeping only the ``width + 2**k - 1`` bits the later
    stages read (bits past 31 are the sign)."""
    v = [s[i] for i in range(32)]
    for k in reversed(range(len(sh))):
        step = 1 << k
        v = [Mux(sh[k], v[i + step] if i + step < len(v) else s[31], v[i])
             for i in range(width + step - 1)]
    return Cat(*v[:width])
