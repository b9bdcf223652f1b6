"""Passes as before/expected IR, checked by the verifier and the interpreter."""

import numpy as np
import pytest

from compiler.tir import interp, ir
from compiler.tir.ops import ForKind
from compiler.tir.passes.flatten import storage_flatten
from compiler.tir.passes.loop_partition import loop_partition
from compiler.tir.passes.unroll import unroll
from compiler.tir.passes.vectorize import vectorize
from compiler.tir.passes.vthread import inject_virtual_thread
from compiler.tir.pipeline import DEFAULT_PIPELINE, run_pipeline
from compiler.tir.simplify import simplify
from compiler.tir.verify import verify

S, V, U, P = ForKind.SERIAL, ForKind.VECTORIZED, ForKind.UNROLLED, ForKind.PARALLEL
i, j, io, ii = (ir.var(n) for n in ("i", "j", "io", "ii"))


def loop(v, lo, n, body, kind=S, thread=None):
    return ir.For(v, ir.const(lo), ir.const(n), kind, body, thread)


def func(body, *bufs):
    f = ir.PrimFunc("f", bufs, body)
    verify(f)
    return f


def test_loop_partition_splits_off_the_tail():
    A = ir.Buffer("A", "float32", (10,))
    store = ir.Store(A, ir.const(1.0), (io * 4 + ii,))
    before = func(loop(io, 0, 3, loop(ii, 0, 4, ir.IfThenElse(io * 4 + ii < 10, store))), A)
    after = simplify(loop_partition(before))
    expected = ir.seq(
        loop(io, 0, 2, loop(ii, 0, 4, ir.Store(A, ir.const(1.0), (ii + io * 4,)))),
        loop(ii, 0, 2, ir.Store(A, ir.const(1.0), (ii + 8,))))
    assert after.body == expected
    verify(after)


def test_loop_partition_lower_bound_guard_keeps_suffix():
    A = ir.Buffer("A", "float32", (8,))
    before = func(loop(i, 0, 8, ir.IfThenElse(i >= 3, ir.Store(A, ir.const(1.0), (i,)))), A)
    after = simplify(loop_partition(before))
    assert after.body == loop(i, 3, 5, ir.Store(A, ir.const(1.0), (i,)))


def test_loop_partition_cuts_a_padded_copy_into_border_and_plain_interior():
    # B[i] = A[i - 1] for 1 <= i < 5, else 0: a 1-column border each side of 4 columns
    A, B = ir.Buffer("A", "float32", (4,)), ir.Buffer("B", "float32", (6,))
    copy = ir.IfThenElse(ir.logical_and(i - 1 >= 0, i - 1 < 4),
                         ir.Store(B, ir.load(A, [i - 1]), (i,)),
                         ir.Store(B, ir.const(0.0), (i,)))
    after = simplify(loop_partition(func(loop(i, 0, 6, copy), A, B)))
    assert after.body == ir.seq(ir.Store(B, ir.const(0.0), (ir.const(0),)),
                                loop(i, 1, 4, ir.Store(B, ir.load(A, [i - 1]), (i,))),
                                ir.Store(B, ir.const(0.0), (ir.const(5),)))


def test_loop_partition_leaves_an_if_else_over_more_than_a_store():
    A = ir.Buffer("A", "float32", (8,))
    then = ir.seq(ir.Store(A, ir.const(1.0), (i,)), ir.Store(A, ir.const(2.0), (i,)))
    before = func(loop(i, 0, 8, ir.IfThenElse(i >= 3, then, ir.Store(A, ir.const(0.0), (i,)))), A)
    assert simplify(loop_partition(before)).body == simplify(before).body


def test_unroll_copies_body():
    A = ir.Buffer("A", "int32", (3,))
    before = func(loop(i, 0, 3, ir.Store(A, i * 2, (i,)), U), A)
    expected = ir.seq(*(ir.Store(A, ir.const(k) * 2, (ir.const(k),)) for k in range(3)))
    assert unroll(before).body == expected


def test_specialize_keeps_the_loop_and_copies_body_per_case():
    # a parallel loop with the specialize pragma: still parallel, one case per iteration
    from compiler.tir.passes.unroll import SPECIALIZE
    A = ir.Buffer("A", "int32", (3,))
    body = ir.Store(A, ir.select(ir.eq(i, 1), i * 5, i * 2), (i,))
    before = func(ir.AttrStmt(SPECIALIZE, True, loop(i, 0, 3, body, P)), A)
    cases = ir.seq(*(ir.IfThenElse(ir.eq(i, k), ir.Store(A, ir.const(k * (5 if k == 1 else 2)),
                                                         (ir.const(k),)))
                     for k in range(3)))
    assert simplify(unroll(before)).body == loop(i, 0, 3, cases, P)
    with pytest.raises(ValueError, match="specialize pragma must be on a loop, not on Store"):
        unroll(func(ir.AttrStmt(SPECIALIZE, True, ir.Store(A, ir.const(1), (ir.const(0),))), A))


def test_storage_flatten_uses_strides():
    A = ir.Buffer("A", "float32", (3, 5), (8, 1))
    f = ir.PrimFunc("f", (A, i, j), ir.Store(A, ir.load(A, [j, i]), (i, j)))
    verify(f)
    after = storage_flatten(f)
    assert after.body == ir.Store(A, ir.load(A, [j * 8 + i]), (i * 8 + j,))
    verify(after, flat=True)


def test_vectorize_affine_loop_to_ramps():
    A = ir.Buffer("A", "float32", (16,))
    B = ir.Buffer("B", "float32", (32,))
    x = ir.var("x", "float32")
    body = loop(i, 0, 8, ir.Store(A, ir.load(B, [i * 2 + 1]) * x, (i + 8,)), V)
    after = vectorize(func(body, A, B, x))
    expected = ir.Store(A, ir.load(B, [ir.ramp(1, 2, 8)], 8) * ir.broadcast(x, 8), (ir.ramp(8, 1, 8),))
    assert after.body == expected
    verify(after, flat=True)


@pytest.mark.parametrize("case", ["reduction", "non_affine", "branch"])
def test_vectorize_falls_back_to_serial(case):
    A = ir.Buffer("A", "float32", (16,))
    if case == "reduction":
        body = ir.Store(A, ir.load(A, [ir.const(0)]) + ir.load(A, [i]), (ir.const(0),))
    elif case == "non_affine":
        body = ir.Store(A, ir.const(1.0), ((i * i),))
    else:
        body = ir.IfThenElse(i < 3, ir.Store(A, ir.const(1.0), (i,)))
    before = func(loop(i, 0, 4, body, V), A)
    assert vectorize(before).body == loop(i, 0, 4, body, S)


def test_vectorize_keeps_serial_semantics_on_interpreter():
    A = ir.Buffer("A", "int32", (12,))
    body = loop(i, 0, 4, ir.seq(ir.Store(A, i * 3, (i,)), ir.Store(A, ir.load(A, [i]) + 1, (i,))), V)
    f = func(body, A)
    out_s, out_v = np.zeros(12, "int32"), np.zeros(12, "int32")
    interp.run(f, out_s)
    g = vectorize(f)
    assert "ramp" in repr(g)
    interp.run(g, out_v)
    np.testing.assert_array_equal(out_s, out_v)


def test_inject_virtual_thread_sinks_loops_and_copies_buffers():
    A = ir.Buffer("A", "float32", (4, 3))
    T = ir.Buffer("T", "float32", (3,), scope="local")
    vt = ir.var("vt")
    inner = ir.Allocate(T, loop(j, 0, 3, ir.seq(ir.Store(T, ir.load(A, [vt * 2, j]), (j,)),
                                                ir.Store(A, ir.load(T, [j]) * 2.0, (vt * 2, j)))))
    before = func(loop(vt, 0, 2, inner, thread="vthread"), A)
    after = inject_virtual_thread(before)
    verify(after)
    T0, T1 = (ir.Buffer(f"T.vt{k}", "float32", (3,), scope="local") for k in range(2))

    def copies(fn):
        return ir.seq(*(ir.AttrStmt("virtual_thread", k, fn(k, t)) for k, t in enumerate((T0, T1))))

    expected = ir.Allocate(T0, ir.Allocate(T1, loop(j, 0, 3, ir.seq(
        copies(lambda k, t: ir.Store(t, ir.load(A, [ir.const(k) * 2, j]), (j,))),
        copies(lambda k, t: ir.Store(A, ir.load(t, [j]) * 2.0, (ir.const(k) * 2, j)))))))
    assert after.body == expected
    a0 = np.arange(12, dtype="float32").reshape(4, 3)
    a1 = a0.copy()
    interp.run(before, a0)
    interp.run(after, a1)
    np.testing.assert_array_equal(a0, a1)


def test_pipeline_verifies_after_each_pass_and_names_it():
    A = ir.Buffer("A", "float32", (4,))
    good = func(loop(i, 0, 4, ir.Store(A, ir.const(0.0), (i,)), V), A)
    out = run_pipeline(good, DEFAULT_PIPELINE, check=True)
    assert out.body == ir.Store(A, ir.broadcast(ir.const(0.0), 4), (ir.ramp(0, 1, 4),))

    def broken(f):
        return ir.PrimFunc(f.name, f.params, ir.Store(A, ir.var("ghost", "float32"), (ir.const(0),)))

    with pytest.raises(ValueError, match="after pass 'broken': Store: variable 'ghost' is not bound"):
        run_pipeline(good, [("broken", broken)], check=True)
