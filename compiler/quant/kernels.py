"""The CPU steps of an accelerator plan as scheduled ``te`` kernels (``KernelDef``s).

One function per kind of step, each the exact integer semantics of
``compiler.quant.qgraph.eval_node`` (and ``compiler.topi.vta.layout``):

    QUANTIZE    float32 x -> int8: clip(round_half_even(x * 2**exp) + zp, -128, 127)
                (``round`` is LLVM's ``roundeven``, numpy's ``rint``; scaling by a power of
                two is exact in float32: overflow saturates and underflow rounds to 0 as
                in the oracle's float64; a float exp, a model's own
                scale, multiplies by float32(2**exp) in float32, as the oracle does)
    DEQUANTIZE  int8 q -> float32 (q - zp) * 2**-exp
    CONV2D      int8 NCHW x, int8 weight packed ``[O/ob, C, KH, KW, ob]``, int32 bias (O,):
                products and bias summed in uint32 (two's-complement wrapping, as the
                accumulator's int32 with no undefined overflow), read back as int32, then
                ``>> shift`` as floor(acc * 2**-shift) in float64 (exact: |acc| < 2**31),
                [mult and post: ``layout.requantize``], + zp, relu (max zp), clip, int8. Per-channel
                shifts read a float64 (O,) table of 2**-shift, multipliers an int32 one.
    DENSE       the same on (N, C) x (O, C), the weight packed ``[O/nb, C, nb]``
    ADD         ((a << la) + (b << lb) + round) in wrapping uint32, >> shift, relu, clip
    MEAN        floor((sum + HW // 2) / HW) over the axes after the first two (int32 sum)
    pack        NCHW (or dense (N, C), or (B, S, C), as the (1, C, 1, N) image) int8 -> ``(N/B, C/BI, H, W,
                B, BI)``, zero-padded (``layout.pack_nchw``, ``partition.pack_value``)
    unpack      the inverse, cropped to the real N and C (``partition.unpack_value``)

INT8 and FLOAT graph ops go through the CPU graph lowering
(``compiler.graph_lower.lower_group`` on a one-node FUSED group): :func:`graph_op_kernel`.

ABI as ``compiler.graph_lower.lower``: inputs, then ``KernelDef.constants`` (weights,
biases, shift tables, as numpy arrays the caller stores as params), then workspace
buffers, then the output.
"""
from __future__ import annotations

import numpy as np

from compiler import te
from compiler.graph_lower.lower import KernelDef
from compiler.tir import ir
from compiler.topi import conv2d as tconv
from compiler.topi import dense as tdense
from compiler.topi.nn_util import pad_spatial

from . import ort_requant
from .lut import scale_of
from .qgraph import QNode, QOp

#: the longest depthwise output row vectorised whole (int32 accumulators in registers;
#: MobileNetV2's 56, 28, 14, 7: 56 is 1.3x faster whole than in tiles of 14); longer rows
#: in tiles of 16 (112: 1.1x faster than in halves)
DEPTHWISE_ROW = 64

#: outputs smaller than this (elements) run on one thread: a parallel region costs more
#: than these few microseconds of work save, and on a loaded machine each region can
#: wait a scheduler time slice for its last thread
PARALLEL_MIN = 1 << 20


def schedule_map(s, out):
    """Elementwise kernels (quantize, dequantize, add, mean): the last axis vectorised by 16
    when it divides, the outer axes fused and parallel from ``PARALLEL_MIN`` elements."""
    axes = list(s[out].op.axis)
    if out.shape[-1] % 16 == 0:
        outer, inner = s[out].split(axes[-1], factor=16)
        s[out].vectorize(inner)
        axes[-1] = outer
    _parallel_outer(s, out, axes)


def schedule_copy(s, out):
    """Layout moves (pack, unpack): plain loops in output order (no gathers into vector
    lanes: strided reads are cheaper one by one), parallel from ``PARALLEL_MIN``."""
    _parallel_outer(s, out, list(s[out].op.axis))


def _parallel_outer(s, out, axes):
    if int(np.prod(out.shape)) >= PARALLEL_MIN and len(axes) >= 2:
        s[out].parallel(s[out].fuse(*axes[:-1]) if len(axes) > 2 else axes[0])


def _kernel(s, inputs, out, pattern, constants=(), workspace=()) -> KernelDef:
    """The KernelDef of schedule ``s``: ``inputs``, ``constants`` (``(placeholder, numpy
    array)`` pairs), ``workspace`` tensors, then ``out``."""
    return KernelDef(s, list(inputs) + [c for c, _ in constants] + list(workspace) + [out],
                     n_inputs=len(inputs), packs=[None] * len(inputs), workspace=list(workspace),
                     pattern=pattern, constants=[v for _, v in constants])


def _simple(out, inputs, schedule=schedule_map, pattern="injective") -> KernelDef:
    s = te.create_schedule(out)
    schedule(s, out)
    return _kernel(s, inputs, out, pattern)


def _clip8(v, relu: bool, zero: int = 0, lo: int = -128, hi: int = 127):
    """int32 ``v`` + ``zero`` (the output's zero point) -> int8 with optional relu (max
    ``zero``), saturating as ``layout.requantize`` (to [``lo``, ``hi``]: a fused clamp table's
    bounds, ``requant8``)."""
    lo = max(zero, lo) if relu else lo
    if zero:
        v = v + ir.const(zero, "int32")
    return te.cast(te.minimum(te.maximum(v, ir.const(lo, "int32")), ir.const(hi, "int32")), "int8")


def _out_table(a: dict):
    """(int8 expr -> int8 expr, constants): a LUT's map (attr ``table``; a conv's fused
    one, ``lut.fuse_tables``, read after its clip), or the identity. A Clip's table (attr
    ``clip``: s_in, z_in, lo, hi, s_out, z_out) is computed as it was made, in float32 (the
    same operations, so the same values, vectorised); any other is a gather."""
    if a.get("clip") is not None:
        s_in, z_in, lo, hi, s_out, z_out = (ir.const(float(v), "float32") for v in a["clip"])
        i8lo, i8hi = ir.const(-128.0, "float32"), ir.const(127.0, "float32")

        def clip_map(v):
            x = (te.cast(v, "float32") - z_in) * s_in
            y = te.minimum(te.maximum(x, lo), hi) / s_out
            return te.cast(te.minimum(te.maximum(ir.call("round", "float32", y) + z_out, i8lo),
                                      i8hi), "int8")
        return clip_map, []
    if a.get("table") is None:
        return (lambda v: v), []
    t = te.placeholder((256,), "int8", "table")
    return (lambda v: t[te.cast(v, "int32") + 128]), [(t, np.asarray(a["table"], np.int8))]


def _shift_right(acc, scale):
    """int32 ``acc >> shift`` (arithmetic, any shift >= 0) as floor(acc * 2**-shift) in
    float64: exact for every int32, and vectorisable (no integer division)."""
    return te.cast(te.floor(te.cast(acc, "float64") * scale), "int32")


def quantize(shape, exp: int, name="quantize", zp: int = 0) -> KernelDef:
    """float32 ``shape`` -> int8 at exponent ``exp`` and zero point ``zp``."""
    x = te.placeholder(shape, "float32", "x")
    z = ir.const(float(zp), "float32")
    lo, hi = ir.const(-128.0, "float32"), ir.const(127.0, "float32")
    if float(exp) == int(exp):      # a power of two: the exact product
        scaled = lambda v: v * ir.const(2.0 ** exp, "float32")  # noqa: E731
    else:                           # a model's own scale: onnxruntime's x / scale
        scaled = lambda v: v / ir.const(float(scale_of(exp)), "float32")  # noqa: E731
    out = te.compute(shape, lambda *i: te.cast(te.minimum(te.maximum(
        ir.call("round", "float32", scaled(x[i])) + z, lo), hi), "int8"), name=name)
    return _simple(out, [x])


def dequantize(shape, exp: int, name="dequantize", zp: int = 0) -> KernelDef:
    """int8 ``shape`` at exponent ``exp`` and zero point ``zp`` -> float32."""
    q = te.placeholder(shape, "int8", "q")
    scale, z = ir.const(2.0 ** -exp, "float32"), ir.const(float(zp), "float32")
    out = te.compute(shape, lambda *i: (te.cast(q[i], "float32") - z) * scale, name=name)
    return _simple(out, [q])


def _requant_tables(shift, channels: int):
    """(expr of channel -> float64 scale, constants): a literal for a per-tensor shift, a
    float64 (O,) table of 2**-shift for per-channel shifts."""
    if isinstance(shift, (tuple, list)):
        if len(shift) != channels:
            raise ValueError(f"per-channel shift has {len(shift)} entries, the node {channels} "
                             "output channels")
        table = te.placeholder((channels,), "float64", "shift")
        return (lambda o: table[o]), [(table, 2.0 ** -np.asarray(shift, np.float64))]
    c = ir.const(2.0 ** -int(shift), "float64")
    return (lambda o: c), []


def _requant(a: dict, channels: int):
    """(function ``(int32 acc, channel) -> int32``, constants): ``>> shift`` and, with attrs
    ``mult``/``post``, the multiplier's steps (``layout.requantize``: int32 products, exact
    as on the accelerator; the importer keeps them inside int32)."""
    scale, tables = _requant_tables(a["shift"], channels)
    if a.get("mult") is None:
        return (lambda v, o: _shift_right(v, scale(o))), tables
    mult = a["mult"]
    if isinstance(mult, (tuple, list)):
        table = te.placeholder((channels,), "int32", "mult")
        tables = tables + [(table, np.asarray(mult, np.int32))]
        m = lambda o: table[o]  # noqa: E731
    else:
        m = lambda o: ir.const(int(mult), "int32")  # noqa: E731
    first = ir.const(2.0 ** -(int(a["post"]) - 15), "float64")
    last, half = ir.const(2.0 ** -15, "float64"), ir.const(1 << 14, "int32")

    def f(v, o):
        t = _shift_right(_shift_right(v, scale(o)) * m(o), first)
        return _shift_right(t + half, last)
    return f, tables


def table_clamp(table) -> "tuple[int, int] | None":
    """(lo, hi) when the 256-entry int8 ``table`` is ``clip(q, lo, hi)`` (a Clip / Relu6
    between equal scales and zero points), else None."""
    t = np.asarray(table, np.int64)
    lo, hi = int(t[0]), int(t[-1])
    clamp = lo <= hi and np.array_equal(t, np.clip(np.arange(-128, 128), lo, hi))
    return (lo, hi) if clamp else None


def requant8(a: dict, channels: int, zero: int):
    """(function ``(int32 acc, channel) -> int8``, constants): the whole epilogue after the
    bias: onnxruntime's float32 requantization where the node carries ``fscale``
    (``ort_requant``), else :func:`_requant`; then + ``zero``, relu, clip and the node's
    fused table (``lut.fuse_tables``): a clamp table only narrows the clip, any other is
    read after it (:func:`_out_table`)."""
    table = a.get("table")
    bounds = table_clamp(table) if table is not None else None
    lo, hi = bounds or (-128, 127)
    if a.get("fscale") is not None:
        f, consts = ort_requant.requant_expr(a, channels, zero, lo, hi)
    else:
        requant, consts = _requant(a, channels)
        f = lambda v, o: _clip8(requant(v, o), a["relu"], zero, lo, hi)  # noqa: E731
    if table is None or bounds is not None:
        return f, consts
    lut, lut_consts = _out_table(a)
    return (lambda v, o: lut(f(v, o))), consts + lut_consts


def conv2d(node: QNode, x_shape, weight: np.ndarray, bias: np.ndarray,
           name="conv2d") -> KernelDef:
    """Int8 CONV2D (module docstring) of NCHW ``x_shape`` with OIHW ``weight`` (int8) and
    ``bias`` ((O,) int32); attrs strides, padding (symmetric h, w), shift, relu.

    Schedule: ``topi.conv2d.schedule_conv2d_nchw``'s register tile, the padded input copied
    on one thread (a workspace buffer; the stem's is 3 x 230 x 230 bytes)."""
    a = node.attrs
    O, C, KH, KW = weight.shape
    ob = tconv.conv_out_block(O)
    x = te.placeholder(x_shape, "int8", "x")
    w = te.placeholder((O // ob, C, KH, KW, ob), "int8", "w")
    b = te.placeholder((O,), "int32", "bias")
    requant, tables = requant8(a, O, node.zp)
    (sh, sw), (ph, pw) = a["strides"], a["padding"]
    N, _, H, W = x_shape
    OH, OW = (H + 2 * ph - KH) // sh + 1, (W + 2 * pw - KW) // sw + 1
    padded = pad_spatial(x, (ph, pw, ph, pw), 2, value=a.get("pad_zp") or 0, name=name + "_pad")
    ic, kh, kw = te.reduce_axis(C, "ic"), te.reduce_axis(KH, "kh"), te.reduce_axis(KW, "kw")
    acc = te.compute(
        (N, O // ob, OH, OW, ob),
        lambda n, oc, oh, ow, oi: te.sum(
            te.cast(padded[n, ic, oh * sh + kh, ow * sw + kw], "uint32")
            * te.cast(w[oc, ic, kh, kw, oi], "uint32"), axis=(ic, kh, kw)),
        name=name + "_acc")

    def epilogue(n, o, oh, ow):
        s = te.cast(acc[n, o // ob, oh, ow, o % ob] + te.cast(b[o], "uint32"), "int32")
        return requant(s, o)
    out = te.compute((N, O, OH, OW), epilogue, name=name)
    s = te.create_schedule(out)
    tconv.schedule_conv2d_nchw(s, acc, out, parallel_pad=False)
    workspace = [padded] if padded is not x else []
    packed = tconv.pack_conv_kernel(np.asarray(weight, np.int8), ob)
    consts = [(w, packed), (b, np.ascontiguousarray(bias, np.int32))] + tables
    return _kernel(s, [x], out, "conv", consts, workspace)


def depthwise(node: QNode, x_shape, weight: np.ndarray, bias: np.ndarray,
              name="depthwise") -> KernelDef:
    """Int8 DEPTHWISE of NCHW ``x_shape`` with ``weight`` (C, 1, KH, KW) int8 and ``bias``
    (C,) int32 (``qgraph`` docstring). Products in int16 (|x w| <= 2**14), summed in int32,
    which LLVM selects as AVX-512 widening multiply-adds; columns vectorised (a whole row
    up to ``DEPTHWISE_ROW`` columns), rows and channels in parallel
    (``topi.conv2d.schedule_depthwise_nchw``), the requantizing epilogue per vector of
    columns."""
    a = node.attrs
    C, _, KH, KW = weight.shape
    x = te.placeholder(x_shape, "int8", "x")
    w = te.placeholder((C, KH, KW), "int8", "w")
    b = te.placeholder((C,), "int32", "bias")
    requant, tables = requant8(a, C, node.zp)
    (sh, sw), (ph, pw) = a["strides"], a["padding"]
    N, _, H, W = x_shape
    OH, OW = (H + 2 * ph - KH) // sh + 1, (W + 2 * pw - KW) // sw + 1
    if sw > 1:      # column phases: every tap reads consecutive columns
        padded = _column_phases(x, (ph, pw), sw, OW + (KW - 1) // sw, name + "_phases",
                                a.get("pad_zp") or 0)
        tap = lambda n, c, h, ow, kw: padded[n, c, h, kw % sw, ow + kw // sw]  # noqa: E731
    else:
        padded = pad_spatial(x, (ph, pw, ph, pw), 2, value=a.get("pad_zp") or 0,
                             name=name + "_pad")
        tap = lambda n, c, h, ow, kw: padded[n, c, h, ow + kw]  # noqa: E731
    kh, kw = te.reduce_axis(KH, "kh"), te.reduce_axis(KW, "kw")
    acc = te.compute((N, C, OH, OW), lambda n, c, oh, ow: te.sum(te.cast(
        te.cast(tap(n, c, oh * sh + kh, ow, kw), "int16") * te.cast(w[c, kh, kw], "int16"),
        "int32"), axis=(kh, kw)), name=name + "_acc")
    out = te.compute((N, C, OH, OW), lambda n, c, oh, ow: requant(acc[n, c, oh, ow] + b[c], c),
                     name=name)
    s = te.create_schedule(out)
    tconv.schedule_depthwise_nchw(s, acc, out, ow_vec=OW if OW <= DEPTHWISE_ROW else 16)
    if sw > 1:
        ax = s[padded].op.axis
        s[padded].parallel(s[padded].fuse(ax[0], ax[1]))
    workspace = [padded] if padded is not x else []
    consts = [(w, np.ascontiguousarray(np.asarray(weight, np.int8)[:, 0])),
              (b, np.ascontiguousarray(bias, np.int32))] + tables
    return _kernel(s, [x], out, "conv", consts, workspace)


def _column_phases(x, padding, stride: int, width: int, name: str, fill: int = 0):
    """NCHW int8 ``x`` padded by ``padding`` (ph, pw) with ``fill`` and split by column
    phase: ``[N, C, H + 2ph, stride, width]`` with ``[n, c, h, p, j]`` the padded ``[n, c,
    h, j * stride + p]`` (``fill`` past the right edge). A stride-``stride`` conv's tap
    ``ow * stride + kw`` is phase ``kw % stride``, column ``ow + kw // stride``: consecutive for consecutive ow."""
    N, C, H, W = x.shape
    ph, pw = padding

    def f(n, c, h, p, j):
        row, col = h - ph, j * stride + p - pw
        inside = ir.logical_and(row >= 0, row < H, col >= 0, col < W)
        return te.if_then_else(inside, x[n, c, row, col], ir.const(fill, "int8"))
    return te.compute((N, C, H + 2 * ph, stride, width), f, name=name)


def dense(node: QNode, x_shape, weight: np.ndarray, bias: np.ndarray, name="dense") -> KernelDef:
    """Int8 DENSE: ``x_shape`` (N, C) int8, ``weight`` (O, C) int8, ``bias`` (O,) int32 ->
    (N, O) int8 (module docstring; ``topi.dense.schedule_dense``)."""
    a = node.attrs
    O, C = weight.shape
    nb = tdense.dense_block(O)
    x = te.placeholder(x_shape, "int8", "x")
    w = te.placeholder((O // nb, C, nb), "int8", "w")
    b = te.placeholder((O,), "int32", "bias")
    requant, tables = requant8(a, O, node.zp)
    k = te.reduce_axis(C, "k")
    acc = te.compute((x_shape[0], O), lambda i, j: te.sum(
        te.cast(x[i, k], "uint32") * te.cast(w[j // nb, k, j % nb], "uint32"), axis=k),
        name=name + "_acc")
    out = te.compute((x_shape[0], O), lambda i, j: requant(
        te.cast(acc[i, j] + te.cast(b[j], "uint32"), "int32"), j), name=name)
    s = te.create_schedule(out)
    tdense.schedule_dense(s, acc, out)
    consts = [(w, tdense.pack_dense_weight(np.asarray(weight, np.int8), nb)),
              (b, np.ascontiguousarray(bias, np.int32))] + tables
    return _kernel(s, [x], out, "dense", consts)


def add(node: QNode, name="add") -> KernelDef:
    """Int8 ADD of two int8 tensors of ``node.shape`` (attrs la, lb, shift >= 0, relu)."""
    a = node.attrs
    shape = node.shape
    x, y = te.placeholder(shape, "int8", "a"), te.placeholder(shape, "int8", "b")
    shift = int(a["shift"])
    rnd = (1 << (shift - 1)) % (1 << 32) if shift else 0

    def shl(v, n):   # (v << n) mod 2**32; shifts of 32 or more leave nothing
        return te.cast(v, "uint32") * ir.const((1 << n) % (1 << 32), "uint32")
    scale = ir.const(2.0 ** -shift, "float64")
    out = te.compute(shape, lambda *i: _clip8(_shift_right(te.cast(
        shl(x[i], a["la"]) + shl(y[i], a["lb"]) + ir.const(rnd, "uint32"), "int32"), scale),
        a["relu"]), name=name)
    return _simple(out, [x, y])


def rescale_add(node: QNode, name="rescale_add") -> KernelDef:
    """Int8 RESCALE_ADD of two int8 tensors of ``node.shape`` (attrs za, zb, sa, sb, sc;
    ``qgraph`` docstring): onnxruntime's dequantize, float32 add, quantize
    (``ort_requant.add_expr``), 16 lanes."""
    x, y = te.placeholder(node.shape, "int8", "a"), te.placeholder(node.shape, "int8", "b")
    f = ort_requant.add_expr(node.attrs, node.zp)
    out = te.compute(node.shape, lambda *i: f(x[i], y[i]), name=name)
    return _simple(out, [x, y])


def lut(node: QNode, name="lut") -> KernelDef:
    """Int8 LUT of ``node.shape``: ``table[x + 128]`` (``_out_table``: a Clip's in float32
    arithmetic, any other table a compile-time constant read by a gather)."""
    x = te.placeholder(node.shape, "int8", "x")
    f, consts = _out_table(node.attrs)
    out = te.compute(node.shape, lambda *i: f(x[i]), name=name)
    s = te.create_schedule(out)
    schedule_map(s, out)
    return _kernel(s, [x], out, "injective", consts)


def mean(node: QNode, x_shape, name="mean") -> KernelDef:
    """Int8 MEAN of ``x_shape`` over the axes after the first two, kept as size 1; with attrs
    ``fscale`` and ``zin`` onnxruntime's float32 form (``ort_requant``)."""
    x = te.placeholder(x_shape, "int8", "x")
    rest = x_shape[2:]
    hw = int(np.prod(rest))
    rax = [te.reduce_axis(d, f"r{i}") for i, d in enumerate(rest)]
    shape = tuple(x_shape[:2]) + (1,) * len(rest)
    total = te.compute(shape, lambda n, c, *_: te.sum(te.cast(x[(n, c, *rax)], "int32"),
                                                      axis=tuple(rax)), name=name + "_sum")
    if node.attrs.get("fscale") is not None:     # onnxruntime's QLinearGlobalAveragePool
        a, zin = node.attrs, ir.const(int(node.attrs["zin"]) * hw, "int32")
        out = te.compute(shape, lambda *i: ort_requant.to_int8(te.cast(total[i] - zin, "float32")
                                                                * ir.const(a["fscale"], "float32"),
                                                                False, node.zp), name=name)
    else:
        out = te.compute(shape, lambda *i: _clip8(
            (total[i] + ir.const(hw // 2, "int32")) // ir.const(hw, "int32"), False), name=name)

    def schedule(s, out):
        s[total].compute_at(s[out], s[out].op.axis[-1])
    return _simple(out, [x], schedule, "reduce")


def _image(x_shape):
    """The accelerator's NCHW image of a value: dense (N, C) rows, and (B, S, C) rows of a
    3-D value, are pixels of (1, C, 1, N) (N = B*S)."""
    if len(x_shape) == 4:
        return tuple(x_shape)
    return (1, x_shape[-1], 1, int(np.prod(x_shape[:-1])))


def pack(x_shape, packed_shape, name="pack") -> KernelDef:
    """int8 NCHW (or (N, C)) ``x_shape`` -> ``packed_shape`` (N/B, C/BI, H, W, B, BI),
    zero-padded (``partition.pack_value``).

    Raises:
        ValueError: ``packed_shape`` is not the packing of ``x_shape`` (module and plan
            disagree)."""
    NB, CB, H, W, B, BI = packed_shape
    N, C, IH, IW = _image(x_shape)
    if (-(-N // B), -(-C // BI), IH, IW) != (NB, CB, H, W):
        raise ValueError(f"cannot pack a value of shape {list(x_shape)} into {list(packed_shape)}")
    x = te.placeholder(x_shape, "int8", "x")
    S = x_shape[1] if len(x_shape) == 3 else 1
    read = {2: lambda n, c, h, w: x[w, c], 3: lambda n, c, h, w: x[w // S, w % S, c],
            4: lambda n, c, h, w: x[n, c, h, w]}[len(x_shape)]

    def f(nb, cb, h, w, bi, ci):
        n, c = nb * B + bi, cb * BI + ci
        conds = ([n < N] if N % B else []) + ([c < C] if C % BI else [])
        if not conds:
            return read(n, c, h, w)
        return te.if_then_else(ir.logical_and(*conds), read(n, c, h, w), ir.const(0, "int8"))
    out = te.compute(tuple(packed_shape), f, name=name)
    return _simple(out, [x], schedule_copy)


def unpack(packed_shape, shape, name="unpack") -> KernelDef:
    """``packed_shape`` (N/B, C/BO, H, W, B, BO) int8 -> NCHW (or dense (N, C)) ``shape``,
    cropped (``partition.unpack_value``)."""
    _, _, _, _, B, BO = packed_shape
    y = te.placeholder(packed_shape, "int8", "y")
    if len(shape) == 2:   # (1, O, 1, N) image -> (N, O)
        f = lambda n, o: y[0, o // BO, 0, n, 0, o % BO]  # noqa: E731
    elif len(shape) == 3:   # (1, O, 1, B*S) image -> (B, S, O)
        f = lambda b, s, o: y[0, o // BO, 0, b * shape[1] + s, 0, o % BO]  # noqa: E731
    else:
        f = lambda n, c, h, w: y[n // B, c // BO, h, w, n % B, c % BO]  # noqa: E731
    out = te.compute(tuple(shape), f, name=name)
    return _simple(out, [y], schedule_copy)


def _graph_body(node: QNode, src_nodes: list[QNode]):
    """The graph op of INT8 / FLOAT ``node`` on inputs of ``src_nodes``: ``(inputs, op node)``.

    Raises:
        ValueError: the op's output shape differs from ``node.shape``."""
    from compiler.graph import Op
    from compiler.graph.ir import input_node, make
    ins = tuple(input_node(f"p{i}", s.shape, s.dtype) for i, s in enumerate(src_nodes))
    op = Op[node.attrs["op"]]
    body_out = make(op, *ins, label=node.name, **dict(node.attrs["attrs"]))
    if tuple(body_out.shape) != tuple(node.shape):
        raise ValueError(f"node {node.name!r}: {op.name} gives shape {list(body_out.shape)}, the "
                         f"quantized graph says {list(node.shape)}")
    return ins, body_out


def graph_op_kernel(node: QNode, src_nodes: list[QNode], name: str, target=None) -> KernelDef:
    """An INT8 or FLOAT node (a ``compiler.graph`` op on its inputs) through the CPU graph
    lowering: the op in a one-node FUSED group, lowered by ``graph_lower.lower_group`` for
    LLVM ``target`` (default: this machine).

    Raises:
        compiler.graph.GraphError: the op rejects its inputs.
        compiler.graph_lower.LoweringError: the op has no CPU lowering.
    """
    from compiler.graph import Graph, Op
    from compiler.graph.ir import make
    from compiler.graph.passes.fuse_ops import kind_of
    from compiler.graph_lower.lower import lower_group
    ins, body_out = _graph_body(node, src_nodes)
    op = Op[node.attrs["op"]]
    fused = make(Op.FUSED, *ins, label=node.name, body=Graph(ins, (body_out,), ("",)),
                 name=f"fused_{op.name.lower()}", pattern=kind_of(op).name)
    return lower_group(fused, name, target)


def _int8_gemm(node: QNode, src_nodes, params, name: str, target) -> KernelDef:
    """CONV2D / DENSE on the int8 path the target's CPU features allow (``kernels_x86``)."""
    from compiler.codegen.llvm.target import parse_target

    from .kernels_x86 import select
    path = select(parse_target(target or "llvm").features)
    build = path.conv2d if node.op is QOp.CONV2D else path.dense
    return build(node, src_nodes[0].shape, *(params[p] for p in node.params), name=name)


def _int8_maxpool(node: QNode, src_nodes, name: str) -> KernelDef:
    from .kernels_pool import maxpool
    _graph_body(node, src_nodes)    # the shape check
    return maxpool(node, src_nodes[0].shape, src_nodes[0].dtype, name=name)


#: graph op name -> builder ``(node, src_nodes, name) -> KernelDef`` of an INT8 graph op
#: with a kernel of its own (the rest go through the graph lowering)
INT8_GRAPH_KERNELS = {"MAX_POOL": _int8_maxpool}


def _graph_op(node: QNode, src_nodes, params, name: str, target) -> KernelDef:
    if node.attrs["op"] == "PARAM":
        raise ValueError(f"node {node.name!r} ({node.op.value}) has no CPU kernel: a PARAM is a "
                         "constant, stored with the module's params")
    own = INT8_GRAPH_KERNELS.get(node.attrs["op"]) if node.op is QOp.INT8 else None
    if own is not None:
        return own(node, src_nodes, name)
    return graph_op_kernel(node, src_nodes, name, target)


#: QOp -> builder ``(node, src_nodes, params, name, target) -> KernelDef`` of its CPU step
CPU_KERNELS = {
    QOp.QUANTIZE: lambda n, srcs, params, name, target: quantize(n.shape, n.exp, name, n.zp),
    QOp.DEQUANTIZE: lambda n, srcs, params, name, target: dequantize(
        n.shape, n.attrs["src_exp"], name, n.attrs.get("src_zp", 0)),
    QOp.CONV2D: _int8_gemm,
    QOp.DENSE: _int8_gemm,
    QOp.ADD: lambda n, srcs, params, name, target: add(n, name),
    QOp.LUT: lambda n, srcs, params, name, target: lut(n, name),
    QOp.DEPTHWISE: lambda n, srcs, params, name, target: depthwise(
        n, srcs[0].shape, *(params[p] for p in n.params), name=name),
    QOp.RESCALE_ADD: lambda n, srcs, params, name, target: rescale_add(n, name),
    QOp.MEAN: lambda n, srcs, params, name, target: mean(n, srcs[0].shape, name),
    QOp.INT8: _graph_op,
    QOp.FLOAT: _graph_op,
}


def cpu_kernel(node: QNode, src_nodes: list[QNode], params, name: str, target=None) -> KernelDef:
    """The kernel of a ``cpu`` step (:data:`CPU_KERNELS`): node ``node`` reading values of
    ``src_nodes``; graph ops are lowered for LLVM ``target`` (default: this machine), int8
    CONV2D and DENSE on the path its CPU features allow (``kernels_x86.select``: VNNI, else
    plain widening).

    Raises:
        ValueError: an op without a kernel here (INPUT; FLOAT PARAM is a constant, no kernel).
    """
    build = CPU_KERNELS.get(node.op)
    if build is None:
        raise ValueError(f"node {node.name!r} ({node.op.value}) has no CPU kernel; ops with one: "
                         f"{', '.join(op.value for op in CPU_KERNELS)}")
    return build(node, src_nodes, params, name, target)
