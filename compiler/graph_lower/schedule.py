"""Scheduling a declared fused group (see ``compiler.graph_lower.lower``).

``schedule_group(builder, body, root, result)`` materialises the group's
result as the kernel's output stage and schedules every stage:

* injective groups: ``topi.injective.schedule_injective``;
* reductions, softmax, layer norm: helper stages at the root (workspace);
* conv / dense / matmul / pooling masters with an *aligned* epilogue (only
  elementwise ops of the master's shape after it): the output stage is the
  epilogue and the master's accumulator is ``compute_at`` its tile loop (the
  schedule template recorded in the builder's ``Master``);
* otherwise the master runs at the root into a workspace stage and an
  injective output stage reads it.

Large root stages (padded copies, helper stages) are recorded as workspace
arguments on the builder, so no big array lives on a kernel's stack.
"""
from __future__ import annotations

import math

from compiler import te
from compiler.graph import Graph, Node, Op
from compiler.graph.ops import BINARY, UNARY
from compiler.topi import injective as inj
from compiler.topi.injective import Lazy

from .master import MasterKind

_ELEMENTWISE = UNARY | BINARY


def _aligned(body: Graph, master: Node, root: Node) -> bool:
    """Everything after ``master`` is elementwise with the master's output shape."""
    after = False
    for n in body.nodes():
        if n is master:
            after = True
            continue
        if not after or n.op is Op.INPUT:
            continue
        if n.op not in _ELEMENTWISE or n.shape != master.shape:
            # nodes before the master in topological order may still be listed after it
            if _depends_on(n, master):
                return False
    return root.shape == master.shape


def _depends_on(n: Node, m: Node) -> bool:
    stack, seen = [n], set()
    while stack:
        x = stack.pop()
        if x is m:
            return True
        if id(x) in seen:
            continue
        seen.add(id(x))
        stack.extend(x.src)
    return False


# masters whose kernel indexes the flattened [M, N] / [B, M, N] space, not the graph's shape
_FLAT = (MasterKind.DENSE, MasterKind.BATCH_MATMUL)


def schedule_group(b, body: Graph, root: Node, result: Lazy):
    """Materialise the group's result as the output stage and schedule every stage."""
    if b.master is None:                       # injective group
        out = result.materialize(b.fresh("out"))
        s = te.create_schedule(out)
        inj.schedule_injective(s, out)
        return s, out
    m = b.master
    acc = m.acc
    if m.kind is MasterKind.REDUCTION:         # helper stages at the root, as workspace
        out = result.materialize(b.fresh("out")) if root is not m.node else acc
        s = te.create_schedule(out)
        _collect_stages(b, out)
        if out is acc:
            m.schedule(s, acc, out)
        else:
            inj.schedule_injective(s, out)
        return s, out
    if _aligned(body, m.node, root):
        # the output stage is the epilogue: the accumulator is computed at its tile loop.
        kshape = _flat_shape(acc, root) if m.kind in _FLAT else root.shape
        out = te.compute(kshape, _kernel_space(result, root.shape, kshape), name=b.fresh("out"))
        s = te.create_schedule(out)
        m.schedule(s, acc, out)
        _workspace_pads(b, s, acc)
        return s, out
    # the epilogue changes the shape (reshape, transpose...): the master runs at the root
    # into a workspace stage (NCHW for the packed conv), which an injective stage reads
    if m.kind is MasterKind.CONV2D:
        N, Ob, OH, OW, ob = acc.shape
        ep = te.compute((N, Ob * ob, OH, OW), lambda nn, o, h, w: acc[nn, o // ob, h, w, o % ob],
                        name=b.fresh("epi"))
    else:
        ob = None
        ep = te.compute(acc.shape, lambda *idx: acc[idx], name=b.fresh("epi"))
    b.workspace.append(ep)
    out = _rebase(result, acc, ep, ob).materialize(b.fresh("out"))
    s = te.create_schedule(out)
    inj.schedule_injective(s, out)
    m.schedule(s, acc, ep)
    _workspace_pads(b, s, acc)
    return s, out


def _flat_shape(acc, root: Node) -> tuple:
    """The output stage's shape for a flat master: the accumulator's, except a last axis
    padded up to a packed panel (``[M, ceil(N/nb)*nb]``), which stores only the graph's N."""
    lead = math.prod(acc.shape[:-1])
    return tuple(acc.shape[:-1]) + (math.prod(root.shape) // lead,)


def _kernel_space(result: Lazy, gshape, kshape):
    """fn over the kernel's (flattened) index space reading ``result`` in graph space."""
    if tuple(gshape) == tuple(kshape):
        return lambda *idx: result(*idx)
    return inj.reshape(result, kshape).fn


def _rebase(result: Lazy, acc, ep, ob=None) -> Lazy:
    """``result`` with reads of the accumulator ``acc`` redirected to the epilogue stage ``ep``.

    The Lazy chain closes over ``acc``, so the reads are replaced in the expressions it
    builds."""
    fn = result.fn

    def f(*idx):
        return _substitute(fn(*idx), acc, ep, ob)
    return Lazy(result.shape, result.dtype, f)


def _substitute(e, acc, ep, ob):
    from compiler.tir import ir
    from compiler.tir.ops import Op as TOp

    def fn(x):
        if x.op is TOp.TENSOR_READ and x.arg is acc:
            idx = list(x.src)
            if ob is None:
                return ep[tuple(idx)]
            n_, oc, h, w, oi = idx
            return ep[n_, oc * ob + oi, h, w]
        return ir.map_children(x, fn)
    return fn(e)


def _workspace_pads(b, s, acc):
    """Padded copies read by ``acc`` (directly or through a helper stage such as an average
    pool's window sum) that the template left at the root become workspace arguments, not
    stack arrays (a template may instead copy them per parallel task: those stay local)."""
    stack, seen = [acc], set()
    while stack:
        t = stack.pop()
        if id(t) in seen or not hasattr(t.op, "body"):
            continue
        seen.add(id(t))
        if t.op.name.endswith("_pad"):
            if t not in b.workspace and s[t].attach == "root":
                b.workspace.append(t)
            continue
        stack.extend(t.op.reads())


def _collect_stages(b, out):
    """Every intermediate compute stage of ``out`` becomes a workspace argument."""
    seen = set()
    stack = [out]
    while stack:
        t = stack.pop()
        if id(t) in seen:
            continue
        seen.add(id(t))
        if hasattr(t.op, "body") and t is not out and t not in b.workspace:
            b.workspace.append(t)
        stack.extend(t.op.reads() if hasattr(t.op, "reads") else [])
