"""Parallel loops through libgomp: outlining and static chunking.

A parallel loop ``for i in [0, n) parallel: body`` becomes::

    struct closure { captured values..., i64 n };   // on the caller's stack
    GOMP_parallel(body_fn, &closure, 0 /* all threads */, 0);

    void body_fn(ptr closure) {                      // runs on every thread
        t = omp_get_thread_num(); T = omp_get_num_threads();
        chunk = (n + T - 1) / T; lo = t * chunk; hi = min(n, lo + chunk);
        for (i = lo; i < hi; ++i) body;              // "static" schedule
    }

The default ("dynamic", ``llvm.PARALLEL_SCHEDULE``) instead has the threads
claim chunks of about n / (8 * T) iterations from a shared atomic counter in
the closure (:func:`dynamic_chunks`): on a machine where another process
holds one of the cores, the other threads take over its chunks rather than
wait at the join for it.

A parallel loop whose nest does little work (:func:`stored_elements` under
``MIN_PARALLEL_WORK``) runs serially instead: a fork-join costs microseconds while the
pool's threads spin on idle cores, but up to a scheduler time slice (milliseconds) while
another process holds a core, since the join waits for every thread of the team. On a
loaded 2-core machine the digits CNN's three small kernels took 13 ms per run at 2 threads
against 0.011 ms at 1.

The captured values are the variables in scope at the loop (buffers,
enclosing loop variables, let-bound values); LLVM drops the loads the body
does not use. Allocations inside the body happen in ``body_fn`` and are
therefore private to each thread.
"""
from __future__ import annotations

import math

from llvmlite import ir

from compiler.tir import ir as tir
from compiler.tir.dtype import lanes
from compiler.tir.ops import Op

I32 = ir.IntType(32)
I64 = ir.IntType(64)
PTR = ir.PointerType()
CHUNKS_PER_THREAD = 8
#: elements a parallel loop's nest must store to be worth a fork-join: 2^15 stores are about
#: 10-30 us of work on one core, against a fork-join of a few us on idle cores
MIN_PARALLEL_WORK = 1 << 15


def stored_elements(s: tir.Stmt) -> float:
    """Elements that one run of ``s`` stores (a vector store counts its lanes), the measure of
    a nest's work; ``inf`` where it is not known at compile time (a loop extent that is not a
    constant, or an ``Evaluate``: an intrinsic call does work no store shows)."""
    if isinstance(s, tir.Store):
        return lanes(s.value.dtype)
    if isinstance(s, tir.SeqStmt):
        return sum(stored_elements(c) for c in s.stmts)
    if isinstance(s, tir.For):
        return s.extent.arg * stored_elements(s.body) if s.extent.op is Op.CONST else math.inf
    if isinstance(s, (tir.Allocate, tir.LetStmt, tir.AttrStmt)):
        return stored_elements(s.body)
    if isinstance(s, tir.IfThenElse):
        return max(stored_elements(s.then_case),
                   0 if s.else_case is None else stored_elements(s.else_case))
    return math.inf


def runtime_decl(module: ir.Module, name: str) -> ir.Function:
    """The declaration of a libgomp entry point (created once per module)."""
    if name in module.globals:
        return module.globals[name]
    sig = {
        "GOMP_parallel": ir.FunctionType(ir.VoidType(), [PTR, PTR, I32, I32]),
        "omp_get_thread_num": ir.FunctionType(I32, []),
        "omp_get_num_threads": ir.FunctionType(I32, []),
    }[name]
    return ir.Function(module, sig, name)


def pack_closure(builder: ir.IRBuilder, slot: ir.Value, struct: ir.LiteralStructType,
                 values: "list[ir.Value]") -> None:
    """Store ``values`` into the fields of the closure struct at ``slot``."""
    for i, value in enumerate(values):
        field = builder.gep(slot, [ir.Constant(I32, 0), ir.Constant(I32, i)], source_etype=struct)
        builder.store(value, field)


def unpack_closure(builder: ir.IRBuilder, closure: ir.Value,
                   struct: ir.LiteralStructType) -> "list[ir.Value]":
    """Load every field of the closure struct at ``closure``."""
    out = []
    for i, ty in enumerate(struct.elements):
        field = builder.gep(closure, [ir.Constant(I32, 0), ir.Constant(I32, i)], source_etype=struct)
        out.append(builder.load(field, typ=ty))
    return out


def static_chunk(builder: ir.IRBuilder, module: ir.Module, n: ir.Value) -> "tuple[ir.Value, ir.Value]":
    """This thread's ``[lo, hi)`` of ``[0, n)`` under a static schedule (i64 values)."""
    tid = builder.sext(builder.call(runtime_decl(module, "omp_get_thread_num"), []), I64)
    nthreads = builder.sext(builder.call(runtime_decl(module, "omp_get_num_threads"), []), I64)
    chunk = builder.sdiv(builder.add(n, builder.sub(nthreads, ir.Constant(I64, 1))), nthreads)
    lo = builder.mul(tid, chunk)
    end = builder.add(lo, chunk)
    hi = builder.select(builder.icmp_signed("<", end, n), end, n)
    return lo, hi


def call_parallel(builder: ir.IRBuilder, module: ir.Module, fn: ir.Function, closure: ir.Value) -> None:
    """``GOMP_parallel(fn, closure, 0, 0)``: run ``fn`` on every thread of the pool."""
    builder.call(runtime_decl(module, "GOMP_parallel"),
                 [fn, closure, ir.Constant(I32, 0), ir.Constant(I32, 0)])


def dynamic_chunks(builder: ir.IRBuilder, module: ir.Module, counter: ir.Value, n: ir.Value,
                   body) -> None:
    """Claim chunks of ``[0, n)`` from the shared i64 ``counter`` until none is left.

    Each thread repeatedly does ``first = atomic_fetch_add(counter, chunk)`` and
    runs ``body(first, min(first + chunk, n))``; ``chunk`` is about
    ``n / (8 * threads)`` (at least 1), so a thread slowed by another process
    on its core leaves its share to the others instead of delaying the join.
    """
    nthreads = builder.sext(builder.call(runtime_decl(module, "omp_get_num_threads"), []), I64)
    parts = builder.mul(nthreads, ir.Constant(I64, CHUNKS_PER_THREAD))
    chunk = builder.sdiv(builder.add(n, builder.sub(parts, ir.Constant(I64, 1))), parts)
    chunk = builder.select(builder.icmp_signed("<", chunk, ir.Constant(I64, 1)),
                           ir.Constant(I64, 1), chunk)
    claim = builder.append_basic_block("chunk.claim")
    work = builder.append_basic_block("chunk.work")
    done = builder.append_basic_block("chunk.done")
    builder.branch(claim)
    builder.position_at_end(claim)
    first = builder.atomic_rmw("add", counter, chunk, "monotonic")
    builder.cbranch(builder.icmp_signed("<", first, n), work, done)
    builder.position_at_end(work)
    end = builder.add(first, chunk)
    last = builder.select(builder.icmp_signed("<", end, n), end, n)
    body(first, last)
    builder.branch(claim)
    builder.position_at_end(done)
