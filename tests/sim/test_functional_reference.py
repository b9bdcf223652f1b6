"""The vectorized ``Machine`` equals a naive, element-by-element reading of the contract.

Random SRAM states and random GEMM/ALU/LOAD instructions (small indices, so
dst/src overlaps and repeated dsts are common) on configs with BATCH 1 and 2.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.errors import SramIndexError
from sim.machine import Machine
from vta_hw.config import VTAConfig, load_config
from vta_hw.isa import Alu, AluOp, Gemm, Load, MemId, Uop, encode_uop, uop_layout

CONFIGS = [load_config("1x4_i8w8a32_10_10_10_11_bus32"),
           VTAConfig(LOG_BATCH=1, LOG_BLOCK=2, LOG_UOP_BUFF_SIZE=10, LOG_INP_BUFF_SIZE=10,
                     LOG_WGT_BUFF_SIZE=10, LOG_ACC_BUFF_SIZE=11)]


def wrap32(x: int) -> int:
    return (x + 2**31) % 2**32 - 2**31


def to8(x: int) -> int:
    return (x + 128) % 256 - 128


def ref_alu(op: AluOp, a: int, b: int) -> int:
    if op == AluOp.MIN:
        return min(a, b)
    if op == AluOp.MAX:
        return max(a, b)
    if op == AluOp.ADD:
        return wrap32(a + b)
    if op == AluOp.SHR:
        return a >> min(b, 31) if b >= 0 else wrap32(a << min(-b, 31))
    return wrap32(a * b)


def ref_requant(a: int, b: int, imm: int) -> int:
    """REQUANT, from the ISA text: ``clip((a + b) >> imm[4:0], imm[5] ? 0 : -128, 127)``."""
    lo = 0 if imm >> 5 & 1 else -128
    return max(lo, min(127, wrap32(a + b) >> (imm & 31)))


def reference(m: Machine, insn) -> tuple[list, list]:
    """acc and out after ``insn``, as nested Python lists, by straight loops."""
    acc, out = m.acc.tolist(), m.out.tolist()
    uops = m.uop.tolist()
    for o in range(insn.iter_out):
        for i in range(insn.iter_in):
            for u in range(insn.uop_bgn, insn.uop_end):
                du, su, wu = uops[u]
                d = du + o * insn.dst_factor_out + i * insn.dst_factor_in
                s = su + o * insn.src_factor_out + i * insn.src_factor_in
                for bt in range(m.cfg.BATCH):
                    for lane in range(m.cfg.BLOCK_OUT):
                        if insn.reset:
                            v = 0
                        elif isinstance(insn, Gemm):
                            w = wu + o * insn.wgt_factor_out + i * insn.wgt_factor_in
                            dot = sum(int(m.inp[s, bt, k]) * int(m.wgt[w, lane, k])
                                      for k in range(m.cfg.BLOCK_IN))
                            v = wrap32(acc[d][bt][lane] + dot)
                        else:
                            b = insn.imm if insn.use_imm else acc[s][bt][lane]
                            if insn.alu_op == AluOp.REQUANT:   # to OUT only; ACC <- 0
                                out[d][bt][lane] = ref_requant(acc[d][bt][lane], b, insn.imm)
                                acc[d][bt][lane] = 0
                                continue
                            v = ref_alu(insn.alu_op, acc[d][bt][lane], b)
                        acc[d][bt][lane] = v
                        out[d][bt][lane] = to8(v)
    return acc, out


@st.composite
def machines(draw):
    cfg = draw(st.sampled_from(CONFIGS))
    m = Machine(cfg)
    r = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    m.inp[:] = r.integers(-128, 128, m.inp.shape)
    m.wgt[:] = r.integers(-128, 128, m.wgt.shape)
    m.acc[:] = np.where(r.random(m.acc.shape) < 0.2,
                        r.integers(-2**31, 2**31, m.acc.shape), r.integers(-40, 40, m.acc.shape))
    m.out[:] = r.integers(-128, 128, m.out.shape)
    m.uop[:8] = r.integers(0, 8, (8, 3))
    return m


@st.composite
def loops(draw):
    bgn = draw(st.integers(0, 8))
    small = st.integers(0, 3)
    return dict(uop_bgn=bgn, uop_end=draw(st.integers(bgn, 8)), iter_out=draw(small),
                iter_in=draw(small), dst_factor_out=draw(small), dst_factor_in=draw(small),
                src_factor_out=draw(small), src_factor_in=draw(small), reset=draw(st.booleans()))


imms = st.one_of(st.integers(-40, 40), st.integers(-2**15, 2**15 - 1))


@settings(max_examples=300, deadline=None)
@given(machines(), loops(), st.sampled_from(list(AluOp)), st.booleans(), imms)
def test_alu_matches_reference(m, kw, op, use_imm, imm):
    insn = Alu(alu_op=op, use_imm=use_imm, imm=imm, **kw)
    want_acc, want_out = reference(m, insn)
    m.execute(insn, 0, np.zeros(64, np.uint8))
    assert m.acc.tolist() == want_acc and m.out.tolist() == want_out


@settings(max_examples=120, deadline=None)
@given(machines(), loops(), st.integers(0, 3), st.integers(0, 3))
def test_gemm_matches_reference(m, kw, wfo, wfi):
    insn = Gemm(wgt_factor_out=wfo, wgt_factor_in=wfi, **kw)
    want_acc, want_out = reference(m, insn)
    m.execute(insn, 0, np.zeros(64, np.uint8))
    assert m.acc.tolist() == want_acc and m.out.tolist() == want_out


@settings(max_examples=120, deadline=None)
@given(st.sampled_from(CONFIGS), st.sampled_from([MemId.INP, MemId.WGT, MemId.ACC, MemId.UOP]),
       st.lists(st.integers(0, 3), min_size=4, max_size=4), st.integers(0, 3),
       st.integers(1, 3), st.integers(0, 4), st.integers(0, 20), st.integers(0, 5),
       st.integers(0, 2**32 - 1))
def test_load_matches_reference(cfg, mem, pads, y, x, extra_stride, dram_base, sram_base, seed):
    if mem == MemId.UOP:
        pads = [0, 0, 0, 0]
    name = mem.name.lower()
    eb = cfg.elem_bytes(name)
    r = np.random.default_rng(seed)
    dram = r.integers(0, 256, (dram_base + 3 * (x + 4) + 8) * eb, dtype=np.uint8)
    if mem == MemId.UOP:  # valid uop words for this config
        words = [encode_uop(Uop(*r.integers(0, 8, 3).tolist()), cfg)
                 for _ in range(dram.size // 4)]
        dram = np.frombuffer(b"".join(w.to_bytes(4, "little") for w in words), np.uint8).copy()
    m = Machine(cfg)
    sram = getattr(m, name)
    sram[:] = 1  # padding must overwrite this with zeros
    before = sram.copy()
    insn = Load(mem=mem, sram_base=sram_base, dram_base=dram_base, y_size=y, x_size=x,
                x_stride=x + extra_stride, y_pad_0=pads[0], y_pad_1=pads[1], x_pad_0=pads[2],
                x_pad_1=pads[3])
    block = (pads[0] + y + pads[1]) * (pads[2] + x + pads[3])
    if x and sram_base + block > sram.shape[0]:
        with pytest.raises(SramIndexError):
            m.execute(insn, 0, dram)
        assert np.array_equal(sram, before)
        return
    m.execute(insn, 0, dram)
    want = before.copy()
    if x:
        width = pads[2] + x + pads[3]
        for row in range(pads[0] + y + pads[1]):
            for col in range(width):
                dst = sram_base + row * width + col
                yy, xx = row - pads[0], col - pads[2]
                if 0 <= yy < y and 0 <= xx < x:
                    a = (dram_base + yy * insn.x_stride + xx) * eb
                    raw = dram[a:a + eb]
                    if mem == MemId.UOP:
                        word = int.from_bytes(raw.tobytes(), "little")
                        want[dst] = [(word >> f.lsb) & ((1 << f.width) - 1)
                                     for f in uop_layout(cfg)]
                    else:
                        dt = "<i4" if mem == MemId.ACC else np.int8
                        want[dst] = raw.view(dt).reshape(want.shape[1:])
                else:
                    want[dst] = 0
    assert np.array_equal(sram, want)
