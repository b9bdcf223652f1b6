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

import dataclasses

import numpy as np

from compiler.graph import Op


def fuse_tables(qg):
    """``qg`` with each Clip LUT (attr ``clip``) whose source is a CONV2D or DEPTHWISE read by
    it alone (and not a graph output) folded into that conv: the conv takes the LUT's
    exponent, zero point, ``table`` and ``clip`` (computed in its epilogue after its clip,
    one pass fewer; other tables stay LUT passes: a gather in the epilogue stops its
    vectorisation, measured 1.6x slower on MobileNetV2). The CPU route's; the accelerator's
    GEMM has no table."""
    from .qgraph import QGraph, QOp
    nodes, users = qg.nodes, {}
    for i, n in enumerate(nodes):
        for s in n.src:
            users.setdefault(s, []).append(i)
    fold = {n.src[0] for i, n in enumerate(nodes)
            if n.op is QOp.LUT and n.attrs.get("clip") is not None
            and nodes[n.src[0]].op in (QOp.CONV2D, QOp.DEPTHWISE)
            and users[n.src[0]] == [i] and n.src[0] not in qg.outputs
            and nodes[n.src[0]].attrs.get("table") is None}
    new, where = [], {}
    for i, n in enumerate(nodes):
        if n.op is QOp.LUT and n.src[0] in fold:
            c = new[where[n.src[0]]]
            new[where[n.src[0]]] = dataclasses.replace(
                c, exp=n.exp, zp=n.zp,
                attrs=dict(c.attrs, table=n.attrs["table"], clip=n.attrs["clip"]))
            where[i] = where[n.src[0]]
            continue
        where[i] = len(new)
        new.append(dataclasses.replace(n, src=tuple(where[s] for s in n.src)))
    return QGraph(new, [where[i] for i in qg.inputs], [where[o] for o in qg.outputs],
                  list(qg.output_names), qg.params)


def scale_of(exp: "int | float") -> np.float32:
    """The float32 scale of exponent ``exp = -log2(scale)`` (the model's own float32 scale:
    float64 ``2**-exp`` is within 1e-16 of it, so rounding to float32 recovers it)."""
    return np.float32(2.0 ** -float(exp))


def clip_params(attrs: dict, exp_in, zp_in: int, exp_out, zp_out: int) -> tuple:
    """A Clip table's recipe, (s_in, z_in, lo, hi, s_out, z_out) with float32 scales and
    bounds (an absent bound: float32's largest), which the CPU kernels compute in float32
    arithmetic rather than read (``kernels/common.py``: ``_out_table``); it makes :func:`unary_table`'s values."""
    big = float(np.finfo(np.float32).max)
    lo = attrs.get("min")
    hi = attrs.get("max")
    return (float(scale_of(exp_in)), int(zp_in), -big if lo is None else float(np.float32(lo)),
            big if hi is None else float(np.float32(hi)), float(scale_of(exp_out)), int(zp_out))


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
