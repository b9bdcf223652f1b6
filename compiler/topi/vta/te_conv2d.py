"""The idiomatic route: a packed conv2d as a te compute with VTA's schedule, lowered by
``tir.lower`` and compiled by ``compiler.codegen.vta``.

The schedule reads as TVM's ``vta_conv2d.py``: the accumulator stage in
``local.acc_buffer``; ``cache_read`` of data and weights into the INP/WGT
scopes, computed at the input-channel loop; ``pragma("dma_copy")`` on the
copies and the output stage; output-channel tiles bound to two virtual threads;
``pragma("uop_scope")`` around the GEMM loops, tensorized onto ``vta.gemm``.

Scope (what te lowering supports today): stride >= 1, no padding, no bias and
no requantization: the output is the int32 accumulator truncated to int8 (the
OUT buffer). ``compiler.topi.vta.conv2d`` (loop IR built directly) is the full
operator (padding through the LOAD pad fields, bias, shift, relu, clip, tile
search).
"""
from __future__ import annotations

from compiler import te, tir
from compiler.codegen import vta as vta_codegen
from vta_hw.config import VTAConfig
from vta_hw.program import Program

from .environment import ACC_SCOPE, INP_SCOPE, WGT_SCOPE, Env
from .intrin import gemm_intrin


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


def conv2d_te_program(cfg: VTAConfig, packed_data_shape, packed_kernel_shape, strides=(1, 1),
                      oc_tile: int = 1, vthreads: int = 2) -> Program:
    """Compile the te conv2d for ``cfg``: buffers "data", "kernel", "res" (int8, truncated).

    ``oc_tile`` output-channel blocks per tile; the tiles are split over ``vthreads``
    virtual threads (the number of tiles must divide evenly).
    """
    env = Env(cfg)
    data = te.placeholder(tuple(packed_data_shape), "int8", name="data")
    kernel = te.placeholder(tuple(packed_kernel_shape), "int8", name="kernel")
    acc = conv2d_packed(env, data, kernel, strides)
    res = te.compute(acc.shape, lambda *i: te.cast(acc[i], "int8"), name="res")
    s = te.create_schedule(res)
    s[acc].set_scope(ACC_SCOPE)
    dl = s.cache_read(data, INP_SCOPE, [acc])
    kl = s.cache_read(kernel, WGT_SCOPE, [acc])
    n, o, y, x, b, oo = res.op.axis
    o_out, o_in = s[res].split(o, factor=oc_tile)
    vt, o_out = s[res].split(o_out, nparts=vthreads)
    s[res].bind(vt, te.thread_axis("vthread"))
    s[res].pragma(y, "dma_copy")
    s[acc].compute_at(s[res], o_out)
    n, o, y, x, b, oo = s[acc].op.axis
    ic, kh, kw, ii = s[acc].op.reduce_axis
    s[acc].reorder(n, ic, o, kh, kw, y, x, b, oo, ii)
    for cache in (dl, kl):
        s[cache].compute_at(s[acc], ic)
        s[cache].pragma(s[cache].op.axis[0], "dma_copy")
    s[acc].pragma(o, "uop_scope")
    s[acc].tensorize(b, gemm_intrin(env))
    func = tir.lower(s, [data, kernel, res], "conv2d_te")
    return vta_codegen.build(func, cfg, {"data": "input", "kernel": "param", "res": "output"})
