"""The VTA code generator's pieces: token insertion and verification, uop folding,
DMA recognition and its errors, on small hand-written inputs."""
import numpy as np
import pytest

from compiler.codegen.vta import codegen as codegen
from compiler.codegen.vta.eval import CodegenError
from compiler.codegen.vta.tokens import Entry, TokenError, insert_tokens, verify_tokens
from compiler.codegen.vta.uops import fold
from compiler.tir import ir
from compiler.tir.ops import ForKind
from compiler.topi.vta import Env, Tiling, conv2d_ir
from compiler.topi.vta.environment import INP_SCOPE
from compiler.topi.vta.tiling import Conv2dShape
from sim import functional
from vta_hw.config import load_config
from vta_hw.isa import Alu, Finish, Gemm, Load, MemId, Store

CFG = load_config()


def ld(mem=MemId.INP, **kw):
    return Load(mem=mem, x_size=1, y_size=1, x_stride=1, **kw)


def test_tokens_double_buffering_pattern():
    """Two threads' loads and GEMMs: each GEMM pops its load's token, the next load of a
    buffer pops the token of the GEMM that read it, FINISH waits for the last store."""
    e = [Entry(ld(), writes=frozenset({"inp.vt0"})), Entry(ld(), writes=frozenset({"inp.vt1"})),
         Entry(Gemm(), frozenset({"inp.vt0"}), frozenset({"acc.vt0"})),
         Entry(Gemm(), frozenset({"inp.vt1"}), frozenset({"acc.vt1"})),
         Entry(ld(), writes=frozenset({"inp.vt0"})),
         Entry(Gemm(), frozenset({"inp.vt0"}), frozenset({"acc.vt0"})),
         Entry(Store(), reads=frozenset({"acc.vt0"})),
         Entry(Gemm(reset=True), writes=frozenset({"acc.vt0"}))]
    out = insert_tokens(e)
    assert [(i.push_next, i.pop_next) for i in out[:2]] == [(True, False), (True, False)]
    assert out[2].pop_prev and out[2].push_prev and out[3].pop_prev and not out[3].push_prev
    assert out[4].pop_next and out[4].push_next          # waits for GEMM 2, feeds GEMM 5
    assert out[5].pop_prev and out[5].push_next          # GEMM 5 hands acc.vt0 to the store
    assert out[6].pop_prev and out[6].push_prev          # store pops, then frees acc.vt0
    assert out[7].pop_next                               # the reset waits for the store
    assert isinstance(out[-1], Finish)
    verify_tokens(out)


def test_verifier_rejects_a_pop_without_an_earlier_push():
    with pytest.raises(TokenError, match="can deadlock"):
        verify_tokens([Gemm(pop_prev=True), ld(push_next=True), Finish()])


def test_verifier_rejects_unbalanced_tokens():
    with pytest.raises(TokenError, match="do not balance"):
        verify_tokens([ld(push_next=True), Finish()])


def test_verifier_rejects_a_flag_the_module_lacks():
    with pytest.raises(TokenError, match="no pop_prev queue"):
        verify_tokens([ld(pop_prev=True), Finish()])


def test_verifier_rejects_an_overfull_queue():
    with pytest.raises(TokenError, match="deeper than"):
        verify_tokens([ld(push_next=True)] * 33 + [Gemm(pop_prev=True)] * 33 + [Finish()])


def test_fold_affine_two_loops():
    o, i = np.arange(3)[None, :, None], np.arange(4)[None, None, :]
    u = np.array([0, 100])[:, None, None]
    uops, io, ii, fac = fold({"dst": u + 4 * o + i, "src": u + 10 * o + 2 * i,
                              "wgt": u + 0 * o + 0 * i}, CFG)
    assert (io, ii, len(uops)) == (3, 4, 2)
    assert fac == {"dst": (4, 1), "src": (10, 2), "wgt": (0, 0)}


def test_fold_falls_back_to_more_uops():
    o, i = np.arange(3)[None, :, None], np.arange(4)[None, None, :]
    dst = (o * o) * 4 + i + np.zeros((1, 1, 1), int)  # not affine in o
    uops, io, ii, fac = fold({"dst": dst, "src": dst, "wgt": dst * 0}, CFG)
    assert (io, ii, len(uops)) == (1, 4, 3)
    assert [u.dst for u in uops] == [0, 4, 16]


def _dma_func(cond_rect: bool):
    env = Env(CFG)
    src = ir.Buffer("src", "int8", (4, 4, 1, 16))
    sram = ir.Buffer("s", "int8", (36, 1, 16), scope=INP_SCOPE)
    y, x = ir.var("y"), ir.var("x")
    cond = ir.logical_and(y >= 1, y < 5, x >= 1, x < 5) if cond_rect else ((x + y) < 5)
    val = ir.select(cond, ir.load(src, (y - 1, x - 1, 0, 0), 16),
                    ir.broadcast(ir.const(0, "int8"), 16))
    nest = ir.For(y, ir.const(0), ir.const(6), ForKind.SERIAL,
                  ir.For(x, ir.const(0), ir.const(6), ForKind.SERIAL,
                         ir.Store(sram, val, (y * 6 + x, ir.const(0), ir.const(0)))))
    body = ir.Allocate(sram, ir.AttrStmt("pragma_dma_copy", True, nest))
    assert env.elem_values(INP_SCOPE) == 16
    return ir.PrimFunc("pad", (src,), body)


def test_dma_copy_with_padding_becomes_one_padded_load():
    prog = codegen.build(_dma_func(True), CFG, {"src": "input"})
    (load,) = [i for i in prog.insns if isinstance(i, Load)]
    assert (load.y_size, load.x_size, load.x_stride) == (4, 4, 4)
    assert (load.y_pad_0, load.y_pad_1, load.x_pad_0, load.x_pad_1) == (1, 1, 1, 1)
    x = np.arange(256, dtype=np.int64).astype(np.int8).reshape(4, 4, 1, 16)
    res = functional.run(prog, prog.dram_image({"src": x}))
    got = res.machine.inp[:36].reshape(6, 6, 16)
    assert (got[0] == 0).all() and (got[:, 0] == 0).all()
    np.testing.assert_array_equal(got[1:5, 1:5], x[:, :, 0])


def test_dma_copy_with_a_non_rectangular_valid_region_is_an_error():
    with pytest.raises(CodegenError, match="not a rectangle"):
        codegen.build(_dma_func(False), CFG)


def test_sram_overflow_names_the_buffer():
    big = ir.Buffer("huge", "int8", (CFG.inp_depth + 1, 1, 16), scope=INP_SCOPE)
    f = ir.PrimFunc("f", (), ir.Allocate(big, ir.Evaluate(ir.const(0))))
    with pytest.raises(CodegenError, match="stage 'huge', allocated inside loops \\(none\\), needs 2049 entries"):
        codegen.build(f, CFG)


def test_conv_ir_has_virtual_threads_dma_pragmas_and_tensorize():
    env = Env(CFG)
    f = conv2d_ir(env, Conv2dShape(1, 2, 6, 6, 2, 3, 3, 1, 1, 1, 1), Tiling(3, 6, 1, 1, 3, 2))
    text = repr(f)
    for key in ("virtual_thread", "pragma_dma_copy", "pragma_uop_scope", "'tensorize', 'vta.gemm'",
                "vta.alu.REQUANT", "inp.vt0", "inp.vt1", "acc.vt1"):
        assert key in text, key
    stats = codegen.BuildStats()
    prog = codegen.build(f, CFG, stats=stats)
    # 4 output tiles (2 row tiles x 2 channel blocks), each 2 reduction steps; a reset in
    # each thread's first tile only (REQUANT leaves the accumulator zeroed)
    assert stats.insns["GEMM"] == 4 * 2 + 2 and stats.insns["STORE_OUT"] == 4
    assert any(isinstance(i, Alu) and i.iter_out == 3 and i.iter_in == 6 for i in prog.insns)


def test_in_place_alu_refuses_an_operand_read_elsewhere():
    from compiler.topi.vta import intrin as I
    from compiler.topi.vta.environment import ACC_SCOPE
    env = Env(CFG)
    a = ir.Buffer("a", "int32", (4, 1, 16), scope=ACC_SCOPE)
    b = ir.Buffer("b", "int32", (4, 1, 16), scope=ACC_SCOPE)
    out = ir.Buffer("out", "int8", (4, 1, 16))
    view = lambda buf: I.element_view(env, buf, 0)  # noqa: E731
    alu = ir.AttrStmt("tensorize", "vta.alu.MAX", ir.seq(
        ir.Evaluate(view(b).access_ptr()), ir.Evaluate(view(a).access_ptr()),
        ir.Evaluate(ir.const(0, "int32"))))
    i = ir.var("i")
    store = ir.AttrStmt("pragma_dma_copy", True, ir.For(i, ir.const(0), ir.const(4), ForKind.SERIAL,
                        ir.Store(out, ir.cast(ir.load(a, (i, ir.const(0), ir.const(0)), 16), "int8x16"),
                                 (i, ir.const(0), ir.const(0)))))
    f = ir.PrimFunc("f", (out,), ir.Allocate(a, ir.Allocate(b, ir.seq(alu, store))))
    with pytest.raises(CodegenError, match="'a' is read elsewhere too"):
        codegen.build(f, CFG)
