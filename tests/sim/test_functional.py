"""The golden model's semantics, instruction by instruction, on hand-computed cases."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import Builder

from sim.functional import run
from vta_hw.alu import alu_op
from vta_hw.config import load_config, preset_names
from vta_hw.isa import Alu, AluOp, Finish, Gemm, Load, MemId, Store, Uop

INP, WGT, UOP, ACC, OUT = MemId.INP, MemId.WGT, MemId.UOP, MemId.ACC, MemId.OUT


def rows(n, cfg, lo=0):
    """``n`` INP/OUT-shaped elements holding lo, lo+1, ... (int8)."""
    values = np.arange(n * cfg.BATCH * cfg.BLOCK) + lo
    return values.astype(np.int8).reshape(n, cfg.BATCH, cfg.BLOCK)


# ---- LOAD / STORE -------------------------------------------------------------------
def test_strided_load_then_store_copies_rows(builder, small_cfg):
    src = rows(8, small_cfg, 1)
    builder.buf("a", src)
    builder.buf("b", shape=(6, 1, 4), kind="output")
    p = builder.program([
        Load(mem=INP, sram_base=3, dram_base=builder.at("a", "inp") + 1, y_size=2, x_size=2,
             x_stride=4, push_next=True),
        Alu(pop_prev=True, uop_bgn=0, uop_end=0),  # nothing to run: only passes the token
        Finish()])
    res = run(p)
    inp = res.machine.inp
    assert np.array_equal(inp[3:7], src[[1, 2, 5, 6]])
    assert not inp[:3].any() and not inp[7:].any()

    b = Builder(small_cfg)
    b.buf("a", src)
    b.buf("o", shape=(7, 1, 4), kind="output")
    b.buf("w", np.eye(4, dtype=np.int8)[None])  # identity weights: out = inp
    ub = b.uops([Uop(0, 0, 0)])
    p = b.program([
        Load(mem=INP, dram_base=b.at("a", "inp"), y_size=1, x_size=4, x_stride=4),
        Load(mem=WGT, dram_base=b.at("w", "wgt"), y_size=1, x_size=1, x_stride=1, push_next=True),
        Load(mem=UOP, dram_base=ub, y_size=1, x_size=1, x_stride=1),
        Gemm(pop_prev=True, uop_bgn=0, uop_end=1, iter_out=4, iter_in=1, dst_factor_out=1,
             src_factor_out=1, push_next=True),
        # out[0..3] -> DRAM elements 0, 1, 3, 4 (y=2, x=2, stride 3)
        Store(pop_prev=True, push_prev=True, dram_base=b.at("o", "out"), y_size=2, x_size=2,
              x_stride=3),
        Finish(pop_next=True)])
    got = p.read(run(p).dram, "o")
    assert np.array_equal(got[[0, 1, 3, 4]], src[:4])
    assert not got[[2, 5, 6]].any()


@pytest.mark.parametrize("pads", [(1, 0, 0, 0), (0, 2, 0, 0), (0, 0, 1, 0), (0, 0, 0, 2),
                                  (1, 1, 2, 1)])
def test_load_zero_pads_each_side(builder, small_cfg, pads):
    """Pad slots are written with zeros (over earlier data), data lands inside the block."""
    yp0, yp1, xp0, xp1 = pads
    src = rows(6, small_cfg, 1)
    builder.buf("a", src)
    base = builder.at("a", "inp")
    p = builder.program([
        Load(mem=INP, sram_base=0, dram_base=base, y_size=1, x_size=6, x_stride=6),
        Load(mem=INP, sram_base=6, dram_base=base, y_size=1, x_size=6, x_stride=6),
        Load(mem=INP, sram_base=0, dram_base=base, y_size=2, x_size=2, x_stride=3,
             y_pad_0=yp0, y_pad_1=yp1, x_pad_0=xp0, x_pad_1=xp1),
        Finish()])
    inp = run(p).machine.inp
    width, nrows = xp0 + 2 + xp1, yp0 + 2 + yp1
    expect = np.zeros((nrows, width, 1, 4), np.int8)
    expect[yp0, xp0:xp0 + 2] = src[0:2]
    expect[yp0 + 1, xp0:xp0 + 2] = src[3:5]
    assert np.array_equal(inp[:nrows * width], expect.reshape(-1, 1, 4))
    # beyond the block: the earlier full loads survive
    n = nrows * width
    assert np.array_equal(inp[n:12], np.concatenate([src, src])[n:12])


def test_acc_load_is_int32_little_endian_and_leaves_out(builder):
    data = np.array([[[1, -1, 2**31 - 1, -2**31]], [[300, -129, 7, 0]]], np.int32)
    builder.buf("acc", data)
    p = builder.program([Load(mem=ACC, sram_base=5, dram_base=builder.at("acc", "acc"),
                              y_size=1, x_size=2, x_stride=2, x_pad_0=1), Finish()])
    m = run(p).machine
    assert np.array_equal(m.acc[6:8], data)
    assert not m.acc[5].any()
    assert not m.out.any()


def test_uop_load_decodes_fields(small_cfg):
    b = Builder(small_cfg)
    uops = [Uop(1, 2, 3), Uop(127, 255, 63), Uop(0, 9, 0)]
    ub = b.uops(uops)
    p = b.program([Load(mem=UOP, sram_base=10, dram_base=ub + 1, y_size=1, x_size=2,
                        x_stride=2), Finish()])
    m = run(p).machine
    assert m.uop[10:12].tolist() == [[127, 255, 63], [0, 9, 0]]
    assert not m.uop[:10].any() and not m.uop[12:].any()


def test_x_size_zero_is_a_token_only_noop(builder):
    builder.buf("a", rows(4, builder.cfg, 5))
    p = builder.program([
        Load(mem=INP, dram_base=builder.at("a", "inp"), y_size=3, x_size=0, x_stride=0,
             y_pad_0=2, x_pad_1=3, push_next=True),
        Load(mem=ACC, sram_base=9000 % 16, y_size=2, x_size=0, y_pad_1=1, pop_prev=True,
             push_next=True),
        Store(sram_base=0, dram_base=10**6, y_size=4, x_size=0, pop_prev=True),
        Finish()])
    res = run(p)
    assert not res.machine.inp.any() and not res.machine.acc.any()
    assert res.counters.noop_memops == 3
    assert res.counters.bytes_loaded == {} and res.counters.bytes_stored == {}
    assert np.array_equal(res.dram, p.dram_image())


# ---- GEMM -----------------------------------------------------------------------------
def gemm_setup(cfg, inp, wgt, uops, insns_mid, acc=None):
    b = Builder(cfg)
    b.buf("inp", inp)
    b.buf("wgt", wgt)
    if acc is not None:
        b.buf("acc", acc)
    ub = b.uops(uops)
    head = [Load(mem=INP, dram_base=b.at("inp", "inp"), y_size=1, x_size=len(inp),
                 x_stride=len(inp)),
            Load(mem=WGT, dram_base=b.at("wgt", "wgt"), y_size=1, x_size=len(wgt),
                 x_stride=len(wgt), push_next=True),
            Load(mem=UOP, dram_base=ub, y_size=1, x_size=len(uops), x_stride=len(uops),
                 pop_prev=True)]
    if acc is not None:
        head.append(Load(mem=ACC, dram_base=b.at("acc", "acc"), y_size=1, x_size=len(acc),
                         x_stride=len(acc)))
    return b.program(head + list(insns_mid) + [Finish()])


def test_gemm_hand_computed(small_cfg):
    inp = np.array([[[1, 2, 3, 4]], [[-1, 0, 1, -2]]], np.int8)
    wgt = np.array([[[1, 0, 0, 0], [0, 1, 0, 0], [1, 1, 1, 1], [2, -1, 0, 3]]], np.int8)
    # uop 0: acc[0] += inp[0] . wgt[0]^T ; uop 1: acc[1] += inp[1] . wgt[0]^T, twice (iter_in=2,
    # factors 0) -> doubled
    p = gemm_setup(small_cfg, inp, wgt, [Uop(0, 0, 0), Uop(1, 1, 0)],
                   [Gemm(uop_bgn=0, uop_end=1, iter_out=1, iter_in=1),
                    Gemm(uop_bgn=1, uop_end=2, iter_out=1, iter_in=2)])
    m = run(p).machine
    assert m.acc[0, 0].tolist() == [1, 2, 10, 2 - 2 + 0 + 12]
    assert m.acc[1, 0].tolist() == [-2, 0, -4, 2 * (-2 - 6)]
    assert np.array_equal(m.out[:2], m.acc[:2].astype(np.int8))


def test_gemm_reset_zeroes_acc_and_out(small_cfg):
    acc = np.full((3, 1, 4), 77, np.int32)
    p = gemm_setup(small_cfg, np.ones((1, 1, 4), np.int8), np.ones((1, 4, 4), np.int8),
                   [Uop(1, 0, 0)],
                   [Gemm(uop_bgn=0, uop_end=1, iter_out=1, iter_in=1),  # out[1] = 81
                    Gemm(reset=True, uop_bgn=0, uop_end=1, iter_out=2, iter_in=1,
                         dst_factor_out=1)], acc=acc)
    m = run(p).machine
    assert m.acc[0].tolist() == [[77] * 4] and not m.acc[1:3].any() and not m.out[1:3].any()


def test_gemm_wraps_int32_and_truncates_out(small_cfg):
    acc = np.array([[[2**31 - 1, -2**31, 0, 0]]], np.int32)
    inp = np.array([[[1, 0, 0, 0]]], np.int8)
    wgt = np.array([[[1, 0, 0, 0], [-1, 0, 0, 0], [127, 0, 0, 0], [-128, 0, 0, 0]]], np.int8)
    p = gemm_setup(small_cfg, inp, wgt, [Uop(0, 0, 0)],
                   [Gemm(uop_bgn=0, uop_end=1, iter_out=3, iter_in=1)], acc=acc)
    m = run(p).machine
    assert m.acc[0, 0].tolist() == [-2**31 + 2, 2**31 - 3, 381, -384]
    assert m.out[0, 0].tolist() == [2, -3, 381 - 256, -384 + 256]


def reference_gemm(inp, wgt, uops, kw):
    """Straight loops over the contract: acc[dst] += inp[src] @ wgt[wgt].T (int64 then wrap)."""
    acc = {}
    for o in range(kw["iter_out"]):
        for i in range(kw["iter_in"]):
            for u in uops:
                d = u.dst + o * kw["dst_factor_out"] + i * kw["dst_factor_in"]
                s = u.src + o * kw["src_factor_out"] + i * kw["src_factor_in"]
                w = u.wgt + o * kw["wgt_factor_out"] + i * kw["wgt_factor_in"]
                prod = inp[s].astype(np.int64) @ wgt[w].astype(np.int64).T
                acc[d] = acc.get(d, 0) + prod
    return {d: v.astype(np.int32) for d, v in acc.items()}


@pytest.mark.parametrize("preset", preset_names())
def test_gemm_tiles_match_numpy_on_every_preset(preset):
    cfg = load_config(preset)
    r = np.random.default_rng(7)
    inp = r.integers(-128, 128, (6, cfg.BATCH, cfg.BLOCK_IN), dtype=np.int8)
    wgt = r.integers(-128, 128, (4, cfg.BLOCK_OUT, cfg.BLOCK_IN), dtype=np.int8)
    uops = [Uop(0, 0, 0), Uop(1, 2, 1), Uop(0, 1, 3)]
    kw = dict(iter_out=2, iter_in=2, dst_factor_out=2, dst_factor_in=1, src_factor_out=2,
              src_factor_in=1, wgt_factor_out=0, wgt_factor_in=0)
    b = Builder(cfg)
    b.buf("inp", inp)
    b.buf("wgt", wgt)
    b.buf("out", shape=(5, cfg.BATCH, cfg.BLOCK_OUT), kind="output")
    ub = b.uops(uops)
    p = b.program([
        Load(mem=INP, dram_base=b.at("inp", "inp"), y_size=2, x_size=3, x_stride=3),
        Load(mem=WGT, dram_base=b.at("wgt", "wgt"), y_size=1, x_size=4, x_stride=4,
             push_next=True),
        Load(mem=UOP, dram_base=ub, y_size=1, x_size=3, x_stride=3, pop_prev=True),
        Gemm(uop_bgn=0, uop_end=3, push_next=True, **kw),
        Store(pop_prev=True, push_prev=True, dram_base=b.at("out", "out"), y_size=1, x_size=5,
              x_stride=5),
        Finish(pop_next=True)])
    res = run(p)
    want = reference_gemm(inp, wgt, uops, kw)
    assert sorted(want) == [0, 1, 2, 3, 4]
    for d, v in want.items():
        assert np.array_equal(res.machine.acc[d], v)
    assert np.array_equal(p.read(res.dram, "out"),
                          np.stack([want[d] for d in range(5)]).astype(np.int8))
    assert res.counters.gemm_uops == 12


# ---- ALU ------------------------------------------------------------------------------
ALU_CASES = [
    # op, a, b, expected
    (AluOp.MIN, [5, -5, 0, 100], -3, [-3, -5, -3, -3]),
    (AluOp.MAX, [5, -5, 0, -100], -3, [5, -3, 0, -3]),
    (AluOp.ADD, [1, -1, 2**31 - 1, -2**31], -2, [-1, -3, 2**31 - 3, 2**31 - 2]),
    (AluOp.ADD, [2**31 - 1, 0, 0, 0], 1, [-2**31, 1, 1, 1]),
    (AluOp.SHR, [64, -64, -1, 7], 3, [8, -8, -1, 0]),
    (AluOp.SHR, [1, -1, 3, 2**30], -2, [4, -4, 12, 0]),
    (AluOp.SHR, [-2**31, 2**31 - 1, 5, -5], 40, [-1, 0, 0, -1]),
    (AluOp.SHR, [1, 3, -1, 2], -40, [-2**31, -2**31, -2**31, 0]),
    (AluOp.MUL, [3, -3, 2**16, 46341], -7, [-21, 21, -458752, -324387]),
    (AluOp.MUL, [2**16, 46341, -2**31, 1], 2**15 - 1, [2147418112, 1518455547, -2**31, 32767]),
    (AluOp.MUL, [46341, 2**16, -1, 0], 46341, [-2147479015, -1257963520, -46341, 0]),
]


@pytest.mark.parametrize("op,a,b,want", ALU_CASES)
def test_alu_op_table(op, a, b, want):
    got = alu_op(op, np.array(a, np.int64), np.int64(b))
    assert got.dtype == np.int32 and got.tolist() == want


def alu_program(cfg, acc, uops, insns):
    b = Builder(cfg)
    b.buf("acc", acc)
    ub = b.uops(uops)
    return b.program([Load(mem=ACC, dram_base=b.at("acc", "acc"), y_size=1, x_size=len(acc),
                           x_stride=len(acc)),
                      Load(mem=UOP, dram_base=ub, y_size=1, x_size=len(uops),
                           x_stride=len(uops))] + list(insns) + [Finish()])


@pytest.mark.parametrize("op,a,b,want", [c for c in ALU_CASES if -2**15 <= c[2] < 2**15])
def test_alu_imm_form_on_the_machine(small_cfg, op, a, b, want):
    acc = np.array([[a]], np.int32)
    p = alu_program(small_cfg, acc, [Uop(0, 0, 0)],
                    [Alu(alu_op=op, use_imm=True, imm=b, uop_bgn=0, uop_end=1, iter_out=1,
                         iter_in=1)])
    m = run(p).machine
    assert m.acc[0, 0].tolist() == want
    assert m.out[0, 0].tolist() == np.array(want, np.int32).astype(np.int8).tolist()


@pytest.mark.parametrize("op,a,b,want", ALU_CASES)
def test_alu_src_form_reads_acc_elementwise(small_cfg, op, a, b, want):
    acc = np.array([[a], [[b] * 4]], np.int64).astype(np.int32)
    p = alu_program(small_cfg, acc, [Uop(0, 1, 0)],
                    [Alu(alu_op=op, uop_bgn=0, uop_end=1, iter_out=1, iter_in=1)])
    assert run(p).machine.acc[0, 0].tolist() == want


def test_alu_negative_immediate_roundtrips_the_encoding(small_cfg):
    acc = np.array([[[10, 20, 30, 40]]], np.int32)
    p = alu_program(small_cfg, acc, [Uop(0, 0, 0)],
                    [Alu(alu_op=AluOp.ADD, use_imm=True, imm=-32768, uop_bgn=0, uop_end=1,
                         iter_out=1, iter_in=1)])
    assert run(p).machine.acc[0, 0].tolist() == [10 - 32768, 20 - 32768, 30 - 32768, 40 - 32768]


def test_alu_iterations_are_sequential(small_cfg):
    """A repeated dst composes, and a src written by an earlier iteration is seen updated."""
    acc = np.array([[[1] * 4], [[2] * 4], [[3] * 4], [[0] * 4]], np.int32)
    p = alu_program(small_cfg, acc, [Uop(3, 0, 0), Uop(1, 0, 0), Uop(2, 1, 0)], [
        # acc[3] += 5, three times (iter_in=3, all factors 0)
        Alu(alu_op=AluOp.ADD, use_imm=True, imm=5, uop_bgn=0, uop_end=1, iter_out=1, iter_in=3),
        # acc[1] += acc[0] (=3); then acc[2] += acc[1] (=3, updated): 3 + 3 = 6
        Alu(alu_op=AluOp.ADD, uop_bgn=1, uop_end=3, iter_out=1, iter_in=1),
        # chain via factors: acc[0] *= acc[0] twice -> 1; MUL by src==dst each time
        Alu(alu_op=AluOp.MUL, uop_bgn=0, uop_end=1, iter_out=2, iter_in=1, dst_factor_out=0,
            src_factor_out=0)])
    m = run(p).machine
    assert m.acc[:4, 0, 0].tolist() == [1, 3, 6, 15]


def test_alu_src_read_before_a_later_write_sees_the_old_value(small_cfg):
    """Iteration 0 reads acc[1]; iteration 1 writes acc[1]: the read sees the old value."""
    acc = np.array([[[0] * 4], [[10] * 4], [[100] * 4]], np.int32)
    p = alu_program(small_cfg, acc, [Uop(0, 1, 0), Uop(1, 2, 0)], [
        Alu(alu_op=AluOp.ADD, uop_bgn=0, uop_end=2, iter_out=1, iter_in=1)])
    assert run(p).machine.acc[:3, 0, 0].tolist() == [10, 110, 100]


def test_alu_reset_writes_zero(small_cfg):
    acc = np.full((2, 1, 4), -9, np.int32)
    p = alu_program(small_cfg, acc, [Uop(1, 0, 0)], [
        Alu(reset=True, alu_op=AluOp.MAX, use_imm=True, imm=5, uop_bgn=0, uop_end=1,
            iter_out=1, iter_in=1)])
    m = run(p).machine
    assert m.acc[:2, 0, 0].tolist() == [-9, 0] and m.out[1].tolist() == [[0] * 4]


def test_alu_out_is_low_8_bits(small_cfg):
    acc = np.array([[[300, -129, 128, -1]]], np.int32)
    p = alu_program(small_cfg, acc, [Uop(0, 0, 0)], [
        Alu(alu_op=AluOp.ADD, use_imm=True, imm=0, uop_bgn=0, uop_end=1, iter_out=1, iter_in=1)])
    assert run(p).machine.out[0, 0].tolist() == [44, 127, -128, -1]


# ---- tokens, schedules, counters ----------------------------------------------------------
def two_thread_program(cfg):
    """Two virtual threads ping-pong halves of INP/ACC: tile t uses inp[2t], acc[t];
    weights identity times (t + 1). Loads of tile 1 overlap compute of tile 0."""
    b = Builder(cfg)
    r = np.random.default_rng(1)
    a = r.integers(-20, 20, (2, cfg.BATCH, cfg.BLOCK_IN), dtype=np.int8)
    w = np.stack([np.eye(cfg.BLOCK, dtype=np.int8) * (t + 1) for t in range(2)])
    b.buf("a", a)
    b.buf("w", w)
    b.buf("o", shape=(2, cfg.BATCH, cfg.BLOCK_OUT), kind="output")
    ub = b.uops([Uop(0, 0, 0), Uop(1, 1, 1)])
    ld = lambda mem, t, **kw: Load(mem=mem, sram_base=t, dram_base=b.at("a" if mem == INP else "w",
                                   mem.name.lower()) + t, y_size=1, x_size=1, x_stride=1, **kw)
    insns = [
        ld(INP, 0), ld(WGT, 0, push_next=True),                 # tile 0 loads -> l2c
        ld(INP, 1), ld(WGT, 1, push_next=True),                 # tile 1 loads -> l2c
        Load(mem=UOP, dram_base=ub, y_size=1, x_size=2, x_stride=2, pop_prev=True),
        Gemm(reset=True, uop_bgn=0, uop_end=1, iter_out=2, iter_in=1, dst_factor_out=1),
        Gemm(uop_bgn=0, uop_end=1, iter_out=1, iter_in=1, push_next=True),   # tile 0 -> c2s
        Gemm(pop_prev=True, uop_bgn=1, uop_end=2, iter_out=1, iter_in=1, push_next=True),
        Store(pop_prev=True, dram_base=b.at("o", "out"), y_size=1, x_size=1, x_stride=1,
              push_prev=True),
        Store(pop_prev=True, sram_base=1, dram_base=b.at("o", "out") + 1, y_size=1, x_size=1,
              x_stride=1, push_prev=True),
        Load(mem=UOP, pop_next=True),                            # sync: first store done
        Finish(pop_next=True)]
    want = np.stack([(a[t].astype(np.int32) * (t + 1)).astype(np.int8) for t in range(2)])
    return b.program(insns), want


def test_two_thread_token_program_on_every_schedule(small_cfg):
    p, want = two_thread_program(small_cfg)
    res = run(p)
    assert np.array_equal(p.read(res.dram, "o"), want)
    assert res.finished and not any(res.leftover_tokens.values()) and res.warnings == []
    for seed in range(20):
        other = run(p, schedule="random", seed=seed, cmd_queue_depth=2, token_queue_depth=1)
        assert np.array_equal(other.dram, res.dram)


def test_counters(small_cfg):
    p, _ = two_thread_program(small_cfg)
    c = run(p).counters.to_dict()
    assert c["insns"] == {"LOAD": 6, "GEMM": 3, "STORE": 2, "FINISH": 1}
    assert c["insns_by_module"] == {"load": 4, "compute": 6, "store": 2}
    assert c["bytes_loaded"] == {"inp": 8, "wgt": 32, "uop": 8}
    assert c["bytes_stored"] == {"out": 8}
    assert c["gemm_uops"] == 4 and c["alu_uops"] == 0 and c["noop_memops"] == 1
    assert c["tokens_pushed"] == c["tokens_popped"] == {"l2c": 2, "c2s": 2, "s2c": 2}
    assert c["steps"] == 12


def test_max_steps_stops_early(small_cfg):
    p, _ = two_thread_program(small_cfg)
    res = run(p, max_steps=4)
    assert not res.finished and res.counters.steps == 4
    assert any("max_steps=4" in w for w in res.warnings)


def test_caller_dram_is_not_modified(small_cfg):
    p, want = two_thread_program(small_cfg)
    img = p.dram_image()
    before = img.copy()
    res = run(p, img)
    assert np.array_equal(img, before) and res.dram is not img
    assert np.array_equal(p.read(res.dram, "o"), want)


def test_bad_arguments(small_cfg):
    p, _ = two_thread_program(small_cfg)
    with pytest.raises(ValueError, match="schedule must be 'round_robin' or 'random', not 'fifo'"):
        run(p, schedule="fifo")
    with pytest.raises(ValueError, match="dram must be a 1-D uint8 array, not int32"):
        run(p, np.zeros(p.dram_bytes, np.int32))


@pytest.mark.parametrize("preset", preset_names())
def test_vectorized_uop_decode_equals_isa_decode_uop(preset):
    from sim.machine import Machine
    from vta_hw.isa import decode_uop
    cfg = load_config(preset)
    words = np.random.default_rng(3).integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32)
    got = Machine(cfg)._decode_uops(words.view(np.uint8).reshape(-1, 4))
    want = [[u.dst, u.src, u.wgt] for u in (decode_uop(int(w), cfg) for w in words)]
    assert got.tolist() == want


def test_run_from_a_machine_keeps_its_srams(builder):
    """``machine=`` starts a run from another run's SRAMs (the RTL keeps them between
    programs): a program that only stores OUT reads what the first one left there."""
    b = builder
    cfg = b.cfg
    acc = np.arange(2 * cfg.BATCH * cfg.BLOCK_OUT, dtype=np.int32).reshape(
        2, cfg.BATCH, cfg.BLOCK_OUT) - 5
    b.buf("acc", acc)
    b.buf("out", shape=(2, cfg.BATCH, cfg.BLOCK_OUT), kind="output")
    ub = b.uops([Uop(0, 0, 0), Uop(1, 0, 0)])
    first = run(b.program([
        Load(mem=ACC, dram_base=b.at("acc", "acc"), y_size=1, x_size=2, x_stride=2),
        Load(mem=UOP, dram_base=ub, y_size=1, x_size=2, x_stride=2),
        Alu(alu_op=AluOp.ADD, use_imm=True, imm=0, uop_bgn=0, uop_end=2, iter_out=1,
            iter_in=1),          # OUT = ACC, truncated to int8
        Finish()]))
    store = b.program([
        Load(mem=UOP, push_next=True),   # a compute sync: the STORE waits for it
        Store(pop_prev=True, dram_base=b.at("out", "out"), y_size=1, x_size=2, x_stride=2),
        Finish()])
    assert not store.read(run(store).dram, "out").any()
    again = run(store, machine=first.machine)
    assert again.machine is first.machine and again.counters.steps == 3
    assert np.array_equal(store.read(again.dram, "out"), acc.astype(np.int8))
