"""The idiomatic route: a packed conv2d as a te compute with VTA's schedule, lowered by
``tir.lower`` and compiled by ``compiler.codegen.vta``.

The schedule reads as TVM's ``vta_conv2d.py``: the accumulator stage in
``local.acc_buffer``; ``cache_read`` of data and weights into the INP/WGT
scopes, computed at the input-channel loop; ``pragma("dma_copy")`` on the
copies and the output stage; output-channel tiles bound to two virtual threads;
the GEMM loops tensorized onto ``env.gemm`` (the code generator folds them into
GEMM instructions).

Scope: strides; zero padding (a ``data_pad`` ``if_then_else`` stage inlined
into the INP copy, which the code generator turns into LOAD pad fields); with
``requantize``, bias (a ``cache_read`` into ``local.acc_buffer``), shift,
relu and clip as te stages in ``local.acc_buffer`` marked ``env.alu``, as
TVM's conv tutorial writes them (the code generator pattern-matches each into
ALU instructions, run in place on its operand's entries).

Tiles (a ``tiling.Tiling``): ``th`` x ``tw`` output pixels of ``toc``
output-channel blocks per tile, accumulated over steps of ``tic`` input-channel
blocks (all kernel rows at once); the tiles are split over ``vt`` virtual
threads along the output channels (or, where those tiles do not divide by
``vt``, the rows). te's tensorize refuses split tails, so every tile size must
divide the shape: ``search_tiling`` is the library's tile search
(``tiling.candidates``, ranked by its cycle estimate) kept to such tilings, a
function a user's own schedule can call too.

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
from .tiling import Conv2dShape, Tiling, TilingError, candidates


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


def _splits_evenly(t: Tiling, s: Conv2dShape) -> bool:
    """Every tile size divides its extent, all kernel rows per step, weights per step, and
    the virtual threads divide the output-channel tiles or the row tiles."""
    even = (s.OH % t.th == 0 and s.OW % t.tw == 0 and s.OB % t.toc == 0 and s.CB % t.tic == 0
            and t.tkh == s.KH and not t.wres)
    return even and (t.vt == 1 or (s.OB // t.toc) % t.vt == 0 or (s.OH // t.th) % t.vt == 0)


def search_tiling(s: Conv2dShape, cfg: VTAConfig, bias: int = 0, vthreads: int = 2,
                  top: int = 1) -> list[Tiling]:
    """The ``top`` best tilings of conv2d ``s`` for the te schedule on ``cfg``, best first.

    The library's candidates (``tiling.candidates``: every tiling whose buffers fit, each
    virtual thread owning 1/vt of every SRAM, ranked by the cycle estimate) kept to those
    that ``_splits_evenly``; with ``vthreads`` > 1 and none of those, one thread.

    Args:
        s: the conv in packed elements (``Conv2dShape``: batch and channel blocks).
        bias: per-output-channel int32 vectors held in ACC per channel block (0 or 1).
        vthreads: virtual threads (1 or 2).

    Raises:
        TilingError: no tiling fits the buffers (the message names the buffer), or none
            splits the shape evenly.
    """
    for vt in ([vthreads, 1] if vthreads > 1 else [1]):
        ranked = [t for t in candidates(s, cfg, bias, vt, top=1 << 30)
                  if t.vt == vt and _splits_evenly(t, s)]
        if ranked:
            return ranked[:top]
    raise TilingError(f"no tiling of conv2d {s} on {cfg.name} both fits the buffers and splits "
                      "the shape evenly (te's tensorize refuses tails); use the library's "
                      "conv2d_program, which tiles with remainders")


def conv2d_te_program(cfg: VTAConfig, packed_data_shape, packed_kernel_shape, strides=(1, 1),
                      padding=(0, 0), oc_tile: int | None = None, vthreads: int = 2, *,
                      tiling: Tiling | None = None, bias: bool = False, shift: int = 0,
                      relu: bool = False, requantize: bool = False) -> Program:
    """The program of ``conv2d_te_schedule`` (same arguments, ``Env(cfg)``): buffers "data",
    "kernel" and "bias" (params), "res" (the output)."""
    s, args = conv2d_te_schedule(Env(cfg), packed_data_shape, packed_kernel_shape, strides,
                                 padding, oc_tile, vthreads, tiling=tiling, bias=bias,
                                 shift=shift, relu=relu, requantize=requantize)
    func = tir.lower(s, args, "conv2d_te")
    kinds = {"data": "input", "kernel": "param", "bias": "param", "res": "output"}
    return vta_codegen.build(func, cfg, kinds)


def conv2d_te_schedule(env: Env, packed_data_shape, packed_kernel_shape, strides=(1, 1),
                       padding=(0, 0), oc_tile: int | None = None, vthreads: int = 2, *,
                       tiling: Tiling | None = None, bias: bool = False, shift: int = 0,
                       relu: bool = False, requantize: bool = False):
    """The packed conv2d as te stages and VTA's schedule: ``(schedule, [data, kernel,
    (bias), res])`` for ``compiler.build(s, args, target="vta")`` or ``tir.lower``.

    Args:
        packed_data_shape: ``(N/B, C/BI, H, W, B, BI)``; packed_kernel_shape: ``(O/BO,
            C/BI, KH, KW, BO, BI)`` (``layout.pack_nchw`` / ``pack_oihw``), int8.
        strides, padding: (rows, columns) pairs; padding at most 15 per side.
        tiling: the tiles; None: ``search_tiling`` with ``vthreads`` (or, with ``oc_tile``,
            ``oc_tile`` output-channel blocks by the whole output image).
        requantize: without it ``res`` is the int32 accumulator truncated to int8; with
            it ``bias`` (packed ``(OB, B, BO)`` int32), ``>> shift``, relu and the int8
            clip run on the ALU, each a te stage in ``local.acc_buffer`` marked
            ``env.alu``. ``res`` is ``(N/B, O/BO, OH, OW, B, BO)`` int8.

    Raises:
        TilingError: no even tiling fits, or ``tiling`` does not split the shape evenly.
    """
    cfg = env.cfg
    NB, CB, H, W, _, _ = packed_data_shape
    OB, _, KH, KW, _, _ = packed_kernel_shape
    shape = Conv2dShape(NB, CB, H, W, OB, KH, KW, *strides, *padding)
    if tiling is None:
        tiling = (Tiling(shape.OH, shape.OW, oc_tile, CB, KH, vthreads) if oc_tile
                  else search_tiling(shape, cfg, int(requantize and bias), vthreads)[0])
    elif not _splits_evenly(tiling, shape):
        raise TilingError(f"tiling {tiling} does not split conv2d {shape} evenly: th, tw, toc "
                          "and tic must divide OH, OW, OB and CB, tkh must be KH, wres False")
    t = tiling
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
            stages.append(last)
        if shift:
            prev = last
            last = te.compute(acc.shape, lambda *i: prev[i] >> shift, name="acc_shr")
            stages.append(last)
        prev = last
        last = te.compute(acc.shape, lambda *i: te.maximum(prev[i], 0 if relu else -128),
                          name="acc_max")
        stages.append(last)
        prev = last
        last = te.compute(acc.shape, lambda *i: te.minimum(prev[i], 127), name="acc_min")
        stages.append(last)
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
    # output tiles: (channel blocks, rows, columns) outer, the tile inside
    n, o, y, x, b, oo = res.op.axis
    o_out, o_in = s[res].split(o, factor=t.toc)
    y_out, y_in = s[res].split(y, factor=t.th)
    x_out, x_in = s[res].split(x, factor=t.tw)
    s[res].reorder(n, o_out, y_out, x_out, o_in, y_in, x_in, b, oo)
    if t.vt > 1:   # virtual threads over the channel tiles, else over the row tiles
        if (shape.OB // t.toc) % t.vt == 0:
            vt, o_out = s[res].split(o_out, nparts=t.vt)
        else:
            vt, y_out = s[res].split(y_out, nparts=t.vt)
        s[res].reorder(n, vt, o_out, y_out, x_out)
        s[res].bind(vt, te.thread_axis("vthread"))
    s[res].pragma(o_in, env.dma_copy)
    # the accumulator and the ALU stages at the output tile, as TVM's conv tutorial
    # attaches them; each ALU stage's body runs on the ALU (env.alu: its expression is
    # pattern-matched into ALU instructions)
    for st in stages:
        s[st].compute_at(s[res], x_out)
    if requantize and bias:
        bl = s.cache_read(args[2], ACC_SCOPE, [stages[1]])
        s[bl].compute_at(s[res], x_out)
        s[bl].pragma(s[bl].op.axis[0], env.dma_copy)
    for st in stages[1:]:
        s[st].set_scope(ACC_SCOPE)
        s[st].pragma(st.op.axis[0], env.alu)
    # the reduction in steps of tic input-channel blocks; the copies at each step
    n, o, y, x, b, oo = s[acc].op.axis
    ic, kh, kw, ii = s[acc].op.reduce_axis
    ic_out, ic_in = s[acc].split(ic, factor=t.tic)
    s[acc].reorder(n, ic_out, o, ic_in, kh, kw, y, x, b, oo, ii)
    for cache in (dl, kl):
        s[cache].compute_at(s[acc], ic_out)
        s[cache].pragma(s[cache].op.axis[0], env.dma_copy)
    s[acc].tensorize(b, env.gemm)
    return s, args + [res]
