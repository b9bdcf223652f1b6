"""Injective ops (elementwise, broadcast, data movement, batch norm): one implementation each.

Each is a ``Lazy`` index function from ``compiler.topi.injective``: it declares
no stage of its own and is inlined into the group's output stage, so it has
no schedule, no knobs and no conditions.
"""
from __future__ import annotations

import numpy as np

from compiler.graph import Op
from compiler.graph.ops import BINARY, COMPARE
from compiler.topi import injective as inj
from compiler.topi.injective import Lazy

from ..strategy import register


def _resize(b, n, a):
    tables = [(ax, b.constant(i0), None if i1 is None else b.constant(i1),
               None if w is None else b.constant(w))
              for ax, i0, i1, w in inj.resize_tables(n.src[0].shape, n.attr_dict)]
    return inj.resize(a[0], n.shape, tables)


def _batch_norm(b, n, a):
    x, gamma, beta, mean, var = a
    eps = inj.const(n.attr("epsilon"), x.dtype)

    def bn(*idx):
        c = idx[1]
        return (x(*idx) - mean(c)) / inj.te.sqrt(var(c) + eps) * gamma(c) + beta(c)
    return Lazy(n.shape, x.dtype, bn)


# op -> (builder, node, input Lazys) -> Lazy
INJECTIVE = {
    Op.RELU: lambda b, n, a: inj.relu(a[0]),
    Op.LEAKY_RELU: lambda b, n, a: inj.leaky_relu(a[0], n.attr("alpha")),
    Op.CLIP: lambda b, n, a: inj.clip(a[0], n.attr("min"), n.attr("max")),
    Op.SIGMOID: lambda b, n, a: inj.sigmoid(a[0]),
    Op.TANH: lambda b, n, a: inj.tanh(a[0]),
    Op.ERF: lambda b, n, a: inj.erf(a[0]),
    Op.GELU: lambda b, n, a: inj.gelu(a[0], n.attr("approximate", "none")),
    Op.HARD_SWISH: lambda b, n, a: inj.hard_swish(a[0]),
    Op.SQRT: lambda b, n, a: inj.sqrt(a[0]),
    Op.EXP: lambda b, n, a: inj.exp(a[0]),
    Op.LOG: lambda b, n, a: inj.log(a[0]),
    Op.ABS: lambda b, n, a: inj.absolute(a[0]),
    Op.NEG: lambda b, n, a: inj.negative(a[0]),
    Op.NOT: lambda b, n, a: inj.logical_not(a[0]),
    Op.CAST: lambda b, n, a: inj.cast(a[0], str(np.dtype(n.attr("to")))),
    **{op: (lambda b, n, a: inj.binary(n.op.name, a[0], a[1], n.shape)) for op in BINARY | COMPARE},
    Op.WHERE: lambda b, n, a: inj.where(a[0], a[1], a[2], n.shape),
    Op.BROADCAST_TO: lambda b, n, a: inj.broadcast_to(a[0], n.shape),
    Op.RESHAPE: lambda b, n, a: inj.reshape(a[0], n.shape),
    Op.TRANSPOSE: lambda b, n, a: inj.transpose(a[0], n.attr("perm")),
    Op.SLICE: lambda b, n, a: inj.strided_slice(a[0], n.attr("begin"), n.attr("step"), n.shape),
    Op.CONCAT: lambda b, n, a: inj.concat(a, n.attr("axis"), n.shape),
    Op.PAD: lambda b, n, a: inj.pad(a[0], n.attr("pads"), n.attr("mode", "constant"),
                                    n.attr("value", 0.0)),
    Op.TAKE: lambda b, n, a: inj.take(a[0], a[1], n.attr("axis")),
    Op.LAYOUT_TRANSFORM: lambda b, n, a: inj.layout_transform(a[0], n.attr("src_layout"),
                                                              n.attr("dst_layout"), n.shape),
    Op.QUANTIZE: lambda b, n, a: inj.quantize(a[0], a[1], a[2], n.attr("axis", 1),
                                              str(np.dtype(n.attr("to")))),
    Op.DEQUANTIZE: lambda b, n, a: inj.dequantize(a[0], a[1], a[2], n.attr("axis", 1)),
    Op.RESIZE: _resize,
    Op.BATCH_NORM: _batch_norm,
}

for _op, _fn in INJECTIVE.items():
    register(_op, _op.name.lower())(lambda b, n, a, cfg, fn=_fn: (fn(b, n, a), None))
