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
from ...te.tensor import ComputeOp, PlaceholderOp, Tensor, tensors_read
from ...tir.ops import Op
from ...tir.visit import rewrite_expr, substitute, walk_expr

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


def _bind_threads(st, axes: list, t: Tensor, tile: int, threads: int, adapt: bool = True):
    """Fuse ``axes`` of stage ``st`` (of tensor ``t``, ``tile`` elements a thread) into one
    loop and bind it to ``blockIdx.x`` x ``threadIdx.x``: at most ``threads`` threads a
    block (no more than the stage has, rounded up to a power of two), and with ``adapt``
    fewer (down to 64) while the grid would have under ``MIN_BLOCKS`` blocks.
    Returns the thread loop (where per-thread stages are computed at), the threads a block
    and whether they divide the stage's threads (no tail block: barriers are allowed)."""
    n = 1
    for a in t.op.axis:
        n *= a.extent
    n //= tile
    if not axes:
        raise ValueError(f"stage {t.name!r} is a scalar (0-d); GPU kernels bind threads to an axis, so "
                         "keep a reduced axis (keepdims=1) or compile for a CPU target")
    f = st.fuse(*axes) if len(axes) > 1 else axes[0]
    threads = min(threads, max(32, 1 << (n - 1).bit_length()))
    while adapt and threads > 64 and -(-n // threads) < MIN_BLOCKS:   # spread small stages
        threads //= 2
    bo, ti = st.split(f, factor=threads)
    st.bind(bo, te.thread_axis("blockIdx.x"))
    st.bind(ti, te.thread_axis("threadIdx.x"))
    return ti, threads, n % threads == 0


#: ``unroll`` values of the templates: which loops are unrolled
UNROLL = ("tile", "none", "reduce")   # the per-thread tile (today); nothing; the tile and the
                                      # innermost reduce loop of a per-thread reduction


def _check_unroll(unroll: str) -> None:
    if unroll not in UNROLL:
        raise ValueError(f"unroll must be one of {UNROLL}, not {unroll!r}")


def _unroll_reduction(sr, red: list, unroll: str) -> None:
    """Unroll the innermost of the reduce loops ``red`` of stage ``sr`` if ``unroll`` asks."""
    if unroll == "reduce" and red:
        sr.unroll(red[-1])


def _stage_shared(s, r: Tensor, at, block: int) -> None:
    """Copy the region of each input that ``r`` (computed per thread) reads in one iteration
    of its loop ``at`` into shared memory, every thread of the ``block`` copying a share
    (the region covers what all of them read: bound inference relaxes thread axes for
    "shared"); ``gpu_barriers`` then places the barriers around the copies."""
    for x in tensors_read(r.op.body):
        if not isinstance(x.op, PlaceholderOp):
            continue
        xs = s.cache_read(x, "shared", [r])
        sx = s[xs]
        sx.compute_at(s[r], at)
        axes = list(xs.op.axis)
        f = sx.fuse(*axes) if len(axes) > 1 else axes[0]
        _, tx = sx.split(f, factor=block)
        sx.bind(tx, te.thread_axis("threadIdx.x"))


def schedule_stage(out: Tensor, reductions: list, threads: int = 256, tile: int = 1,
                   vector: int = 1, unroll: str = "tile", adapt: bool = True, shared: int = 0):
    """A schedule of ``out`` (one thread per output element, or ``tile`` output channels of a
    packed conv per thread) with ``reductions`` computed per thread in registers.

    ``vector`` (1, 2 or 4): elements of the last axis per thread, for a stage without
    reductions whose last axis it divides (other stages ignore it); one vector access where
    the body allows (no branches such as padding or tail guards, no math calls), else an
    unrolled loop.
    ``unroll``: one of :data:`UNROLL`; ``adapt``: as ``_bind_threads`` (False: ``threads`` a
    block whatever the grid). ``shared`` (0: off): shared-memory staging of the inputs of a
    single per-thread reduction, ``shared`` iterations of its first reduce axis at a time
    (where that divides the axis and the threads fill whole blocks; else ignored).
    Raises ValueError for another ``unroll``."""
    _check_unroll(unroll)
    if out.op.reduce_axis:     # a root reduction: accumulate in registers, one output a thread
        return schedule_partial(out, threads, 1, unroll, adapt)
    s = te.create_schedule(out)
    st = s[out]
    axes = list(out.op.axis)
    inner = vec = None
    if tile > 1:
        oo, inner = st.split(axes[1], factor=tile)
        st.reorder(axes[0], oo, axes[2], axes[3], inner)
        axes = [axes[0], oo, axes[2], axes[3]]
    elif vector > 1 and not reductions and axes and axes[-1].extent % vector == 0:
        lo, vec = st.split(axes[-1], factor=vector)
        axes = axes[:-1] + [lo]
        tile = vector
    ti, block, whole = _bind_threads(st, axes, out, tile, threads, adapt)
    if inner is not None and unroll != "none":
        st.unroll(inner)
    if vec is not None:   # GPU printers have no vector math calls (exp, ...): unroll those
        calls = any(e.op is Op.CALL for e in walk_expr(out.op.body))
        (st.unroll if calls else st.vectorize)(vec)
    for r in reductions:
        sr = s[r]
        sr.set_scope("local")
        sr.compute_at(st, ti)
        sp, red = list(r.op.axis), list(r.op.reduce_axis)
        staged = (shared and len(reductions) == 1 and whole and red
                  and red[0].extent % shared == 0 and red[0].extent > shared)
        if staged:
            ko, ki = sr.split(red[0], factor=shared)
            red = [ko, ki] + red[1:]
        if tile > 1:
            # reduce loops outside the channel block: one input load feeds `tile` accumulators
            sr.reorder(*sp[:-1], *red, sp[-1])
            if unroll != "none":
                sr.unroll(sp[-1])
        _unroll_reduction(sr, red, unroll)
        if staged:
            _stage_shared(s, r, red[0], block)
    return s


def split_k_factor(acc: Tensor, tile: int = 1, min_threads: int = 1 << 17, min_chunk: int = 8) -> int:
    """Parts S to split the first reduce axis of ``acc`` into (1: no split): the smallest power of
    two dividing it that gives ``min_threads`` threads, keeping ``min_chunk`` iterations a part."""
    if acc.op.body.op is not Op.REDUCE or acc.op.body.arg[0] != "sum" or not acc.op.reduce_axis:
        return 1
    k = acc.op.reduce_axis[0]
    if k.min != 0:
        return 1
    n = 1
    for e in acc.shape:
        n *= e
    s = 1
    while n * s // tile < min_threads and k.extent % (2 * s) == 0 and k.extent // (2 * s) >= min_chunk:
        s *= 2
    return s


def split_k(acc: Tensor, parts: int) -> tuple[Tensor, Tensor]:
    """``acc`` (a sum over reduce axes k, ...) as ``partial[S, *shape]`` (each part sums a slice
    of k) and ``total[*shape] = sum_s partial[s, ...]``: S times the threads, each with a
    chain S times shorter (split-K). Returns (partial, total)."""
    body = acc.op.body
    red = body.arg[1]
    k = red[0]
    chunk = k.extent // parts
    ki = te.reduce_axis(chunk, k.name + "_i")
    axes = acc.op.axis
    src, cond = body.src

    def part(s, *idx):
        m = {a.var: i for a, i in zip(axes, idx)}
        m[k.var] = s * chunk + ki.var
        return te.sum(substitute(src, m), axis=[ki, *red[1:]], where=substitute(cond, m))
    partial = te.compute((parts, *acc.shape), part, name=acc.name + "_part")
    r = te.reduce_axis(parts, "s")
    total = te.compute(acc.shape, lambda *idx: te.sum(partial[(r, *idx)], axis=r), name=acc.name)
    return partial, total


def replace_reads(t: Tensor, old: Tensor, new: Tensor) -> Tensor:
    """``t`` recomputed with its reads of ``old`` going to ``new``."""
    from ...tir import ir

    def fn(x):
        if x.op is Op.TENSOR_READ and x.arg is old:
            return ir.Expr(Op.TENSOR_READ, x.dtype, x.src, new)
        return None
    return ComputeOp(t.op.name, t.op.axis, t.op.reduce_axis, rewrite_expr(t.op.body, fn)).output


def schedule_partial(partial: Tensor, threads: int = 256, tile: int = 1, unroll: str = "tile",
                     adapt: bool = True):
    """A root reduction ``partial`` accumulated in registers (``cache_write`` "local",
    ``compute_at`` the thread loop) with ``tile`` elements of its last axis per thread and
    the reduce loops outside them, so each loaded input feeds ``tile`` accumulators.
    ``unroll``: one of :data:`UNROLL` (ValueError otherwise); ``adapt`` as ``_bind_threads``."""
    _check_unroll(unroll)
    s = te.create_schedule(partial)
    cache = s.cache_write(partial, "local")
    st = s[partial]
    axes = list(partial.op.axis)
    inner = None
    if tile > 1:
        lo, inner = st.split(axes[-1], factor=tile)
        axes = axes[:-1] + [lo]
    ti, _, _ = _bind_threads(st, axes, partial, tile, threads, adapt)
    if inner is not None and unroll != "none":
        st.unroll(inner)
    sc = s[cache]
    sc.compute_at(st, ti)
    sp = list(cache.op.axis)
    sc.reorder(*sp[:-1], *cache.op.reduce_axis, sp[-1])
    if tile > 1 and unroll != "none":
        sc.unroll(sp[-1])
    _unroll_reduction(sc, list(cache.op.reduce_axis), unroll)
    return s
