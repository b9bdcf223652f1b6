"""The gpu_barriers pass: barriers where shared memory needs them, none where it provably does not."""

import pytest

from compiler.tir.passes.gpu_barriers import barrier, count_barriers, insert_barriers, is_barrier
from compiler.tir import ir
from compiler.tir.ops import ForKind

S = ForKind.SERIAL
tx, ty, i, j = ir.var("tx"), ir.var("ty"), ir.var("i"), ir.var("j")
SH = ir.Buffer("sh", "float32", (64,), scope="shared")
LOC = ir.Buffer("loc", "float32", (4,), scope="local")
A = ir.Buffer("A", "float32", (64,))
Bout = ir.Buffer("B", "float32", (64,))


def kernel(*stmts, threads=32, buffers=(SH,)):
    body = ir.seq(*stmts)
    for b in buffers:
        body = ir.Allocate(b, body)
    body = ir.For(tx, ir.const(0), ir.const(threads), S, body, "threadIdx.x")
    return ir.PrimFunc("k", (A, Bout), body)


def loop(v, n, body, kind=S):
    return ir.For(v, ir.const(0), ir.const(n), kind, body)


def body_stmts(f):
    s = f.body.body.body   # For(tx) -> Allocate -> seq
    return list(s.stmts) if isinstance(s, ir.SeqStmt) else [s]


def test_raw_across_threads_needs_barrier():
    f = insert_barriers(kernel(ir.Store(SH, ir.load(A, [tx]), (tx,)),
                               ir.Store(Bout, ir.load(SH, [31 - tx]), (tx,))))
    assert [type(s).__name__ for s in body_stmts(f)] == ["Store", "Evaluate", "Store"]
    assert is_barrier(body_stmts(f)[1])


def test_same_thread_read_back_needs_no_barrier():
    f = kernel(ir.Store(SH, ir.load(A, [tx]), (tx,)),
               ir.Store(SH, ir.load(SH, [tx]) * 2.0, (tx,)),
               ir.Store(Bout, ir.load(SH, [tx]), (tx,)))
    assert count_barriers(insert_barriers(f)) == 0


def test_same_thread_strided_in_loop_needs_no_barrier():
    # sh[tx + 32*i] is injective in (tx, i): each element has one writer, which is also the reader
    f = kernel(loop(i, 2, ir.Store(SH, ir.load(A, [tx + i * 32]), (tx + i * 32,))),
               loop(j, 2, ir.Store(Bout, ir.load(SH, [tx + j * 32]), (tx + j * 32,))))
    assert count_barriers(insert_barriers(f)) == 1   # different loop variables: not provable
    f2 = kernel(loop(i, 2, ir.seq(ir.Store(SH, ir.load(A, [tx + i * 32]), (tx + i * 32,)),
                                  ir.Store(Bout, ir.load(SH, [tx + i * 32]), (tx + i * 32,)))))
    assert count_barriers(insert_barriers(f2)) == 0


def test_disjoint_halves_need_no_barrier():
    f = kernel(ir.Store(SH, ir.load(A, [tx]), (tx,)),
               ir.Store(Bout, ir.load(SH, [tx + 32]), (tx,)))
    assert count_barriers(insert_barriers(f)) == 0


def test_non_injective_index_needs_barrier():
    # two threads share sh[tx // 2]: equal indices do not prove the same thread
    f = kernel(ir.Store(SH, ir.load(A, [tx]), (tx // 2,)),
               ir.Store(Bout, ir.load(SH, [tx // 2]), (tx,)))
    assert count_barriers(insert_barriers(f)) == 1


def test_local_buffers_never_need_barriers():
    f = kernel(ir.Store(LOC, ir.load(A, [tx]), (ir.const(0),)),
               ir.Store(Bout, ir.load(LOC, [ir.const(0)]), (tx,)), buffers=(LOC,))
    assert count_barriers(insert_barriers(f)) == 0


def test_loop_carried_war_gets_one_barrier_per_hazard():
    # the tiled-GEMM shape: load tile -> use tile, repeated: a RAW and a loop-carried WAR
    f = kernel(loop(i, 4, ir.seq(
        ir.Store(SH, ir.load(A, [tx + i]), (tx,)),
        ir.Store(Bout, ir.load(SH, [31 - tx]), (tx,)))))
    out = insert_barriers(f)
    assert count_barriers(out) == 2
    body = body_stmts(out)[0].body.stmts
    assert is_barrier(body[0]) and is_barrier(body[2])


def test_barrier_needed_on_loop_entry_is_hoisted():
    f = kernel(ir.Store(SH, ir.load(A, [tx]), (tx,)),
               loop(i, 4, ir.Store(Bout, ir.load(SH, [i]), (tx,))))
    stmts = body_stmts(insert_barriers(f))
    assert is_barrier(stmts[1]) and isinstance(stmts[2], ir.For)
    assert count_barriers(stmts[2]) == 0


def test_existing_barrier_is_respected_and_pass_is_idempotent():
    f = kernel(ir.Store(SH, ir.load(A, [tx]), (tx,)), barrier(),
               ir.Store(Bout, ir.load(SH, [31 - tx]), (tx,)))
    once = insert_barriers(f)
    assert count_barriers(once) == 1
    assert insert_barriers(once) == once


def test_tree_reduction_has_a_barrier_per_step():
    steps = []
    s = 16
    while s >= 1:
        steps.append(ir.IfThenElse(tx < s, ir.Store(SH, ir.load(SH, [tx]) + ir.load(SH, [tx + s]), (tx,))))
        s //= 2
    f = kernel(ir.Store(SH, ir.load(A, [tx]), (tx,)), *steps,
               ir.Store(Bout, ir.load(SH, [ir.const(0)]), (tx,)))
    assert count_barriers(insert_barriers(f)) == 6   # before each of 5 steps and before the read


def test_barrier_inside_thread_dependent_branch_is_refused():
    f = kernel(ir.IfThenElse(tx < 16, ir.seq(ir.Store(SH, ir.load(A, [tx]), (tx,)),
                                             ir.Store(Bout, ir.load(SH, [15 - tx]), (tx,)))))
    with pytest.raises(ValueError, match="thread-dependent branch"):
        insert_barriers(f)


def test_uniform_branch_gets_barriers_inside():
    n = ir.var("n")
    f = kernel(ir.IfThenElse(n > 0, ir.seq(ir.Store(SH, ir.load(A, [tx]), (tx,)),
                                           ir.Store(Bout, ir.load(SH, [31 - tx]), (tx,)))))
    out = insert_barriers(f)
    then = body_stmts(out)[0].then_case.stmts
    assert is_barrier(then[1])


def test_two_dimensional_threads_need_both_axes_for_the_proof():
    body = ir.seq(ir.Store(SH, ir.load(A, [tx]), (tx,)), ir.Store(Bout, ir.load(SH, [tx]), (tx,)))
    body = ir.Allocate(SH, body)
    body = ir.For(tx, ir.const(0), ir.const(32), S, body, "threadIdx.x")
    body = ir.For(ty, ir.const(0), ir.const(2), S, body, "threadIdx.y")
    f = ir.PrimFunc("k", (A, Bout), body)
    # threads (tx, 0) and (tx, 1) both write sh[tx]: equal index, different threads
    assert count_barriers(insert_barriers(f)) == 1
