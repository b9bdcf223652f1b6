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

On an iCE40 UltraPlus (an Amaranth ``SiliconBluePlatform`` with an ``iCE40UP``
device) the products are placed by hand, as the UP5K has only 8 DSP blocks:
``ICE40_GEMM_DSPS`` ``SB_MAC16`` in their 8x8 mode (``MODE_8x8``, both operands
signed, product registers on: one block holds two independent signed 8x8
products, Lattice TN1295 "DSP Function Usage Guide for iCE40 Devices") take
two products each (a 1x1 array's single product takes one block, its other
half multiplying zeros), the rest are Booth multipliers in logic (``soft_mul8``,
written without ``*`` so Yosys does not put them on DSPs). Everywhere else each
product is ``x * w`` and the tools choose. The product registers of the DSP
blocks have no reset (the Amaranth ones reset to 0); nothing reads a product
before the cycle after its operands were sampled, so this is not observable.
The DSP configuration is checked against Yosys's simulation model of
``SB_MAC16`` (``tests/fpga/test_ice40_gemm.py``), not yet on a board.
"""
from __future__ import annotations

from amaranth import C, Cat, ClockSignal, Instance, Module, Mux, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from vta_hw.config import VTAConfig


#: SB_MAC16 blocks the GEMM takes on an iCE40 UltraPlus (two int8 products each): half of
#: the UP5K's 8, the other half left for the ALU's MUL (one 16x16 multiplier per lane).
ICE40_GEMM_DSPS = 4


def _ice40_up(platform) -> bool:
    """Whether ``platform`` is an iCE40 UltraPlus (SB_MAC16 DSP blocks)."""
    from amaranth.vendor import SiliconBluePlatform
    return (isinstance(platform, SiliconBluePlatform)
            and str(getattr(platform, "device", "")).startswith("iCE40UP"))


def soft_mul8(x, w):
    """Signed 8x8 -> 16-bit product in logic: radix-4 Booth, written without ``*`` so that
    Yosys does not put it on a DSP block (136 iCE40 LUTs against 177 for Yosys's own
    soft multiplier). Weight digits ``d_j = -2 w[2j+1] + w[2j] + w[2j-1]`` in -2..2
    select ``d_j * x``; a negative one is added as its ones' complement plus one."""
    x = x.as_signed()
    terms, ones = [], []
    for j in range(4):
        b0 = w[2 * j - 1] if j else 0
        b1, b2 = w[2 * j], w[2 * j + 1]
        one = b1 ^ b0
        two = (b2 & ~b1 & ~b0) | (~b2 & b1 & b0)
        neg = b2 & ~(b1 & b0)
        mag = (Mux(one, x, 0) | Mux(two, x << 1, 0))[:9]
        terms.append((Cat(mag, mag[8]) ^ neg.replicate(10)).as_signed() << (2 * j))
        ones.append(neg << (2 * j))
    return (_tree(terms) + _tree(ones))[:16].as_signed()


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
        outs, mults = [], []
        for b in range(B):
            for o in range(BO):
                prods = []
                for k in range(BI):
                    x = inp.word_select(b * BI + k, 8).as_signed()
                    w = wgt.word_select(o * BI + k, 8).as_signed()
                    p = Signal(signed(16), name=f"prod_{b}_{o}_{k}")
                    mults.append((x, w, p))
                    prods.append(p)
                total = Signal(signed(32), name=f"sum_{b}_{o}")
                m.d.sync += total.eq(_tree(prods))
                acc = self.acc.word_select(b * BO + o, 32).as_signed()
                outs.append((acc + total)[:32])
        m.d.comb += self.out.eq(Cat(*outs))
        if not _ice40_up(platform):
            m.d.sync += [p.eq(x * w) for x, w, p in mults]
            return m
        n_dsp = min(-(-len(mults) // 2), ICE40_GEMM_DSPS)
        unused = (C(0, 8), C(0, 8), None)  # the top half of a single product's block
        for d in range(n_dsp):
            x0, w0, p0 = mults[2 * d]
            x1, w1, p1 = mults[2 * d + 1] if 2 * d + 1 < len(mults) else unused
            o = Signal(32, name=f"dsp{d}_o")
            # O[15:0] = A[7:0] * B[7:0] (bottom), O[31:16] = A[15:8] * B[15:8] (top)
            m.submodules[f"dsp{d}"] = Instance(
                "SB_MAC16",
                p_MODE_8x8=1, p_A_SIGNED=1, p_B_SIGNED=1,
                p_TOP_8x8_MULT_REG=1, p_BOT_8x8_MULT_REG=1,
                p_TOPOUTPUT_SELECT=2, p_BOTOUTPUT_SELECT=2,
                i_CLK=ClockSignal(), i_CE=1, i_A=Cat(x0, x1), i_B=Cat(w0, w1), i_C=0, i_D=0,
                i_AHOLD=0, i_BHOLD=0, i_CHOLD=0, i_DHOLD=0, i_IRSTTOP=0, i_IRSTBOT=0,
                i_ORSTTOP=0, i_ORSTBOT=0, i_OLOADTOP=0, i_OLOADBOT=0, i_ADDSUBTOP=0,
                i_ADDSUBBOT=0, i_OHOLDTOP=0, i_OHOLDBOT=0, i_CI=0, i_ACCUMCI=0,
                i_SIGNEXTIN=0, o_O=o)
            m.d.comb += p0.eq(o[:16])
            if p1 is not None:
                m.d.comb += p1.eq(o[16:])
        m.d.sync += [p.eq(soft_mul8(x, w)) for x, w, p in mults[2 * n_dsp:]]
        return m
