"""Einsum for the matmul patterns models use: two operands, each letter once per operand, every
letter of the output in an operand ("ij,jk->ik", "bij,bjk->bik", "bhid,bhjd->bhij", "bid,jd->bij",
...), and one-operand permutations ("ij->ji").

Letters of both operands and the output are batch axes, of both operands only are
contracted, of one operand and the output are that operand's free axes. Each
operand is transposed to [batch, free, contracted] (right: [batch, contracted,
free]) and flattened to 3-D, one MATMUL multiplies them, and the result is
reshaped and transposed to the output's order. A letter summed out of one operand
alone, a repeated letter (trace, diagonal), ellipses and three or more operands
are refused with the pattern that was not recognised.
"""

from __future__ import annotations

import math

from ...graph.ops import Op


def _parse(ctx, node, eq, n_in):
    eq = eq.replace(" ", "")
    if "..." in eq or "->" not in eq:
        raise ctx.fail(node, f"equation {eq!r}: only explicit forms 'ab,bc->ac' without '...' are supported")
    lhs, out = eq.split("->")
    terms = lhs.split(",")
    if len(terms) != n_in or any(len(set(t)) != len(t) for t in terms + [out]):
        raise ctx.fail(node, f"equation {eq!r}: each operand needs its own term and no letter may repeat in a "
                             "term (trace and diagonal are not supported)")
    return terms, out


def _permute(ctx, node, x, term, order):
    perm = tuple(term.index(c) for c in order)
    return x if perm == tuple(range(len(perm))) else ctx.make(node, Op.TRANSPOSE, x, perm=perm)


def einsum(ctx, node, a):
    srcs = [ctx.required(node, i) for i in range(len(node.input))]
    terms, out = _parse(ctx, node, a["equation"], len(srcs))
    for t, x in zip(terms, srcs):
        if len(t) != len(x.shape):
            raise ctx.fail(node, f"term {t!r} has {len(t)} letters but its operand has shape {list(x.shape)}")
    if len(srcs) == 1:
        if set(terms[0]) != set(out):
            raise ctx.fail(node, f"equation {a['equation']!r}: one-operand einsum must be a permutation")
        return _permute(ctx, node, srcs[0], terms[0], out)
    if len(srcs) != 2:
        raise ctx.fail(node, f"{len(srcs)} operands: only one or two are supported")
    (ta, tb), (x, y) = terms, srcs
    dims = {c: d for t, s in zip(terms, srcs) for c, d in zip(t, s.shape)}
    for c in set(ta) & set(tb):
        if x.shape[ta.index(c)] != y.shape[tb.index(c)]:
            raise ctx.fail(node, f"letter {c!r} has size {x.shape[ta.index(c)]} in {ta!r} but "
                                 f"{y.shape[tb.index(c)]} in {tb!r}")
    batch = [c for c in out if c in ta and c in tb]
    contract = [c for c in ta if c in tb and c not in out]
    free_a = [c for c in ta if c not in tb]
    free_b = [c for c in tb if c not in ta]
    if any(c not in out for c in free_a + free_b) or any(c not in ta + tb for c in out):
        raise ctx.fail(node, f"equation {a['equation']!r}: a letter summed out of one operand alone, or an "
                             "output letter in no operand, is not supported")

    def size(letters):
        return math.prod(dims[c] for c in letters)
    lhs = ctx.make(node, Op.RESHAPE, _permute(ctx, node, x, ta, batch + free_a + contract),
                   newshape=(size(batch), size(free_a), size(contract)))
    rhs = ctx.make(node, Op.RESHAPE, _permute(ctx, node, y, tb, batch + contract + free_b),
                   newshape=(size(batch), size(contract), size(free_b)))
    prod = ctx.make(node, Op.MATMUL, lhs, rhs)
    order = batch + free_a + free_b
    prod = ctx.make(node, Op.RESHAPE, prod, newshape=tuple(dims[c] for c in order))
    return _permute(ctx, node, prod, order, out)


CONVERTERS = {"Einsum": einsum}
