"""Float32 requantization, computed the way onnxruntime's CPU kernels compute it.

A QDQ model built for the CPU (``qdq.import_qdq(..., requant="float")``, what
``build_model(model, target="llvm", quantize="int8")`` uses) keeps each conv's, dense
layer's and depthwise conv's requantization as the float32 ratio onnxruntime uses, instead
of the accelerator's integer pre-shift, multiplier and post-shift (the accelerator has no
float unit and keeps those):

    QLinearConv / QGemm (MLAS ``MlasRequantizeOutput``): per output channel
        M = float32(float32(x_scale * w_scale) / y_scale)
        y = clip(round_half_even(float32(acc + bias) * M) + zp, -128, 127)
    DequantizeLinear -> Add -> QuantizeLinear (the adds onnxruntime leaves in float):
        y = clip(round_half_even(float32(float32((a - za) * sa) + float32((b - zb) * sb))
                 / sc) + zc, -128, 127)
    QLinearAdd (MLAS ``MlasQLinearAddKernelAvx2Helper``; the adds it fuses, attr ``qlinear``:
    the offset o from our int8 values to the model's, 128 for uint8), with A = a + o etc.:
        rA = float32(sa / sc), rB = float32(sb / sc),
        F = float32(float32(Zc) - float32(float32(rA * Za) + float32(rB * Zb))),
        y = clip(round_half_even(fma(A, rA, fma(B, rB, F))) - o, -128, 127)
      each fma rounded once to float32 (here: the exact float64 product plus the addend in
      float64, then one rounding to float32: the fma's value unless the float64 sum's own
      rounding lands on a float32 tie)
    QLinearGlobalAveragePool (MLAS): M = float32(s_in / float32(s_out * HW)),
        y = clip(round_half_even(float32(sum(q) - z_in * HW) * M) + z_out, -128, 127)

Node attributes (``qgraph`` docstring): ``fscale`` (a float, or a tuple of one float per
output channel: M as a float32 value) on CONV2D / DENSE / DEPTHWISE / MEAN; ``sa``, ``sb``,
``sc`` (float32 scales) on RESCALE_ADD. This module holds the numpy reference (the
oracle's) and the ``te`` expressions the CPU kernels use (16 float32 lanes per vector:
sitofp, fmul, roundeven, fmax/fmin, fptosi), which compute the same float32 operations in
the same order, so the two agree bit for bit.
"""
from __future__ import annotations

import numpy as np

from compiler import te
from compiler.tir import ir


def conv_ratio(sx: np.float32, sw, sy: np.float32) -> np.ndarray:
    """onnxruntime's QLinearConv / QGemm output scale per channel: float32((sx * sw) / sy)."""
    sw = np.asarray(sw, np.float32)
    return (np.float32(sx) * sw) / np.float32(sy)


def mean_ratio(s_in: np.float32, s_out: np.float32, hw: int) -> np.float32:
    """QLinearGlobalAveragePool's scale: float32(s_in / float32(s_out * HW))."""
    return np.float32(s_in) / (np.float32(s_out) * np.float32(hw))


def exact_weight_scales(w: np.ndarray, q: np.ndarray, s: np.ndarray) -> np.ndarray:
    """The float32 weight scale per output channel that DequantizeLinear used: ``w`` (the
    dequantized float32 weights, [O, ...]) equals ``float32(q * s)``. ``s`` (O,) is an
    estimate (``max|w| / 127``); it and its neighbours within 2 ulps are tried per channel,
    the first that reproduces every weight wins (else the estimate stays)."""
    w32 = np.asarray(w, np.float32).reshape(len(s), -1)
    q32 = np.asarray(q, np.float32).reshape(len(s), -1)
    out = np.asarray(s, np.float32).copy()
    for o in range(len(out)):
        c = out[o]
        for cand in (c, np.nextafter(c, np.float32(np.inf)), np.nextafter(c, np.float32(0)),
                     np.nextafter(np.nextafter(c, np.float32(np.inf)), np.float32(np.inf)),
                     np.nextafter(np.nextafter(c, np.float32(0)), np.float32(0))):
            if np.array_equal(q32[o] * cand, w32[o]):
                out[o] = cand
                break
    return out


def _per_channel(v, ndim: int) -> np.ndarray:
    v = np.asarray(v, np.float32)
    return v.reshape((1, -1) + (1,) * (ndim - 2)) if v.ndim else v


def requantize(acc: np.ndarray, fscale, relu: bool, zero: int) -> np.ndarray:
    """int32 ``acc`` [N, C, ...] -> int8: round_half_even(float32(acc) * fscale) + ``zero``,
    relu (max ``zero``), clip to [-128, 127]. ``fscale``: a float or one per channel (axis
    1)."""
    f = np.asarray(acc, np.int32).astype(np.float32) * _per_channel(fscale, np.ndim(acc))
    y = np.rint(f).astype(np.float64) + zero
    if relu:
        y = np.maximum(y, zero)
    return np.clip(y, -128, 127).astype(np.int8)


def qlinear_add_consts(attrs: dict, zero: int) -> tuple:
    """(o, rA, rB, F) of QLinearAdd (module docstring) as Python floats (float32 values)."""
    o, f = attrs["qlinear"], np.float32
    ra, rb = f(f(attrs["sa"]) / f(attrs["sc"])), f(f(attrs["sb"]) / f(attrs["sc"]))
    fixed = f(f(zero + o) - f(f(ra * f(attrs["za"] + o)) + f(rb * f(attrs["zb"] + o))))
    return o, float(ra), float(rb), float(fixed)


def add(a: np.ndarray, b: np.ndarray, attrs: dict, zero: int) -> np.ndarray:
    """RESCALE_ADD in float32 (module docstring): attrs za, zb, sa, sb, sc; with ``qlinear``
    onnxruntime's QLinearAdd."""
    if attrs.get("qlinear") is not None:
        o, ra, rb, fixed = qlinear_add_consts(attrs, zero)
        t = ((b.astype(np.float64) + o) * rb + fixed).astype(np.float32)
        y = ((a.astype(np.float64) + o) * ra + t.astype(np.float64)).astype(np.float32)
        return np.clip(np.rint(y).astype(np.float64) - o, -128, 127).astype(np.int8)
    fa = (a.astype(np.float32) - np.float32(attrs["za"])) * np.float32(attrs["sa"])
    fb = (b.astype(np.float32) - np.float32(attrs["zb"])) * np.float32(attrs["sb"])
    y = np.rint((fa + fb) / np.float32(attrs["sc"])).astype(np.float64) + zero
    return np.clip(y, -128, 127).astype(np.int8)


# ---- te expressions (the CPU kernels) ------------------------------------------------------

def _f32(v: float):
    return ir.const(float(v), "float32")


def to_int8(f, relu: bool, zero: int, lo: int = -128, hi: int = 127):
    """float32 expr ``f`` -> int8: round_half_even(f) + zero, relu (max zero), clip to
    [``lo``, ``hi``]; every step in float32 (exact: small integers), one conversion at the
    end."""
    lo = max(zero, lo) if relu else lo
    y = ir.call("round", "float32", f)
    if zero:
        y = y + _f32(zero)
    return te.cast(te.minimum(te.maximum(y, _f32(lo)), _f32(hi)), "int8")


def scale_table(fscale, channels: int):
    """(expr of channel -> float32 M, constants): a literal for one scale, a float32
    (channels,) table for per-channel ones.

    Raises:
        ValueError: a per-channel ``fscale`` whose length is not ``channels``."""
    if isinstance(fscale, (tuple, list)):
        if len(fscale) != channels:
            raise ValueError(f"per-channel fscale has {len(fscale)} entries, the node {channels} "
                             "output channels; re-import the model")
        table = te.placeholder((channels,), "float32", "fscale")
        return (lambda o: table[o]), [(table, np.asarray(fscale, np.float32))]
    c = _f32(np.float32(fscale))
    return (lambda o: c), []


def requant_expr(a: dict, channels: int, zero: int, lo: int = -128, hi: int = 127):
    """(function ``(int32 acc expr, channel expr) -> int8 expr``, constants): onnxruntime's
    requantization (module docstring) with the node's attrs ``fscale`` and ``relu``, clipped
    to [``lo``, ``hi``]."""
    scale, tables = scale_table(a["fscale"], channels)
    relu = bool(a.get("relu"))
    return (lambda v, o: to_int8(te.cast(v, "float32") * scale(o), relu, zero, lo, hi)), tables


def add_expr(a: dict, zero: int):
    """``(int8 a expr, int8 b expr) -> int8 expr``: RESCALE_ADD in float32 (attrs za, zb, sa,
    sb, sc; module docstring), with ``qlinear`` onnxruntime's QLinearAdd (float64 lanes)."""
    if a.get("qlinear") is not None:
        o, ra, rb, fixed = qlinear_add_consts(a, zero)

        def f64(v):
            return ir.const(float(v), "float64")

        def fma(v, r, c):   # float32((v + o) * r + c): float64 steps, one float32 rounding
            return te.cast((te.cast(v, "float64") + f64(o)) * f64(r) + c, "float32")
        return lambda x, y: to_int8(fma(x, ra, te.cast(fma(y, rb, f64(fixed)), "float64")),
                                    False, -o)

    def term(v, z, s):
        return (te.cast(v, "float32") - _f32(z)) * _f32(np.float32(s))
    return lambda x, y: to_int8((term(x, a["za"], a["sa"]) + term(y, a["zb"], a["sb"]))
                                / _f32(np.float32(a["sc"])), False, zero)
