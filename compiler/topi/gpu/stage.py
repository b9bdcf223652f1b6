"""GPU schedules for the stages of a declared fused group (``te`` primitives only).

A fused group declared by ``compiler.graph_lower.lower`` is a chain of ``te``
computes. On a GPU every *root* stage (padded copies, helper stages of a
softmax or layer norm, the group's output) is its own kernel launch, because
blocks of one launch cannot wait for each other. ``split_stage`` cuts one root
stage out of the chain: the other root stages it reads become placeholders,
elementwise computes in between are inlined, and the reductions it reads
(a conv / dense / pooling accumulator under its epilogue) become stages
computed per thread (``compute_at`` the thread loop, scope "local").

``schedule_stage`` is the one GPU template: the stage's spatial axes are fused
and split into blocks of ``threads`` threads (``bind`` blockIdx.x /
threadIdx.x); a reduction keeps its reduce loops inside the thread. This is a
direct (one output per thread) schedule: conv2d is a direct convolution whose
reads of input and packed weights go through the L1/L2 caches.
"""
from __future__ import annotations

from ... import te
from ...te.tensor import ComputeOp, PlaceholderOp, Tensor
from ...tir.ops import Op
from ...tir.visit import rewrite_expr, substitute


def split_stage(t: Tensor, cut: dict) -> tuple[Tensor, list]:
    """``t``'s computation with every tensor in ``cut`` (tensor -> placeholder) read as that
    placeholder, elementwise computes inlined, and reductions cloned.

    Returns (the new output tensor, the cloned reductions it reads, producers first).
    A reduction read by another cloned reduction is inlined only if elementwise; a
    nested reduction must be in ``cut`` (raises ValueError otherwise).
    """
    clones: dict = {}
    reductions: list = []

    def clone(x: Tensor, top: bool) -> Tensor:
        if x in cut:
            return cut[x]
        if isinstance(x.op, PlaceholderOp):
            return x
        if x in clones:
            return clones[x]
        op = x.op
        body = rewrite_expr(op.body, read)
        new = ComputeOp(op.name, op.axis, op.reduce_axis, body).output
        clones[x] = new
        if not top:
            reductions.append(new)
        return new

    def read(e):
        if e.op is not Op.TENSOR_READ:
            return None
        x = e.arg
        if x in cut or isinstance(x.op, PlaceholderOp):
            return None if x not in cut else te_read(cut[x], e)
        if x.op.body.op is not Op.REDUCE:   # elementwise: inline its (rewritten) body
            body = rewrite_expr(x.op.body, read)
            return substitute(body, {a.var: i for a, i in zip(x.op.axis, e.src)})
        return te_read(clone(x, False), e)

    def te_read(new: Tensor, e):
        from ...tir import ir
        return ir.Expr(Op.TENSOR_READ, e.dtype, e.src, new)

    out = clone(t, True)
    for r in reductions:
        for y in r.op.reads():
            if y in reductions:
                raise ValueError(f"stage {t.name!r}: reduction {r.name!r} reads reduction {y.name!r}; "
                                 "compute the inner one at root")
    return out, reductions


def schedule_stage(out: Tensor, reductions: list, threads: int = 256):
    """A schedule of ``out`` (one thread per output element) with ``reductions`` per thread."""
    s = te.create_schedule(out)
    st = s[out]
    axes = list(out.op.axis)
    n = 1
    for a in axes:
        n *= a.extent
    f = st.fuse(*axes) if len(axes) > 1 else axes[0]
    threads = min(threads, max(32, 1 << (n - 1).bit_length()))
    bo, ti = st.split(f, factor=threads)
    st.bind(bo, te.thread_axis("blockIdx.x"))
    st.bind(ti, te.thread_axis("threadIdx.x"))
    for r in reductions:
        s[r].set_scope("local")
        s[r].compute_at(st, ti)
    return s
