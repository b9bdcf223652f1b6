"""2-D convolution: computes in NCHW and blocked NCHW{b}c layouts, and their CPU schedules.

Layouts (TVM's x86 conv2d):

* ``conv2d_nchwc``: data ``[N, C/cb, H, W, cb]``, kernel ``[O/ob, C/cb, KH, KW, cb, ob]``
  (graph layout ``OIHW{cb}i{ob}o``), output ``[N, O/ob, OH, OW, ob]``. The schedule
  keeps an ``ow_tile x ob`` accumulator tile in vector registers: every step
  of the reduction broadcasts one input value per output column and does one
  FMA per column against a contiguous ``ob``-wide weight vector, so it is
  equally fast for any stride.
* ``conv2d_nchw``: data ``[N, C, H, W]``, kernel packed at compile time to
  ``[ceil(O/ob), C, KH, KW, ob]`` (:func:`pack_conv_kernel`, zero channels past O),
  output ``[N, O, OH, OW]``.
  Same register tile as above (``ob`` output channels x ``ow_tile`` columns),
  transposed on the way out so the output stays NCHW: no layout transforms.
* ``conv2d_nchw_cols``: 1x1 stride-1 convs over the same packed kernel, vectorised along
  the output columns instead: ``ob`` channels x ``cols`` columns per register tile, rows
  stored as they lie in NCHW (no transpose; for small C that transpose cost as much as
  the FMAs).
* ``depthwise_conv2d_nchw`` / ``group_conv2d_nchw``: groups > 1, vectorised
  along the output columns; ``conv2d_transpose_nchw`` likewise, over a
  zero-inserted copy of the input.

``pads`` are (top, left, bottom, right) as ONNX; output size
``OH = (H + top + bottom - ((KH-1)*dh + 1)) // sh + 1``.
"""
from __future__ import annotations

from compiler import te
from compiler.tir import ir

from .nn_util import pad_spatial, window_out


def conv2d_nchwc(data, kernel, strides=(1, 1), pads=(0, 0, 0, 0), dilations=(1, 1), name="conv"):
    """Blocked convolution; shapes as in the module docstring. Returns the output tensor."""
    N, Cc, H, W, cb = data.shape
    Oc, Cc2, KH, KW, cb2, ob = kernel.shape
    if (Cc, cb) != (Cc2, cb2):
        raise ValueError(f"conv2d_nchwc: data channels {Cc}x{cb} != kernel in-channels {Cc2}x{cb2}")
    sh, sw = strides
    dh, dw = dilations
    OH = window_out(H, KH, sh, pads[0], pads[2], dh)
    OW = window_out(W, KW, sw, pads[1], pads[3], dw)
    padded = pad_spatial(data, pads, 2, name=name + "_pad")
    ic = te.reduce_axis(Cc, "ic")
    kh = te.reduce_axis(KH, "kh")
    kw = te.reduce_axis(KW, "kw")
    ii = te.reduce_axis(cb, "ii")
    return te.compute(
        (N, Oc, OH, OW, ob),
        lambda n, oc, oh, ow, oi: te.sum(
            padded[n, ic, oh * sh + kh * dh, ow * sw + kw * dw, ii] * kernel[oc, ic, kh, kw, ii, oi],
            axis=(ic, kh, kw, ii)),
        name=name)


def pad_out_channels(weight, ob: int):
    """numpy: OIHW ``weight`` with zero output channels appended up to a multiple of ``ob``
    (the weight itself if ``ob`` divides O)."""
    import numpy as np
    O = weight.shape[0]
    extra = -O % ob
    if not extra:
        return weight
    return np.concatenate([weight, np.zeros((extra,) + weight.shape[1:], weight.dtype)])


def pack_conv_kernel(weight, ob: int):
    """numpy: OIHW weight -> ``[ceil(O/ob), I, KH, KW, ob]`` (output channels blocked
    innermost; channels past O, when ``ob`` does not divide O, are zero)."""
    import numpy as np
    weight = pad_out_channels(weight, ob)
    O, I, KH, KW = weight.shape
    return np.ascontiguousarray(weight.reshape(O // ob, ob, I, KH, KW).transpose(0, 2, 3, 4, 1))


def conv_out_block(out_channels: int) -> int:
    """Output-channel block of the packed NCHW kernel: 16 (one AVX-512 vector), 8 or 1."""
    for b in (16, 8):
        if out_channels % b == 0:
            return b
    return 1


#: the padded channel block: convs with more output channels than this whose count no
#: vector block divides (255, 75, 21...) compute ceil(O/16) blocks of 16, the channels past
#: O on zero weights, instead of one channel per vector (a 1x1 conv 256 -> 255 channels at
#: 13x13 ran 6.0x onnxruntime's latency with block 1, bench/tune_models.py --parts layers)
PADDED_BLOCK = 16


def padded_out_block(out_channels: int) -> "int | None":
    """:data:`PADDED_BLOCK` where it beats :func:`conv_out_block`'s block 1 (O > 8 and
    neither 16 nor 8 divides O), else None."""
    return PADDED_BLOCK if out_channels > 8 and conv_out_block(out_channels) == 1 else None


def conv2d_nchw(data, kernel, strides=(1, 1), pads=(0, 0, 0, 0), dilations=(1, 1), name="conv"):
    """Convolution (groups=1) of NCHW ``data`` with a packed kernel ``[O/ob, C, KH, KW, ob]``
    (:func:`pack_conv_kernel`).

    Returns ``(blocked, out)``: the accumulation ``blocked[N, O/ob, OH, OW, ob]`` and
    ``out[N, O, OH, OW]`` reading it back in NCHW (inline ``out`` into its consumer, or
    schedule it as the epilogue).
    """
    N, C, H, W = data.shape
    Ob, C2, KH, KW, ob = kernel.shape
    if C != C2:
        raise ValueError(f"conv2d_nchw: data has {C} channels, packed kernel {kernel.shape} wants {C2}")
    sh, sw = strides
    dh, dw = dilations
    OH = window_out(H, KH, sh, pads[0], pads[2], dh)
    OW = window_out(W, KW, sw, pads[1], pads[3], dw)
    padded = pad_spatial(data, pads, 2, name=name + "_pad")
    ic = te.reduce_axis(C, "ic")
    kh = te.reduce_axis(KH, "kh")
    kw = te.reduce_axis(KW, "kw")
    blocked = te.compute(
        (N, Ob, OH, OW, ob),
        lambda n, oc, oh, ow, oi: te.sum(
            padded[n, ic, oh * sh + kh * dh, ow * sw + kw * dw] * kernel[oc, ic, kh, kw, oi],
            axis=(ic, kh, kw)),
        name=name)
    out = te.compute((N, Ob * ob, OH, OW), lambda n, o, oh, ow: blocked[n, o // ob, oh, ow, o % ob],
                     name=name + "_nchw")
    return blocked, out


def conv2d_nchw_cols(data, kernel, out_channels: "int | None" = None, name="conv"):
    """Pointwise (1x1, stride 1, no padding) convolution of NCHW ``data [N, C, H, W]`` with
    the packed kernel ``[ceil(O/ob), C, 1, 1, ob]`` (:func:`pack_conv_kernel`; ``out_channels``
    is O, default all ``ceil(O/ob) * ob``), straight into ``out[N, O, H, W]``: :func:`schedule_conv2d_cols` vectorises it along the columns, so
    each output row is stored as it lies in NCHW, with no block-to-NCHW transpose.

    Raises:
        ValueError: the kernel is not 1x1 or its in-channels differ from the data's.
    """
    N, C, H, W = data.shape
    Ob, C2, KH, KW, ob = kernel.shape
    if C != C2 or (KH, KW) != (1, 1):
        raise ValueError(f"conv2d_nchw_cols: needs a 1x1 packed kernel over {C} channels, "
                         f"not {kernel.shape}; use conv2d_nchw for other windows")
    ic = te.reduce_axis(C, "ic")
    return te.compute(
        (N, out_channels or Ob * ob, H, W),
        lambda n, o, h, w: te.sum(data[n, ic, h, w] * kernel[o // ob, ic, 0, 0, o % ob], axis=ic),
        name=name)


def depthwise_conv2d_nchw(data, kernel, strides=(1, 1), pads=(0, 0, 0, 0), dilations=(1, 1),
                          name="conv"):
    """Depthwise convolution: data ``[N, C, H, W]``, kernel ``[C*m, 1, KH, KW]`` (groups = C,
    channel multiplier m); output ``[N, C*m, OH, OW]``.

    With a column stride ``sw > 1`` the padded copy is stored phase-split,
    ``[N, C, Hp, sw, ceil(Wp/sw)]`` (column ``q*sw + phase``), so the vectorised
    loop over output columns reads unit-stride vectors instead of gathering.
    """
    N, C, H, W = data.shape
    O, _, KH, KW = kernel.shape
    m = O // C
    sh, sw = strides
    dh, dw = dilations
    OH = window_out(H, KH, sh, pads[0], pads[2], dh)
    OW = window_out(W, KW, sw, pads[1], pads[3], dw)
    kh = te.reduce_axis(KH, "kh")
    kw = te.reduce_axis(KW, "kw")
    if sw == 1:
        padded = pad_spatial(data, pads, 2, name=name + "_pad")
        return te.compute(
            (N, O, OH, OW),
            lambda n, o, oh, ow: te.sum(
                padded[n, o // m, oh * sh + kh * dh, ow + kw * dw] * kernel[o, 0, kh, kw],
                axis=(kh, kw)),
            name=name)
    top, left = pads[0], pads[1]
    Hp = H + pads[0] + pads[2]
    Wq = (W + pads[1] + pads[3] + sw - 1) // sw
    zero = ir.const(0.0, data.dtype)

    def phase_split(n, c, h, ph, q):
        hh, ww = h - top, q * sw + ph - left
        ok = ir.logical_and(hh >= 0, hh < H, ww >= 0, ww < W)
        return te.if_then_else(ok, data[n, c, hh, ww], zero)
    split = te.compute((N, C, Hp, sw, Wq), phase_split, name=name + "_pad")
    return te.compute(
        (N, O, OH, OW),
        lambda n, o, oh, ow: te.sum(
            split[n, o // m, oh * sh + kh * dh, (kw * dw) % sw, ow + (kw * dw) // sw]
            * kernel[o, 0, kh, kw], axis=(kh, kw)),
        name=name)


def group_conv2d_nchw(data, kernel, strides=(1, 1), pads=(0, 0, 0, 0), dilations=(1, 1), groups=1,
                      name="conv"):
    """Grouped convolution, OIHW kernel ``[O, C/groups, KH, KW]`` (the general, slower path)."""
    N, C, H, W = data.shape
    O, Cg, KH, KW = kernel.shape
    if C != Cg * groups or O % groups:
        raise ValueError(f"group_conv2d_nchw: {C} data channels do not match kernel "
                         f"{kernel.shape} with groups={groups}")
    sh, sw = strides
    dh, dw = dilations
    OH = window_out(H, KH, sh, pads[0], pads[2], dh)
    OW = window_out(W, KW, sw, pads[1], pads[3], dw)
    padded = pad_spatial(data, pads, 2, name=name + "_pad")
    ic = te.reduce_axis(Cg, "ic")
    kh = te.reduce_axis(KH, "kh")
    kw = te.reduce_axis(KW, "kw")
    og = O // groups
    return te.compute(
        (N, O, OH, OW),
        lambda n, o, oh, ow: te.sum(
            padded[n, (o // og) * Cg + ic, oh * sh + kh * dh, ow * sw + kw * dw] * kernel[o, ic, kh, kw],
            axis=(ic, kh, kw)),
        name=name)


def conv2d_transpose_nchw(data, kernel, strides=(1, 1), pads=(0, 0, 0, 0), dilations=(1, 1),
                          groups=1, out_hw=None, name="convT"):
    """Transposed convolution (ONNX ConvTranspose): data ``[N, C, H, W]``, kernel
    ``[C, O/groups, KH, KW]``, output ``[N, O, OH, OW]`` with ``out_hw = (OH, OW)`` from the
    graph (it includes ``output_padding``).

    Computed as a convolution over the input with ``stride - 1`` zeros inserted
    between elements (a ``_pad`` stage), read with the kernel flipped.
    """
    N, C, H, W = data.shape
    _, og, KH, KW = kernel.shape
    sh, sw = strides
    dh, dw = dilations
    OH, OW = out_hw
    ekh, ekw = (KH - 1) * dh + 1, (KW - 1) * dw + 1
    pt, pl = pads[0], pads[1]
    Hd, Wd = OH + pt + ekh - 1, OW + pl + ekw - 1
    zero = ir.const(0.0, data.dtype)

    def dilate(n, c, u, v):
        i, j = u - (ekh - 1), v - (ekw - 1)
        ok = ir.logical_and(i >= 0, j >= 0, ir.eq(i % sh, 0), ir.eq(j % sw, 0), i < (H - 1) * sh + 1,
                            j < (W - 1) * sw + 1)
        return te.if_then_else(ok, data[n, c, i // sh, j // sw], zero)
    dilated = te.compute((N, C, Hd, Wd), dilate, name=name + "_pad")
    cg = C // groups
    ic = te.reduce_axis(cg, "ic")
    kh = te.reduce_axis(KH, "kh")
    kw = te.reduce_axis(KW, "kw")
    return te.compute(
        (N, og * groups, OH, OW),
        lambda n, o, y, x: te.sum(
            dilated[n, (o // og) * cg + ic, y + pt + ekh - 1 - kh * dh, x + pl + ekw - 1 - kw * dw]
            * kernel[(o // og) * cg + ic, o % og, kh, kw], axis=(ic, kh, kw)),
        name=name)


def _divisor_at_most(n: int, cap: int) -> int:
    for f in range(min(n, cap), 0, -1):
        if n % f == 0:
            return f
    return 1


def _tile_width(ow: int, cap: int) -> int:
    """A column tile: a divisor of ``ow`` near ``cap`` if there is a good one, else ``cap``."""
    f = _divisor_at_most(ow, cap)
    return f if f * 2 > cap or f == ow else min(cap, ow)


def _parallel_outer(s, stage, axes, par_depth: int):
    """Fuse the first ``par_depth`` of ``axes`` into one parallel loop (the rest stay serial
    inside it): 3 (today's choice) parallelises (n, channel block, row), 2 only (n, channel
    block), so each thread runs whole channel blocks (coarser grain, fewer tasks)."""
    if par_depth not in (2, 3):
        raise ValueError(f"par_depth must be 2 or 3, not {par_depth!r}")
    fused = s[stage].fuse(*axes[:par_depth])
    s[stage].parallel(fused)
    return fused


def schedule_conv2d_nchwc(s, conv, out, ow_tile: int = 14, par_depth: int = 3):
    """Schedule the blocked convolution ``conv`` (or :func:`conv2d_nchw`'s blocked
    accumulation stored as it is, reduction (ic, kh, kw)) whose (elementwise) consumer chain ends in
    ``out`` (``out`` may be ``conv``). Stages between them must already be inlined.

    Loop nest: parallel over (n, oc-block, oh) (``par_depth`` 3; 2: over (n, oc-block); 0:
    all on the calling thread, the padded copy too),
    then ow tiles; per tile an ``ow_tile x ob`` accumulator (unrolled x vectorised)
    runs over the reduction ic, kh, kw, ii; the epilogue stores the tile.
    """
    N, Oc, OH, OW, ob = conv.shape
    reg = _tile_width(OW, ow_tile)
    if out is conv:
        acc = s.cache_write(conv, "local")
        out_t = conv
    else:
        acc = conv
        out_t = out
    n, oc, oh, ow, oi = s[out_t].op.axis
    owo, owi = s[out_t].split(ow, factor=reg)
    s[out_t].reorder(n, oc, oh, owo, owi, oi)
    s[out_t].unroll(owi)
    s[out_t].vectorize(oi)
    if par_depth:
        _parallel_outer(s, out_t, (n, oc, oh), par_depth)
    s[acc].compute_at(s[out_t], owo)
    an, aoc, aoh, aow, aoi = s[acc].op.axis
    s[acc].reorder(*s[acc].op.reduce_axis, aow, aoi)
    s[acc].unroll(aow)
    s[acc].vectorize(aoi)
    if par_depth:
        _schedule_pad(s, conv)
    return s


def schedule_conv2d_nchw(s, conv, out, ow_tile: int = 14, parallel_pad: bool = True,
                         par_depth: int = 3):
    """Schedule :func:`conv2d_nchw`: ``conv`` is its blocked accumulation, ``out`` the NCHW
    epilogue stage that reads it (the unpacking and any elementwise consumers inlined).

    Per (n, oc block, row) in parallel (``par_depth`` 3; 2: per (n, oc block), the rows
    serial inside; 0: all on the calling thread, no fork-join, the padded copy too) and
    per column tile: an ``ow_tile x ob``
    accumulator (unrolled over columns, vectorised over the ``ob`` output
    channels) runs over the reduction (ic, kh, kw); the epilogue stores it
    channel by channel, vectorised along the columns. The zero-padded input is
    copied at the root, in parallel unless ``parallel_pad`` is False (a small copy,
    such as a 3-channel stem's, costs less on one thread than a fork-join).
    """
    N, Ob, OH, OW, ob = conv.shape
    reg = _tile_width(OW, ow_tile)
    n, o, oh, ow = s[out].op.axis
    oo, oi = s[out].split(o, factor=ob)
    owo, owi = s[out].split(ow, factor=reg)
    s[out].reorder(n, oo, oh, owo, oi, owi)
    s[out].unroll(oi)
    s[out].vectorize(owi)
    if par_depth:
        _parallel_outer(s, out, (n, oo, oh), par_depth)
    s[conv].compute_at(s[out], owo)
    an, ao, aoh, aow, aoi = s[conv].op.axis
    s[conv].reorder(*s[conv].op.reduce_axis, aow, aoi)
    s[conv].unroll(aow)
    s[conv].vectorize(aoi)
    if parallel_pad and par_depth:
        _schedule_pad(s, conv)
    return s


def schedule_conv2d_cols(s, conv, out, ob: int, cols: int, par_depth: int = 3):
    """Schedule :func:`conv2d_nchw_cols`: ``conv`` is its accumulation, ``out`` the stage
    storing it (elementwise consumers inlined; ``out`` may be ``conv``), ``ob`` the packed
    kernel's block (a last, partial block where it does not divide O is guarded).

    Per (n, ``ob``-channel block, row) in parallel (``par_depth`` 3; 2: per (n, block); 0:
    all on the calling thread) and
    per tile of ``cols`` columns (the largest divisor of W up to ``cols``: a tail tile would
    run scalar): an
    ``ob x cols`` accumulator (unrolled over channels, vectorised over columns) runs over
    the input channels, each step one contiguous load of ``cols`` input columns and one
    broadcast weight per channel; the epilogue stores each channel's ``cols`` columns as
    one contiguous vector. Where the channel-vectorised :func:`schedule_conv2d_nchw`
    transposes its tile on the way out (a strided gather per output channel, as costly as
    the FMAs when C is small), this one stores rows as they are. MobileNetV2's 1x1 16 -> 96
    conv at 112x112, 1 thread, AVX2 (znver1), thread CPU time on a loaded machine: 2504 us
    (ob 8) / 3101 us (ob 16) -> 1700 us (ob 4, cols 16).

    """
    cols = _divisor_at_most(conv.shape[3], cols)
    acc, out_t = (s.cache_write(conv, "local"), conv) if out is conv else (conv, out)
    n, o, h, w = s[out_t].op.axis
    oo, oi = s[out_t].split(o, factor=ob)
    wo, wi = s[out_t].split(w, factor=cols)
    s[out_t].reorder(n, oo, h, wo, oi, wi)
    s[out_t].unroll(oi)
    s[out_t].vectorize(wi)
    if par_depth:
        _parallel_outer(s, out_t, (n, oo, h), par_depth)
    s[acc].compute_at(s[out_t], wo)
    an, ao, ah, aw = s[acc].op.axis
    s[acc].reorder(*s[acc].op.reduce_axis, an, ao, ah, aw)
    s[acc].unroll(ao)
    s[acc].vectorize(aw)
    return s


#: the longest padded row that ``schedule_depthwise_nchw`` copies as one vector (longer
#: rows stay scalar loops for LLVM to vectorise)
PAD_ROW_VECTOR_MAX = 256


def schedule_depthwise_nchw(s, conv, out, ow_vec: int = 16, par_depth: int = 3):
    """Schedule depthwise / grouped convolutions: parallel over (n, channel, row)
    (``par_depth`` 3; 2: over (n, channel), rows serial inside), columns vectorised by
    ``ow_vec`` (4: one 128-bit fp32 vector) with the accumulator in registers.

    The zero-padded input is copied inside the parallel loop, per task (the rows that
    task reads), not at the root: one fork-join per layer instead of two (on 2 threads
    each fork-join wakes the second thread from a futex sleep, about 17 us; MobileNetV2
    has 17 depthwise layers). Each padded row (up to ``PAD_ROW_VECTOR_MAX`` columns) is
    copied as one vector: ``loop_partition`` cuts the border off, so the interior is a
    plain vector copy, and with a column stride 2 the phase-split row reads every other
    input column (one wide load and a shuffle). MobileNetV2's stride-2 layers at 1 thread,
    CPU time, loaded machine: 56x56x144 173 -> 88 us, 28x28x192 80 -> 51 us, 14x14x576
    72 -> 47 us (112x112x96 unchanged, 344 us)."""
    N, O, OH, OW = conv.shape
    vec = _tile_width(OW, ow_vec)
    acc, out_t = (s.cache_write(conv, "local"), conv) if out is conv else (conv, out)
    n, o, oh, ow = s[out_t].op.axis
    owo, owi = s[out_t].split(ow, factor=vec)
    s[out_t].vectorize(owi)
    fused = _parallel_outer(s, out_t, (n, o, oh), par_depth)
    s[acc].compute_at(s[out_t], owo)
    an, ao, aoh, aow = s[acc].op.axis
    s[acc].reorder(*s[acc].op.reduce_axis, aow)
    s[acc].vectorize(aow)
    if par_depth == 3:
        _schedule_pad(s, conv)
        return s
    _pad_per_task(s, conv, out_t, fused)
    return s


def _pad_per_task(s, conv, out_t, fused):
    """Compute ``conv``'s padded input inside each parallel task ``fused`` of ``out_t``
    (the rows that task reads), its innermost axis vectorised when it is at most
    ``PAD_ROW_VECTOR_MAX`` elements (a row, or a channel block)."""
    for t in conv.op.reads():
        if t.op.name.endswith("_pad") and hasattr(t.op, "axis"):
            s[t].compute_at(s[out_t], fused)
            if t.shape[-1] <= PAD_ROW_VECTOR_MAX:
                s[t].vectorize(t.op.axis[-1])


def _schedule_pad(s, conv):
    """Materialise the padded input at the root, parallel over its outer axes."""
    for t in conv.op.reads():
        if t.op.name.endswith("_pad") and hasattr(t.op, "axis"):
            ax = t.op.axis
            s[t].parallel(s[t].fuse(ax[0], ax[1]))
            if len(ax) == 5 and t.shape[4] in (4, 8, 16):   # NCHW{b}c block
                s[t].vectorize(ax[4])
