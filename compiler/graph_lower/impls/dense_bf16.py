"""Dense layers in bfloat16 on AVX512-BF16 (``vdpbf16ps``), fp32 accumulation.

Chosen for DENSE nodes marked ``compute_dtype="bfloat16"`` (``compiler.graph_lower.bf16``,
what ``build_model(..., dtype="bfloat16")`` does) on targets with ``+avx512bf16``, with a
constant weight and an even K. The weight is packed at compile time to bf16 bit patterns
(``dense_bf16:16``: ``[N/16, K/2, 16, 2]`` int16, rounded to nearest even); the kernel
rounds its activations to bf16 into a workspace (``[M, K/2, 2]``), then each 16 outputs
accumulate one ``vdpbf16ps`` per pair of k (``compiler.topi.x86_bf16.dpbf16_intrin``).
"""
from __future__ import annotations

import numpy as np

from compiler import te
from compiler.graph import Op
from compiler.tir import ir
from compiler.topi import injective as inj
from compiler.topi import x86_bf16
from compiler.topi.injective import Lazy

from ..master import MasterKind
from ..strategy import attr_is, cpu_features, register

L = x86_bf16.LANES


def _fits(w):
    n = w.node
    if not w.is_const(n.src[1]):
        return "the weight is not a constant input"
    K, N = n.src[0].shape[-1], n.src[1].shape[0]
    if K % 2 or N % L:
        return f"K={K} and N={N}, needs an even K and N a multiple of {L}"
    return None


def _bits(v):
    return ir.target_call("x86.bf16_bits", "int16", v)


def _schedule(s, acc, out, cfg):
    m, n = s[out].op.axis
    no, ni = s[out].split(n, factor=L)
    s[out].vectorize(ni)
    s[acc].compute_at(s[out], no)
    am, an = s[acc].op.axis
    c, ci = s[acc].op.reduce_axis
    ano, ani = s[acc].split(an, factor=L)
    s[acc].reorder(am, ano, c, ani, ci)
    s[acc].tensorize(ani, x86_bf16.dpbf16_intrin())


@register(Op.DENSE, "dense_bf16", kind=MasterKind.DENSE, schedule=_schedule,
          packs=lambda w, cfg: {1: f"dense_bf16:{L}"},
          when=(attr_is("compute_dtype", "bfloat16"), cpu_features("+avx512bf16"), _fits),
          plevel=20)
def _dense_bf16(b, n, a, cfg):
    x = a[0]
    K = x.shape[-1]
    M = int(np.prod(x.shape[:-1]))
    x2 = inj.reshape(x, (M, K))
    wb = a[1]._tensor                                      # [N/16, K/2, 16, 2] int16
    xb = te.compute((M, K // 2, 2), lambda m, c, i: _bits(x2(m, c * 2 + i)), name=b.fresh("x_bf16"))
    b.workspace.append(xb)
    c, ci = te.reduce_axis(K // 2, "c"), te.reduce_axis(2, "ci")
    acc = te.compute((M, wb.shape[0] * L), lambda m, j: te.sum(
        te.cast(xb[m, c, ci], "float32") * te.cast(wb[j // L, c, j % L, ci], "float32"),
        axis=(c, ci)), name=b.fresh("dense_bf16"))
    return inj.reshape(Lazy.of(acc), n.shape), acc
