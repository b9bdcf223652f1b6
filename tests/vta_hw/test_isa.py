"""ISA encodings: round trips on every preset, DESIGN.md bit positions, overflow messages."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vta_hw import isa
from vta_hw.config import load_config, preset_names
from vta_hw.isa import (Alu, AluOp, DecodeError, Finish, Gemm, Load, MemId, Opcode, Store, Uop,
                        decode, decode_uop, encode, encode_uop, layout, uop_layout)

PRESETS = preset_names()
KIND_OF = {Opcode.LOAD: Load, Opcode.STORE: Store, Opcode.GEMM: Gemm, Opcode.ALU: Alu,
           Opcode.FINISH: Finish}


def field_strategy(f):
    if f.name == "mem":
        return st.sampled_from(list(MemId))
    if f.name == "alu_op":
        return st.sampled_from(list(AluOp))
    if f.name in ("pop_prev", "pop_next", "push_prev", "push_next", "reset", "use_imm"):
        return st.booleans()
    if f.name == "imm":
        return st.integers(-(1 << (f.width - 1)), (1 << (f.width - 1)) - 1)
    return st.integers(0, (1 << f.width) - 1)


@st.composite
def insns(draw):
    cfg = load_config(draw(st.sampled_from(PRESETS)))
    op = draw(st.sampled_from(list(Opcode)))
    kw = {f.name: draw(field_strategy(f)) for f in layout(op, cfg) if f.name != "opcode"}
    return cfg, KIND_OF[op](**kw)


@st.composite
def uops(draw):
    cfg = load_config(draw(st.sampled_from(PRESETS)))
    return cfg, Uop(**{f.name: draw(field_strategy(f)) for f in uop_layout(cfg)})


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(insns())
def test_insn_round_trip(case):
    cfg, insn = case
    word = encode(insn, cfg)
    assert 0 <= word < 1 << 128
    assert decode(word, cfg) == insn
    assert isa.insn_from_bytes(isa.insn_to_bytes(word)) == word


@settings(max_examples=200, deadline=None)
@given(uops())
def test_uop_round_trip(case):
    cfg, uop = case
    word = encode_uop(uop, cfg)
    assert 0 <= word < 1 << 32
    assert decode_uop(word, cfg) == uop


@pytest.mark.parametrize("preset", PRESETS)
def test_layouts_fit_and_do_not_overlap(preset):
    cfg = load_config(preset)
    for op in Opcode:
        bits = set()
        for f in layout(op, cfg):
            span = set(range(f.lsb, f.msb + 1))
            assert not bits & span, f"{op.name}.{f.name} overlaps"
            bits |= span
            assert f.msb < 128 and (f.lsb >= 64 or f.msb < 64), f"{f.name} straddles the words"
    assert max(f.msb for f in uop_layout(cfg)) < 32


# DESIGN.md "Encoding on the default preset": name -> (msb, lsb)
DESIGN_BITS = {
    Opcode.LOAD: {"opcode": (2, 0), "pop_prev": (3, 3), "pop_next": (4, 4), "push_prev": (5, 5),
                  "push_next": (6, 6), "mem": (9, 7), "sram_base": (25, 10),
                  "dram_base": (57, 26), "y_size": (79, 64), "x_size": (95, 80),
                  "x_stride": (111, 96), "y_pad_0": (115, 112), "y_pad_1": (119, 116),
                  "x_pad_0": (123, 120), "x_pad_1": (127, 124)},
    Opcode.GEMM: {"reset": (7, 7), "uop_bgn": (20, 8), "uop_end": (34, 21),
                  "iter_out": (48, 35), "iter_in": (62, 49), "dst_factor_out": (74, 64),
                  "dst_factor_in": (85, 75), "src_factor_out": (96, 86),
                  "src_factor_in": (107, 97), "wgt_factor_out": (117, 108),
                  "wgt_factor_in": (127, 118)},
    Opcode.ALU: {"reset": (7, 7), "uop_bgn": (20, 8), "uop_end": (34, 21), "iter_out": (48, 35),
                 "iter_in": (62, 49), "dst_factor_out": (74, 64), "dst_factor_in": (85, 75),
                 "src_factor_out": (96, 86), "src_factor_in": (107, 97), "alu_op": (110, 108),
                 "use_imm": (111, 111), "imm": (127, 112)},
}


@pytest.mark.parametrize("op", list(DESIGN_BITS))
def test_default_layout_matches_design_md(op):
    cfg = load_config()
    got = {f.name: (f.msb, f.lsb) for f in layout(op, cfg)}
    for name, bits in DESIGN_BITS[op].items():
        assert got[name] == bits, name
    assert layout(Opcode.STORE, cfg) == layout(Opcode.LOAD, cfg)
    assert {f.name: (f.msb, f.lsb) for f in uop_layout(cfg)} == {
        "dst": (10, 0), "src": (21, 11), "wgt": (31, 22)}


def test_pinned_words_on_default_preset():
    cfg = load_config()
    assert encode(Gemm(uop_bgn=1), cfg) == 2 | 1 << 8
    assert encode(Gemm(uop_bgn=(1 << 13) - 1), cfg) == 2 | ((1 << 13) - 1) << 8
    assert encode(Alu(imm=-1), cfg) == 4 | 2 << 108 | 0xFFFF << 112
    assert encode(Alu(imm=-32768, use_imm=True, alu_op=AluOp.SHR), cfg) == \
        4 | 3 << 108 | 1 << 111 | 0x8000 << 112
    assert encode(Load(mem=MemId.ACC, pop_next=True, x_pad_1=15), cfg) == \
        0 | 1 << 4 | 3 << 7 | 15 << 124
    assert encode(Finish(push_next=True), cfg) == 3 | 1 << 6
    assert encode_uop(Uop(dst=1, src=2, wgt=3), cfg) == 1 | 2 << 11 | 3 << 22
    assert isa.insn_to_bytes(1 << 120) == bytes(15) + b"\x01"


@pytest.mark.parametrize("record,message", [
    (Load(sram_base=1 << 16), "Load.sram_base is a 16-bit field (0..65535); 65536 does not fit"),
    (Store(x_pad_0=16), "Store.x_pad_0 is a 4-bit field (0..15); 16 does not fit"),
    (Gemm(uop_bgn=8192), "Gemm.uop_bgn is a 13-bit field (0..8191); 8192 does not fit"),
    (Gemm(wgt_factor_in=-1), "Gemm.wgt_factor_in is a 10-bit field (0..1023); -1 does not fit"),
    (Alu(imm=32768), "Alu.imm is a signed 16-bit field (-32768..32767); 32768 does not fit"),
    (Alu(imm=-32769), "Alu.imm is a signed 16-bit field (-32768..32767); -32769 does not fit"),
])
def test_field_overflow_message(record, message):
    with pytest.raises(ValueError) as info:
        encode(record, load_config())
    assert str(info.value) == message


def test_uop_overflow_depends_on_preset():
    small = load_config("1x4_i8w8a32_10_10_10_11_bus32")
    with pytest.raises(ValueError, match=r"Uop.dst is a 7-bit field \(0..127\); 128 does not fit"):
        encode_uop(Uop(dst=128), small)
    assert decode_uop(encode_uop(Uop(dst=128), load_config()), load_config()) == Uop(dst=128)


def test_decode_errors():
    cfg = load_config()
    with pytest.raises(DecodeError, match=r"unknown opcode 5 \(known: LOAD=0, STORE=1, GEMM=2, "
                                          r"FINISH=3, ALU=4\)"):
        decode(5, cfg)
    with pytest.raises(DecodeError, match="Load: unknown mem 6"):
        decode(6 << 7, cfg)
    with pytest.raises(DecodeError, match="Alu: unknown alu_op 7"):
        decode(4 | 7 << 108, cfg)
    with pytest.raises(DecodeError, match="an instruction is 128 bits"):
        decode(1 << 128, cfg)
    with pytest.raises(DecodeError, match="a uop is 32 bits"):
        decode_uop(-1, cfg)


def test_describe():
    line = isa.describe(Load(mem=MemId.INP, dram_base=64, y_size=1, x_size=4, x_stride=4,
                             push_next=True))
    assert line == "LOAD   deps=----/--Pn INP  sram=0 dram=64 y=1 x=4 stride=4 pad=y0,0/x0,0"
    assert "SHR  imm=-3" in isa.describe(Alu(alu_op=AluOp.SHR, use_imm=True, imm=-3))
    assert isa.describe(Finish(pop_next=True)) == "FINISH deps=--pn/----"
