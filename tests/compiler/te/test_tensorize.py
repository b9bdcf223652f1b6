"""Tensorize against a toy 4x4 matrix-vector intrinsic written as loop IR (so the interpreter runs it)."""

import numpy as np
import pytest

from compiler import te, tir
from compiler.tir import ir
from compiler.tir.ops import ForKind


def gemv4(layouts=None):
    """y[j] = sum_k x[k] * w[k, j] over 4x4, as loops on the bound buffer views."""
    x = te.placeholder((4,), name="x")
    w = te.placeholder((4, 4), name="w")
    k = te.reduce_axis(4, "k")
    y = te.compute((4,), lambda j: te.sum(x[k] * w[k, j], axis=k), name="y")

    def impl(ins, outs):
        xv, wv = ins
        (yv,) = outs
        j, kk = ir.var("tj"), ir.var("tk")
        reset = ir.For(j, ir.const(0), ir.const(4), ForKind.SERIAL, yv.vstore((j,), 0.0))
        update = ir.For(j, ir.const(0), ir.const(4), ForKind.SERIAL,
                        ir.For(kk, ir.const(0), ir.const(4), ForKind.SERIAL,
                               yv.vstore((j,), yv.vload(j) + xv.vload(kk) * wv.vload(kk, j))))
        return ir.seq(reset, update), reset, update

    return te.decl_tensor_intrin(y, impl, "gemv4", layouts)


def matmul(m, n, k):
    A = te.placeholder((m, k), name="A")
    B = te.placeholder((k, n), name="B")
    r = te.reduce_axis(k, "r")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    return A, B, C


@pytest.mark.parametrize("split_k", [True, False])
def test_tensorize_matmul_matches_numpy(run, rand, split_k):
    A, B, C = matmul(3, 8, 8 if split_k else 4)
    s = te.create_schedule(C)
    i, j = C.op.axis
    (r,) = C.op.reduce_axis
    jo, ji = s[C].split(j, 4)
    if split_k:
        ro, ri = s[C].split(r, 4)
        s[C].reorder(i, jo, ro, ji, ri)
    else:
        s[C].reorder(i, jo, ji, r)
    s[C].tensorize(ji, gemv4())
    a, b = rand(3, 8 if split_k else 4), rand(8 if split_k else 4, 8)
    out, func = run(s, [A, B, C], {"A": a, "B": b})
    np.testing.assert_allclose(out["C"], a @ b, rtol=1e-5, atol=1e-5)
    assert "'tensorize', 'gemv4'" in repr(func)


def test_tensorize_shape_mismatch_names_stage_axis_and_shapes():
    A, B, C = matmul(3, 9, 4)
    s = te.create_schedule(C)
    jo, ji = s[C].split(C.op.axis[1], 3)
    s[C].reorder(C.op.axis[0], jo, ji, C.op.reduce_axis[0])
    s[C].tensorize(ji, gemv4())
    with pytest.raises(te.ScheduleError, match=r"tensorize: in stage 'C' at axis 'j.inner' the inner "
                       r"loops cover a \(4, 3\) region of input 'B', but intrinsic 'gemv4' expects "
                       r"\(4, 4\); split the loops so the inner ones match the intrinsic"):
        tir.lower(s, [A, B, C], "f")


def test_tensorize_requires_declared_scope():
    A, B, C = matmul(2, 4, 4)
    s = te.create_schedule(C)
    s[C].reorder(C.op.axis[0], C.op.axis[1], C.op.reduce_axis[0])
    s[C].tensorize(C.op.axis[1], gemv4({"w": te.Layout("local.wgt_buffer")}))
    with pytest.raises(te.ScheduleError, match="intrinsic 'gemv4' needs 'B' in scope 'local.wgt_buffer', "
                       "but it is in 'global'; cache it into 'local.wgt_buffer'"):
        tir.lower(s, [A, B, C], "f")


def test_tensorize_with_cached_operand_in_required_scope(run, rand):
    A, B, C = matmul(2, 4, 4)
    s = te.create_schedule(C)
    BL = s.cache_read(B, "local.wgt_buffer", [C])
    s[C].reorder(C.op.axis[0], C.op.axis[1], C.op.reduce_axis[0])
    s[C].tensorize(C.op.axis[1], gemv4({"w": te.Layout("local.wgt_buffer")}))
    s[BL].compute_at(s[C], C.op.axis[0])
    a, b = rand(2, 4), rand(4, 4)
    out, _ = run(s, [A, B, C], {"A": a, "B": b})
    np.testing.assert_allclose(out["C"], a @ b, rtol=1e-5, atol=1e-5)


def test_compute_at_inside_tensorized_loops_is_an_error():
    A, B, C = matmul(2, 4, 4)
    s = te.create_schedule(C)
    BL = s.cache_read(B, "local", [C])
    i, j = C.op.axis
    (r,) = C.op.reduce_axis
    s[C].reorder(i, j, r)
    s[C].tensorize(j, gemv4())
    s[BL].compute_at(s[C], r)
    with pytest.raises(te.ScheduleError, match="compute_at: stage 'B.local' is attached to axis 'r' of "
                       "'C', inside the loops tensorized at 'j'; attach it outside them"):
        tir.lower(s, [A, B, C], "f")


def test_intrinsic_as_call_with_access_pointers():
    """An accelerator-style intrinsic: one CALL per tile with the operands' addresses."""
    A, B, C = matmul(2, 8, 4)
    s = te.create_schedule(C)
    jo, ji = s[C].split(C.op.axis[1], 4)
    s[C].reorder(C.op.axis[0], jo, ji, C.op.reduce_axis[0])

    def impl(ins, outs):
        return ir.seq(*(ir.Evaluate(v.access_ptr()) for v in (*ins, *outs)))

    x = te.placeholder((4,), name="x")
    w = te.placeholder((4, 4), name="w")
    k = te.reduce_axis(4, "k")
    y = te.compute((4,), lambda j: te.sum(x[k] * w[k, j], axis=k), name="y")
    s[C].tensorize(ji, te.decl_tensor_intrin(y, impl, "gemv_call"))
    func = tir.lower(s, [A, B, C], "f", check=True)
    text = repr(func)
    assert "address_of(A[(i * 4)])" in text and "address_of(B[(j.outer * 4)])" in text
    assert "address_of(C[((i * 8) + (j.outer * 4))])" in text


def test_tensorize_over_a_split_tail_is_an_error():
    A, B, C = matmul(2, 6, 4)
    s = te.create_schedule(C)
    jo, ji = s[C].split(C.op.axis[1], 4)
    s[C].reorder(C.op.axis[0], jo, ji, C.op.reduce_axis[0])
    s[C].tensorize(ji, gemv4())
    with pytest.raises(te.ScheduleError, match=r"tensorize: the loops of stage 'C' from axis 'j.inner' "
                       r"inward need the boundary check .*; use split factors that divide the extents"):
        tir.lower(s, [A, B, C], "f")


def test_tensorize_inside_outer_split_tail_keeps_the_guard(run, rand):
    A, B, C = matmul(3, 4, 4)
    s = te.create_schedule(C)
    io, ii = s[C].split(C.op.axis[0], 2)
    s[C].reorder(io, ii, C.op.axis[1], C.op.reduce_axis[0])
    s[C].tensorize(C.op.axis[1], gemv4())
    a, b = rand(3, 4), rand(4, 4)
    out, _ = run(s, [A, B, C], {"A": a, "B": b})
    np.testing.assert_allclose(out["C"], a @ b, rtol=1e-5, atol=1e-5)


def test_tensorize_offset_factor_checks_alignment(run, rand):
    A, B, C = matmul(2, 8, 4)
    s = te.create_schedule(C)
    jo, ji = s[C].split(C.op.axis[1], 4)
    s[C].reorder(C.op.axis[0], jo, ji, C.op.reduce_axis[0])
    s[C].tensorize(ji, gemv4({"y": te.Layout(offset_factor=4), "x": te.Layout(offset_factor=4)}))
    a, b = rand(2, 4), rand(4, 8)
    out, _ = run(s, [A, B, C], {"A": a, "B": b})
    np.testing.assert_allclose(out["C"], a @ b, rtol=1e-5, atol=1e-5)
    s[C].tensorize(ji, gemv4({"y": te.Layout(offset_factor=8)}))
    with pytest.raises(te.ScheduleError, match=r"tensorize: in stage 'C' at axis 'j.inner', operand "
                       r"'y' of intrinsic 'gemv4' starts at element .* of 'C', not always a multiple "
                       r"of its offset_factor 8 .*; split the loops over 'C'"):
        tir.lower(s, [A, B, C], "f")


def test_layout_for_unknown_operand():
    with pytest.raises(ValueError, match="layout for 'z', which is not an operand"):
        gemv4({"z": te.Layout("local")})
