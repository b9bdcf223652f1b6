"""The `gpu_barriers` pass: insert block-wide barriers where shared memory needs them.

A buffer in the "shared" scope is visible to every thread of a block. When one
thread writes an element that another thread later reads (RAW), or overwrites an
element another thread read earlier (WAR), the two accesses must be separated by a barrier (`__syncthreads()` /
`barrier(CLK_LOCAL_MEM_FENCE)`). This pass walks the kernel in program order,
keeps the shared accesses made since the last barrier, and inserts a barrier
right before the first statement whose accesses conflict with them -- and only
there, not after every statement (the planner of TVM's `storage_sync` pass,
simplified).

Write-after-write between threads is not ordered by this pass (as in TVM): two
threads storing to one shared element without a read in between is a race in
the kernel itself. Two accesses provably do not conflict when
- their index intervals are disjoint (constant bounds over the loop and thread
  ranges), or
- they use the same index expression and that expression is injective in the
  thread and loop variables (a mixed-radix sum of variables), and every thread
  axis of the block appears in it: then equal addresses imply the same thread,
  which needs no barrier.
Otherwise a barrier is inserted (conservative).

Loops are planned to a fixed point so that conflicts carried from the end of one
iteration to the start of the next (the WAR of a tiled GEMM reloading its shared
tiles) get their barrier too. Barriers are only placed where every thread of the
block reaches them. A barrier that a loop needs on entry is placed before the
loop, not in its body. Inside branches whose condition is uniform over the block
(no thread variables) the pass recurses; a thread-dependent branch or a thread
loop narrower than the block is one unit, and if it would need a barrier inside,
the pass raises ValueError (such a kernel would deadlock).

The barrier is `Evaluate(CALL "storage_sync")` (`barrier()` builds it; `is_barrier`
tests for it). Global memory is not synchronized (a kernel cannot sync across
blocks); "local" buffers are private to a thread.
"""

from __future__ import annotations

from dataclasses import dataclass

from compiler.tir import dtype as dt
from compiler.tir import ir
from compiler.tir.bounds import INF, const_bounds
from compiler.tir.ops import ForKind, Op
from compiler.tir.simplify import linear
from compiler.tir.visit import substitute, walk_expr, walk_stmt

BARRIER_CALL = "storage_sync"
THREAD_AXES = ("blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z")
_LANE = ir.var("__lane")


def barrier() -> ir.Evaluate:
    """The block-wide barrier statement (shared memory fence + execution barrier)."""
    return ir.Evaluate(ir.Expr(Op.CALL, "int32", (), BARRIER_CALL))


def is_barrier(s) -> bool:
    return (isinstance(s, ir.Evaluate) and s.value.op is Op.CALL and s.value.arg == BARRIER_CALL)


def _const_int(e: ir.Expr, what: str) -> int:
    if e.op is not Op.CONST or not dt.is_int(e.dtype):
        raise ValueError(f"{what} must be a constant integer, not {e}; specialize the shape "
                         "before GPU code generation")
    return int(e.value)


def thread_extents(body: ir.Stmt) -> dict[str, int]:
    """{axis: launch extent} over every For bound to a GPU axis (the largest extent per axis).

    Raises ValueError for an unknown axis name or a non-constant extent.
    """
    out: dict[str, int] = {}
    for s in walk_stmt(body):
        if isinstance(s, ir.For) and s.thread is not None:
            if s.thread not in THREAD_AXES:
                raise ValueError(f"loop {s.var} is bound to {s.thread!r}; GPU code generation knows "
                                 f"{', '.join(THREAD_AXES)} (lower virtual threads first)")
            n = _const_int(s.extent, f"the extent of loop {s.var} bound to {s.thread}")
            out[s.thread] = max(out.get(s.thread, 0), n)
    return out


@dataclass(frozen=True)
class Access:
    buffer: ir.Buffer
    index: ir.Expr      # in canonical thread variables
    write: bool


class _Planner:
    def __init__(self, func: ir.PrimFunc):
        self.extents = thread_extents(func.body)
        self.axis_var = {a: ir.var(a.replace(".", "_")) for a in THREAD_AXES}
        self.canon: dict[ir.Expr, ir.Expr] = {}
        self.ranges: dict[ir.Expr, tuple] = {}
        for a, n in self.extents.items():
            self.ranges[self.axis_var[a]] = (0, n - 1)
        for s in walk_stmt(func.body):
            if not isinstance(s, ir.For):
                continue
            if s.thread is not None:
                self.canon[s.var] = self.axis_var[s.thread] + s.min if not ir.is_const(s.min, 0) \
                    else self.axis_var[s.thread]
            elif s.min.op is Op.CONST and s.extent.op is Op.CONST:
                self.ranges[s.var] = (s.min.value, s.min.value + s.extent.value - 1)
        self.thread_vars = {self.axis_var[a] for a, n in self.extents.items()
                            if a.startswith("threadIdx") and n > 1}
        self.block_vars = {self.axis_var[a] for a in self.extents if a.startswith("blockIdx")}

    # ---------------------------------------------------------- accesses

    def _accesses_expr(self, e: ir.Expr, out: list):
        for x in walk_expr(e):
            if x.op is Op.LOAD and x.arg.scope == "shared":
                out.append(Access(x.arg, substitute(x.src[0], self.canon), False))

    def accesses(self, s: ir.Stmt) -> list[Access]:
        out: list[Access] = []
        for x in walk_stmt(s):
            if isinstance(x, ir.Store):
                self._accesses_expr(x.value, out)
                for i in x.indices:
                    self._accesses_expr(i, out)
                if x.buffer.scope == "shared":
                    out.append(Access(x.buffer, substitute(x.indices[0], self.canon), True))
            elif isinstance(x, ir.For):
                self._accesses_expr(x.min, out)
                self._accesses_expr(x.extent, out)
            elif isinstance(x, ir.IfThenElse):
                self._accesses_expr(x.cond, out)
            elif isinstance(x, ir.LetStmt):
                self._accesses_expr(x.value, out)
            elif isinstance(x, ir.Evaluate):
                self._accesses_expr(x.value, out)
        return out

    # ---------------------------------------------------------- conflicts

    def _injective(self, index: ir.Expr) -> bool:
        """Equal values of `index` imply equal thread (and loop) variables."""
        if index.op is Op.RAMP:
            terms, c = linear(index.src[0])
            stride = index.src[1]
            if stride.op is not Op.CONST:
                return False
            terms = dict(terms)
            terms[_LANE] = stride.value
            lane_range = (0, index.arg - 1)
        elif dt.lanes(index.dtype) == 1:
            terms, c = linear(index)
            lane_range = None
        else:
            return False
        if not self.thread_vars <= set(terms):
            return False
        widths = []
        for atom, coef in terms.items():
            if atom in self.block_vars:
                continue
            if atom.op is not Op.VAR:
                return False
            lo, hi = lane_range if atom is _LANE else self.ranges.get(atom, (-INF, INF))
            if lo == -INF or hi == INF:
                return False
            if hi > lo:
                widths.append((abs(coef), hi - lo))
        reach = 0
        for coef, width in sorted(widths):
            if coef <= reach:
                return False
            reach += coef * width
        return True

    def conflict(self, a: Access, b: Access) -> bool:
        if a.buffer != b.buffer or not (a.write or b.write):
            return False
        if a.index == b.index and self._injective(a.index):
            return False
        la, ha = const_bounds(a.index, self.ranges)
        lb, hb = const_bounds(b.index, self.ranges)
        return not (ha < lb or hb < la)

    def needs_barrier(self, acc: list[Access], pending: frozenset) -> bool:
        for a in acc:
            for p in pending:
                if a.write != p.write and self.conflict(a, p):
                    return True
        return False

    # ---------------------------------------------------------- planning

    def _uniform(self, e: ir.Expr) -> bool:
        vs = {x for x in walk_expr(substitute(e, self.canon)) if x.op is Op.VAR}
        return not (vs & {self.axis_var[a] for a in THREAD_AXES if a.startswith("threadIdx")})

    def unit(self, s: ir.Stmt, pending: frozenset, why: str):
        children = ([s.body] if isinstance(s, ir.For)
                    else [c for c in (s.then_case, s.else_case) if c is not None])
        for c in children:
            inner, _ = self.plan(c, frozenset())
            if count_barriers(inner) > count_barriers(c):
                break
        else:
            inner = None
        if inner is not None:
            raise ValueError(f"{why} needs a barrier inside it, where not every thread of the block "
                             f"would reach it:\n{s}\nmove the shared-memory accesses out of the "
                             "branch or make its condition uniform over the block")
        acc = self.accesses(s)
        if self.needs_barrier(acc, pending):
            return ir.seq(barrier(), s), frozenset(acc)
        return s, pending | frozenset(acc)

    def plan(self, s: ir.Stmt, pending: frozenset):
        """(new statement, shared accesses pending after it)."""
        if is_barrier(s):
            return s, frozenset()
        if isinstance(s, ir.SeqStmt):
            out = []
            for c in s.stmts:
                c2, pending = self.plan(c, pending)
                out.append(c2)
            return ir.seq(*out), pending
        if isinstance(s, (ir.Allocate, ir.AttrStmt)):
            body, pending = self.plan(s.body, pending)
            return (ir.Allocate(s.buffer, body) if isinstance(s, ir.Allocate)
                    else ir.AttrStmt(s.key, s.value, body)), pending
        if isinstance(s, ir.LetStmt):
            acc = []
            self._accesses_expr(s.value, acc)
            pre = None
            if self.needs_barrier(acc, pending):
                pre, pending = barrier(), frozenset()
            body, pending = self.plan(s.body, pending | frozenset(acc))
            return ir.seq(pre, ir.LetStmt(s.var, s.value, body)), pending
        if isinstance(s, ir.For):
            if s.thread is not None and s.extent.value < self.extents[s.thread]:
                return self.unit(s, pending, f"loop {s.var} over part of {s.thread}")
            if s.kind is ForKind.PARALLEL:
                raise ValueError(f"loop {s.var} is PARALLEL, which has no meaning inside a GPU "
                                 "kernel; bind it to a thread axis instead")
            if s.thread is not None:
                body, pending = self.plan(s.body, pending)
                return ir.For(s.var, s.min, s.extent, s.kind, body, s.thread), pending
            pre = None
            if self.needs_barrier(self.accesses(s.body), pending):
                pre, pending = barrier(), frozenset()   # hoisted: once, not every iteration
            state = pending
            for _ in range(8):
                body, out = self.plan(s.body, state)
                nxt = pending | out
                if nxt == state:
                    break
                state = nxt
            return ir.seq(pre, ir.For(s.var, s.min, s.extent, s.kind, body, s.thread)), pending | out
        if isinstance(s, ir.IfThenElse):
            if not self._uniform(s.cond):
                return self.unit(s, pending, f"the thread-dependent branch if ({s.cond})")
            acc = []
            self._accesses_expr(s.cond, acc)
            pre = None
            if self.needs_barrier(acc, pending):
                pre, pending = barrier(), frozenset()
            pending = pending | frozenset(acc)
            t, pt = self.plan(s.then_case, pending)
            if s.else_case is None:
                return ir.seq(pre, ir.IfThenElse(s.cond, t, None)), pt | pending
            f, pf = self.plan(s.else_case, pending)
            return ir.seq(pre, ir.IfThenElse(s.cond, t, f)), pt | pf
        # Store, Evaluate
        acc = self.accesses(s)
        if self.needs_barrier(acc, pending):
            return ir.seq(barrier(), s), frozenset(acc)
        return s, pending | frozenset(acc)


def insert_barriers(func: ir.PrimFunc) -> ir.PrimFunc:
    """`func` with barriers before the statements whose shared accesses conflict with earlier ones.

    Idempotent: existing barriers are respected and no new one is added where
    they already separate the accesses. Raises ValueError when a barrier would be
    needed inside a thread-dependent branch.
    """
    body, _ = _Planner(func).plan(func.body, frozenset())
    return ir.PrimFunc(func.name, func.params, body)


def count_barriers(s: ir.Stmt | ir.PrimFunc) -> int:
    """How many barrier statements `s` contains (statically, not per execution)."""
    if isinstance(s, ir.PrimFunc):
        s = s.body
    return sum(1 for x in walk_stmt(s) if is_barrier(x))
