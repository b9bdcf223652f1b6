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

MIN_BLOCKS = 264   # two blocks per SM of an H100/H200 (132 SMs)


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


def conv_tile(out: Tensor, reductions: list, min_threads: int = 32768) -> int:
    """Output channels per thread for a packed-conv epilogue ``out[N, O, H, W]`` reading
    ``acc[N, O/ob, H, W, ob]``: the largest divisor of ``ob`` that still leaves
    ``min_threads`` threads (enough to fill an H200's 132 SMs); 1 for other stages."""
    if len(reductions) != 1 or len(out.shape) != 4:
        return 1
    acc = reductions[0]
    if len(acc.shape) != 5 or acc.shape[1] * acc.shape[4] != out.shape[1] \
            or (acc.shape[0], acc.shape[2], acc.shape[3]) != (out.shape[0], out.shape[2], out.shape[3]):
        return 1
    n = out.shape[0] * out.shape[1] * out.shape[2] * out.shape[3]
    t = acc.shape[4]
    while t > 1 and (acc.shape[4] % t or n // t < min_threads):
        t //= 2
    return max(t, 1)


def schedule_stage(out: Tensor, reductions: list, threads: int = 256, tile: int = 1):
    """A schedule of ``out`` (one thread per output element, or ``tile`` output channels of a
    packed conv per thread) with ``reductions`` computed per thread in registers."""
    s = te.create_schedule(out)
    st = s[out]
    axes = list(out.op.axis)
    inner = None
    if tile > 1:
        oo, inner = st.split(axes[1], factor=tile)
        st.reorder(axes[0], oo, axes[2], axes[3], inner)
        axes = [axes[0], oo, axes[2], axes[3]]
    n = 1
    for a in out.op.axis:
        n *= a.extent
    n //= tile
    f = st.fuse(*axes) if len(axes) > 1 else axes[0]
    threads = min(threads, max(32, 1 << (n - 1).bit_length()))
    while threads > 64 and -(-n // threads) < MIN_BLOCKS:   # spread small stages over more SMs
        threads //= 2
    bo, ti = st.split(f, factor=threads)
    st.bind(bo, te.thread_axis("blockIdx.x"))
    st.bind(ti, te.thread_axis("threadIdx.x"))
    if inner is not None:
        st.unroll(inner)
    for r in reductions:
        s[r].set_scope("local")
        s[r].compute_at(st, ti)
        if tile > 1:
            # reduce loops outside the channel block: one input load feeds `tile` accumulators
            sp, red = list(r.op.axis), list(r.op.reduce_axis)
            s[r].reorder(*sp[:-1], *red, sp[-1])
            s[r].unroll(sp[-1])
    return s
