"""Int8 -> int8 lookup tables (a unary op between two per-tensor scales, exact) and the
multipliers of an int8 add between scales.

A QDQ model runs a unary op that changes scale (MobileNetV2's Clip(0, 6) between its conv's
scale and its own) as DequantizeLinear -> the float op -> QuantizeLinear. Its input has 256
possible values, so the whole chain is a 256-entry table, computed here at compile time as
onnxruntime computes it in float32: ``x = (q - zp_in) * s_in``, ``y = op(x)``,
``clip(round_half_even(y / s_out) + zp_out, -128, 127)``. The QGraph's LUT node
(``qgraph.QOp.LUT``) reads ``table[q + 128]``: bit-exact with the oracle and with
onnxruntime, in one int8 pass instead of three float ones.
"""
from __future__ import annotations

import numpy as np

from compiler.graph import Op


def scale_of(exp: "int | float") -> np.float32:
    """The float32 scale of exponent ``exp = -log2(scale)`` (the model's own float32 scale:
    float64 ``2**-exp`` is within 1e-16 of it, so rounding to float32 recovers it)."""
    return np.float32(2.0 ** -float(exp))


def add_multipliers(exp_a, exp_b, exp_y) -> "tuple[int, int, int] | None":
    """(ma, mb, post) of a RESCALE_ADD (``qgraph``): ``m = round(2**post * s / sy)`` for
    each input, ``post`` the largest in 1..30 keeping both below 2**15 (so the int32 sum
    of two int8 differences times them cannot overflow); None when a ratio is 2**14 or
    more (no such post)."""
    ra, rb = (float(scale_of(e)) / float(scale_of(exp_y)) for e in (exp_a, exp_b))
    for post in range(30, 0, -1):
        ma, mb = round(ra * 2 ** post), round(rb * 2 ** post)
        if max(ma, mb) < 2 ** 15:
            return ma, mb, post
    return None


def unary_table(op: Op, attrs: dict, exp_in, zp_in: int, exp_out, zp_out: int) -> tuple:
    """The 256 int8 results (a tuple of ints, index ``q + 128``) of graph op ``op`` with
    ``attrs`` applied to int8 ``q`` at (``exp_in``, ``zp_in``), requantized at
    (``exp_out``, ``zp_out``).

    Raises:
        compiler.graph.GraphError / KeyError: ``op`` has no numpy compute.
    """
    from compiler.graph.registry import lookup
    q = np.arange(-128, 128, dtype=np.int32)
    x = (q - zp_in).astype(np.float32) * scale_of(exp_in)
    y = np.asarray(lookup(op).compute([x], dict(attrs)), np.float32)
    r = np.rint(y / scale_of(exp_out)) + zp_out
    return tuple(int(v) for v in np.clip(r, -128, 127))
