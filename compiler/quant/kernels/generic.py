"""The CPU steps of an accelerator plan as scheduled ``te`` kernels (``KernelDef``s), on any CPU.

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

ABI and the requantizing epilogue: ``common.py``. CONV2D and DENSE here are the plain
widening path; ``vnni.py`` and ``amx.py`` are the others, ``select.py`` picks.
"""
from __future__ import annotations

import numpy as np

from compiler import te
from compiler.graph_lower.lower import KernelDef
from compiler.tir import ir
from compiler.topi import conv2d as tconv
from compiler.topi import dense as tdense
from compiler.topi.nn_util import pad_spatial

from .. import ort_requant
from ..lut import scale_of
from ..qgraph import QNode
from .common import (_clip8, _kernel, _out_table, _shift_right, _simple, requant8,
                     schedule_copy, schedule_map)

#: the longest depthwise output row vectorised whole (int32 accumulators in registers;
#: MobileNetV2's 56, 28, 14, 7: 56 is 1.3x faster whole than in tiles of 14); longer rows
#: in tiles of 16 (112: 1.1x faster than in halves)
DEPTHWISE_ROW = 64


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
