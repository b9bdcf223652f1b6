"""The idiomatic route: a packed conv2d as a te compute with VTA's schedule, lowered by
``tir.lower`` and compiled by ``compiler.codegen.vta``.

The schedule reads as TVM's ``vta_conv2d.py``: the accumulator stage in
``local.acc_buffer``; ``cache_read`` of data and weights into the INP/WGT
scopes, computed at the input-channel loop; ``pragma("dma_copy")`` on the
copies and the output stage; output-channel tiles bound to two virtual threads;
``pragma("uop_scope")`` around the GEMM loops, tensorized onto ``vta.gemm``.

Scope: strides; zero padding (a ``data_pad`` ``if_then_else`` stage inlined
into the INP copy, which the code generator turns into LOAD pad fields); with
``requantize``, bias (a ``cache_read`` into ``local.acc_buffer``), shift,
relu and clip as te stages in ``local.acc_buffer`` tensorized onto ALU
intrinsics (``intrin.alu_intrin``; the code generator runs each in place on
its operand's entries). Tiles: ``oc_tile`` output-channel blocks by the whole
output image, split over virtual threads; te's tensorize refuses split tails,
so the tile sizes must divide the shape.

``compiler.topi.vta.conv2d`` writes the same schedule as loop IR directly and
is the operator the rest of the stack calls: it adds the tile search over any
shape (remainder tiles), weights-resident tiles, and an order of the virtual
threads' instructions that overlaps better (on ResNet-18's 14x14x256 conv,
92 % GEMM utilization against 66 % for this route).
"""
from __future__ import annotations

from compiler import te, tir
from compiler.codegen.vta import codegen as vta_codegen
from vta_hw.config import VTAConfig
from vta_hw.program import Program

from .environment import ACC_SCOPE, INP_SCOPE, WGT_SCOPE, Env
from compiler.tir import ir

from .intrin import alu_intrin, gemm_intrin


def conv2d_packed(env: Env, data: te.Tensor, kernel: te.Tensor, strides=(1, 1)) -> te.Tensor:
    """int32 accumulators ``(NB, OB, OH, OW, B, BO)`` of a packed conv2d without padding."""
    NB, CB, H, W, B, BI = data.shape
    OB, _, KH, KW, BO, _ = kernel.shape
    sh, sw = strides
    OH, OW = (H - KH) // sh + 1, (W - KW) // sw + 1
    ic, kh, kw = te.reduce_axis(CB, "ic"), te.reduce_axis(KH, "kh"), te.reduce_axis(KW, "kw")
    ii = te.reduce_axis(BI, "ii")
    return te.compute((NB, OB, OH, OW, B, BO), lambda n, o, y, x, b, oo: te.sum(
        te.cast(data[n, ic, y * sh + kh, x * sw + kw, b, ii], "int32")
        * te.cast(kernel[o, ic, kh, kw, oo, ii], "int32"), axis=[ic, kh, kw, ii]), name="acc")


def pad_packed(data: te.Tensor, padding=(0, 0)) -> te.Tensor:
    """``data`` zero-padded by ``padding`` = (rows, columns) on each side (an
    ``if_then_else`` stage, meant to be inlined into the DMA copy)."""
    NB, CB, H, W, B, BI = data.shape
    ph, pw = padding
    return te.compute((NB, CB, H + 2 * ph, W + 2 * pw, B, BI), lambda n, c, y, x, b, i: te.if_then_else(
        (y >= ph) & (y < H + ph) & (x >= pw) & (x < W + pw), data[n, c, y - ph, x - pw, b, i],
        te.cast(0, "int8")), name="data_pad")


def conv2d_te_program(cfg: VTAConfig, packed_data_shape, packed_kernel_shape, strides=(1, 1),
                      padding=(0, 0), oc_tile: int = 1, vthreads: int = 2, *,
                      bias: bool = False, shift: int = 0, relu: bool = False,
                      requantize: bool = False) -> Program:
    """Compile the te conv2d for ``cfg``: buffers "data", "kernel", ["bias"], "res" (int8).

    ``oc_tile`` output-channel blocks per tile; the tiles are split over ``vthreads``
    virtual threads (the number of tiles must divide evenly). Without ``requantize``
    the result is the int32 accumulator truncated to int8; with it, ``bias`` (packed
    ``(OB, B, BO)`` int32), ``>> shift``, relu and the int8 clip run on the ALU, each a
    te stage in ``local.acc_buffer`` tensorized onto an ALU intrinsic.
    """
    env = Env(cfg)
    data = te.placeholder(tuple(packed_data_shape), "int8", name="data")
    kernel = te.placeholder(tuple(packed_kernel_shape), "int8", name="kernel")
    padded = pad_packed(data, padding) if any(padding) else data
    acc = conv2d_packed(env, padded, kernel, strides)
    stages, args = [acc], [data, kernel]
    if requantize:
        last = acc
        if bias:
            bias_t = te.placeholder((kernel.shape[0], env.BATCH, env.BLOCK_OUT), "int32", name="bias")
            args.append(bias_t)
            last = te.compute(acc.shape, lambda n, o, y, x, b, oo: last[n, o, y, x, b, oo]
                              + bias_t[o, b, oo], name="acc_bias")
            stages.append((last, alu_intrin(env, "ADD")))
        if shift:
            prev = last
            last = te.compute(acc.shape, lambda *i: prev[i] // (1 << shift), name="acc_shr")
            stages.append((last, alu_intrin(env, "SHR", shift)))
        for op, imm in (("MAX", 0 if relu else -128), ("MIN", 127)):
            prev = last
            fn = te.maximum if op == "MAX" else te.minimum
            last = te.compute(acc.shape, lambda *i, prev=prev, fn=fn, imm=imm: fn(
                prev[i], ir.const(imm, "int32")), name=f"acc_{op.lower()}")
            stages.append((last, alu_intrin(env, op, imm)))
        final = last
    else:
        final = acc
    res = te.compute(acc.shape, lambda *i: te.cast(final[i], "int8"), name="res")
    s = te.create_schedule(res)
    s[acc].set_scope(ACC_SCOPE)
    dl = s.cache_read(padded, INP_SCOPE, [acc])
    if padded is not data:
        s[padded].compute_inline()
    kl = s.cache_read(kernel, WGT_SCOPE, [acc])
    n, o, y, x, b, oo = res.op.axis
    o_out, o_in = s[res].split(o, factor=oc_tile)
    vt, o_out = s[res].split(o_out, nparts=vthreads)
    s[res].bind(vt, te.thread_axis("vthread"))
    s[res].pragma(y, "dma_copy")
    # each stage of the chain acc -> [bias, shift, max, min] is computed inside its
    # reader's batch loop, the last one at the output tile
    chain = [acc] + [t for t, _ in stages[1:]]
    for t, reader in zip(chain, chain[1:]):
        s[t].compute_at(s[reader], reader.op.axis[0])
    s[chain[-1]].compute_at(s[res], o_out)
    if requantize and bias:
        bl = s.cache_read(args[2], ACC_SCOPE, [stages[1][0]])
        s[bl].compute_at(s[stages[1][0]], stages[1][0].op.axis[0])
        s[bl].pragma(s[bl].op.axis[0], "dma_copy")
    for t, intrin in stages[1:]:
        s[t].set_scope(ACC_SCOPE)
        s[t].pragma(t.op.axis[1], "uop_scope")
        s[t].tensorize(t.op.axis[4], intrin)
    n, o, y, x, b, oo = s[acc].op.axis
    ic, kh, kw, ii = s[acc].op.reduce_axis
    s[acc].reorder(n, ic, o, kh, kw, y, x, b, oo, ii)
    for cache in (dl, kl):
        s[cache].compute_at(s[acc], ic)
        s[cache].pragma(s[cache].op.axis[0], "dma_copy")
    s[acc].pragma(o, "uop_scope")
    s[acc].tensorize(b, gemm_intrin(env))
    func = tir.lower(s, args + [res], "conv2d_te")
    kinds = {"data": "input", "kernel": "param", "bias": "param", "res": "output"}
    return vta_codegen.build(func, cfg, kinds)
