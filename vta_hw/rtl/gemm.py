"""The GEMM multiply-accumulate array: ``acc + inp . wgt^T`` with three register stages.

``inp`` (int8 ``[BATCH][BLOCK_IN]``) and ``wgt`` (int8 ``[BLOCK_OUT][BLOCK_IN]``)
are sampled in cycle c into registers (so that the SRAM outputs drive
flip-flops, not multipliers); in cycle c+1 the ``BATCH x BLOCK_OUT x
BLOCK_IN`` 16-bit products go into a register; in cycle c+2 an adder tree
sums them into a register of ``BATCH x BLOCK_OUT`` sums; in cycle c+3 ``out``
(int32 ``[BATCH][BLOCK_OUT]``) is ``acc`` plus those sums, wrapping at 32
bits (one adder after ``acc``). Arrays are packed row-major with element 0 in
the least significant bits, which is their little-endian byte order in
memory.
"""
from __future__ import annotations

from amaranth import Cat, Module, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from vta_hw.config import VTAConfig


def _tree(terms):
    while len(terms) > 1:
        nxt = [terms[i] + terms[i + 1] for i in range(0, len(terms) - 1, 2)]
        if len(terms) % 2:
            nxt.append(terms[-1])
        terms = nxt
    return terms[0]


class MacArray(wiring.Component):
    """``BATCH x BLOCK_IN x BLOCK_OUT`` multipliers for ``cfg``, pipelined (three stages)."""

    def __init__(self, cfg: VTAConfig):
        self.cfg = cfg
        super().__init__({
            "inp": In(8 * cfg.inp_elem_bytes), "wgt": In(8 * cfg.wgt_elem_bytes),
            "acc": In(8 * cfg.acc_elem_bytes), "out": Out(8 * cfg.acc_elem_bytes),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.cfg
        B, BI, BO = cfg.BATCH, cfg.BLOCK_IN, cfg.BLOCK_OUT
        inp, wgt = Signal.like(self.inp, name="inp_q"), Signal.like(self.wgt, name="wgt_q")
        m.d.sync += [inp.eq(self.inp), wgt.eq(self.wgt)]
        outs = []
        for b in range(B):
            for o in range(BO):
                prods = []
                for k in range(BI):
                    x = inp.word_select(b * BI + k, 8).as_signed()
                    w = wgt.word_select(o * BI + k, 8).as_signed()
                    p = Signal(signed(16), name=f"prod_{b}_{o}_{k}")
                    m.d.sync += p.eq(x * w)
                    prods.append(p)
                total = Signal(signed(32), name=f"sum_{b}_{o}")
                m.d.sync += total.eq(_tree(prods))
                acc = self.acc.word_select(b * BO + o, 32).as_signed()
                outs.append((acc + total)[:32])
        m.d.comb += self.out.eq(Cat(*outs))
        return m
