"""What every CPU int8 kernel shares: the kernel ABI, the map and copy schedules, and the
requantizing epilogue (shift or multiplier tables, zero point, relu, clip to int8).

ABI as ``compiler.graph_lower.lower``: inputs, then ``KernelDef.constants`` (weights,
biases, shift tables, as numpy arrays the caller stores as params), then workspace
buffers, then the output. The integer semantics are those of
``compiler.quant.qgraph.eval_node`` (``generic.py`` lists them per step).
"""
from __future__ import annotations

import numpy as np

from compiler import te
from compiler.graph_lower.lower import KernelDef
from compiler.tir import ir

from .. import ort_requant

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


def _bias(bias: np.ndarray, comp: np.ndarray, padded: int) -> np.ndarray:
    """bias - compensation, wrapping as int32, zero-padded to ``padded`` channels."""
    out = np.zeros(padded, np.int32)
    b = np.asarray(bias, np.int64) - comp.astype(np.int64)
    out[:len(b)] = ((b + 2**31) % 2**32 - 2**31).astype(np.int32)
    return out


def _epilogue(acc_value, b, o, requant):
    """int32 acc + bias (wrapping) -> int8 through ``requant`` (:func:`requant8`: the
    shift and multiplier, or onnxruntime's float32 scale, then the output's zero point,
    relu, clip)."""
    s = te.cast(te.cast(acc_value, "uint32") + te.cast(b[o], "uint32"), "int32")
    return requant(s, o)
