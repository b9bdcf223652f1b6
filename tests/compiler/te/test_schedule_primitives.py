"""Every schedule primitive lowered, run in the reference interpreter and compared with numpy."""

import numpy as np
import pytest

from compiler import te


def matmul(m, n, k, dtype="float32"):
    A = te.placeholder((m, k), dtype, "A")
    B = te.placeholder((k, n), dtype, "B")
    r = te.reduce_axis(k, "k")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    return A, B, C


@pytest.mark.parametrize("factor", [1, 3, 4, 7, 16])
def test_split_by_factor_matches_numpy(run, rand, factor):
    A, B, C = matmul(7, 5, 3)
    s = te.create_schedule(C)
    s[C].split(C.op.axis[0], factor=factor)
    a, b = rand(7, 3), rand(3, 5)
    out, _ = run(s, [A, B, C], {"A": a, "B": b})
    np.testing.assert_allclose(out["C"], a @ b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("nparts", [1, 2, 3, 5])
def test_split_by_nparts_matches_numpy(run, rand, nparts):
    A, B, C = matmul(5, 4, 3)
    s = te.create_schedule(C)
    s[C].split(C.op.axis[1], nparts=nparts)
    a, b = rand(5, 3), rand(3, 4)
    out, _ = run(s, [A, B, C], {"A": a, "B": b})
    np.testing.assert_allclose(out["C"], a @ b, rtol=1e-5, atol=1e-5)


def test_split_reduce_axis_fuse_reorder_tile(run, rand):
    A, B, C = matmul(6, 10, 7)
    s = te.create_schedule(C)
    i, j = C.op.axis
    (k,) = C.op.reduce_axis
    io, jo, ii, ji = s[C].tile(i, j, 4, 3)
    ko, ki = s[C].split(k, 2)
    s[C].reorder(io, jo, ko, ii, ki, ji)
    f = s[C].fuse(io, jo)
    s[C].parallel(f)
    s[C].vectorize(ji)
    s[C].unroll(ki)
    a, b = rand(6, 7), rand(7, 10)
    out, _ = run(s, [A, B, C], {"A": a, "B": b})
    np.testing.assert_allclose(out["C"], a @ b, rtol=1e-5, atol=1e-5)


def test_size_one_axes(run, rand):
    A, B, C = matmul(1, 1, 1)
    s = te.create_schedule(C)
    io, ii = s[C].split(C.op.axis[0], 4)
    s[C].vectorize(ii)
    a, b = rand(1, 1), rand(1, 1)
    out, _ = run(s, [A, B, C], {"A": a, "B": b})
    np.testing.assert_allclose(out["C"], a @ b, rtol=1e-6)


def test_vectorize_emits_ramp_when_split_divides(run, rand):
    A = te.placeholder((4, 16), name="A")
    B = te.compute((4, 16), lambda i, j: A[i, j] * 2.0 + 1.0, name="B")
    s = te.create_schedule(B)
    jo, ji = s[B].split(B.op.axis[1], 8)
    s[B].vectorize(ji)
    a = rand(4, 16)
    out, func = run(s, [A, B], {"A": a})
    np.testing.assert_allclose(out["B"], a * 2 + 1, rtol=1e-6)
    text = repr(func)
    assert "ramp(" in text and "if " not in text


def test_fused_axis_indices_fold(run, rand):
    A = te.placeholder((3, 5), name="A")
    B = te.compute((3, 5), lambda i, j: A[i, j] + 1.0, name="B")
    s = te.create_schedule(B)
    f = s[B].fuse(*B.op.axis)
    s[B].vectorize(s[B].split(f, 15)[1])
    a = rand(3, 5)
    out, func = run(s, [A, B], {"A": a})
    np.testing.assert_allclose(out["B"], a + 1)
    assert "//" not in repr(func) and "%" not in repr(func)


def test_compute_at_with_uneven_split_and_offsets(run, rand):
    A = te.placeholder((10,), name="A")
    B = te.compute((10,), lambda i: A[i] * 3.0, name="B")
    C = te.compute((8,), lambda i: B[i] + B[i + 2], name="C")
    s = te.create_schedule(C)
    co, ci = s[C].split(C.op.axis[0], 3)
    s[B].compute_at(s[C], co)
    a = rand(10)
    out, func = run(s, [A, C], {"A": a})
    np.testing.assert_allclose(out["C"], a[:8] * 3 + a[2:] * 3, rtol=1e-6)
    alloc = [b for b in _allocs(func) if b.name == "B"]
    assert alloc and alloc[0].shape == (5,)


def test_compute_at_inner_axis_of_2d(run, rand):
    A = te.placeholder((6, 7), name="A")
    B = te.compute((6, 7), lambda i, j: A[i, j] + 1.0, name="B")
    C = te.compute((6, 7), lambda i, j: B[i, j] * 2.0, name="C")
    s = te.create_schedule(C)
    s[B].compute_at(s[C], C.op.axis[0])
    a = rand(6, 7)
    out, func = run(s, [A, C], {"A": a})
    np.testing.assert_allclose(out["C"], (a + 1) * 2, rtol=1e-6)
    assert [b.shape for b in _allocs(func)] == [(1, 7)]


def test_compute_at_a_consumer_that_reads_through_another_stage(run, rand):
    """TVM-VTA's tutorials attach a chain B -> C at the loop of D, which reads only C:
    B's region comes from C's reads over C's whole nest there."""
    A = te.placeholder((6, 8), name="A")
    B = te.compute((6, 8), lambda i, j: A[i, j] + 1.0, name="B")
    C = te.compute((6, 7), lambda i, j: B[i, j] * B[i, j + 1], name="C")
    D = te.compute((6, 7), lambda i, j: C[i, j] - 2.0, name="D")
    s = te.create_schedule(D)
    s[B].compute_at(s[D], D.op.axis[0])
    s[C].compute_at(s[D], D.op.axis[0])
    a = rand(6, 8)
    out, func = run(s, [A, D], {"A": a})
    np.testing.assert_allclose(out["D"], (a[:, :7] + 1) * (a[:, 1:] + 1) - 2, rtol=1e-6)
    assert sorted(b.shape for b in _allocs(func)) == [(1, 7), (1, 8)]


def test_compute_inline(run, rand):
    A = te.placeholder((4, 5), name="A")
    B = te.compute((4, 5), lambda i, j: A[i, j] * 2.0, name="B")
    C = te.compute((4, 5), lambda i, j: B[i, j] + B[i, j], name="C")
    s = te.create_schedule(C)
    s[B].compute_inline()
    a = rand(4, 5)
    out, func = run(s, [A, C], {"A": a})
    np.testing.assert_allclose(out["C"], a * 4, rtol=1e-6)
    assert not _allocs(func)


def test_compute_root_intermediate_is_allocated(run, rand):
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] + 1.0, name="B")
    C = te.compute((4,), lambda i: B[i] * B[i], name="C")
    s = te.create_schedule(C)
    s[B].compute_root()
    s[B].set_scope("local")
    a = rand(4)
    out, func = run(s, [A, C], {"A": a})
    np.testing.assert_allclose(out["C"], (a + 1) ** 2, rtol=1e-6)
    assert [(b.name, b.scope) for b in _allocs(func)] == [("B", "local")]


def test_cache_read_and_cache_write_with_compute_at(run, rand):
    A, B, C = matmul(5, 6, 4)
    s = te.create_schedule(C)
    AL = s.cache_read(A, "local", [C])
    CL = s.cache_write(C, "local")
    i, j = C.op.axis
    io, ii = s[C].split(i, 2)
    s[CL].compute_at(s[C], io)
    ci, cj = s[CL].op.axis
    (k,) = s[CL].op.reduce_axis
    s[CL].reorder(k, ci, cj)
    s[AL].compute_at(s[CL], k)
    a, b = rand(5, 4), rand(4, 6)
    out, func = run(s, [A, B, C], {"A": a, "B": b})
    np.testing.assert_allclose(out["C"], a @ b, rtol=1e-5, atol=1e-5)
    shapes = {b.name: (b.shape, b.scope) for b in _allocs(func)}
    assert shapes == {"C.local": ((2, 6), "local"), "A.local": ((2, 1), "local")}


def test_storage_align_pads_row_stride(run, rand):
    A = te.placeholder((3, 5), name="A")
    B = te.compute((3, 5), lambda i, j: A[i, j] + 1.0, name="B")
    C = te.compute((3, 5), lambda i, j: B[i, j] * 2.0, name="C")
    s = te.create_schedule(C)
    s[B].storage_align(B.op.axis[0], 8, 1)
    a = rand(3, 5)
    out, func = run(s, [A, C], {"A": a})
    np.testing.assert_allclose(out["C"], (a + 1) * 2, rtol=1e-6)
    (buf,) = _allocs(func)
    assert buf.strides == (9, 1) and buf.size == 23


def test_pragma_and_bind_annotate_loops(run, rand):
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B)
    bo, bi = s[B].split(B.op.axis[0], 4)
    s[B].bind(bo, te.thread_axis("blockIdx.x"))
    s[B].bind(bi, te.thread_axis("threadIdx.x"))
    s[B].pragma(bo, "dma_copy")
    a = rand(8)
    out, func = run(s, [A, B], {"A": a})
    np.testing.assert_allclose(out["B"], a + 1)
    text = repr(func)
    assert "pragma_dma_copy" in text and "thread=blockIdx.x" in text and "thread=threadIdx.x" in text


def test_virtual_threads_interleave_copies(run, rand):
    A = te.placeholder((4, 6), name="A")
    B = te.compute((4, 6), lambda i, j: A[i, j] * 2.0, name="B")
    s = te.create_schedule(B)
    vo, vi = s[B].split(B.op.axis[0], nparts=2)
    s[B].bind(vo, te.thread_axis("vthread"))
    a = rand(4, 6)
    out, func = run(s, [A, B], {"A": a})
    np.testing.assert_allclose(out["B"], a * 2)
    text = repr(func)
    assert text.count("'virtual_thread', 0") == 1 and text.count("'virtual_thread', 1") == 1
    assert "vthread" not in text.replace("virtual_thread", "")


def test_virtual_threads_get_private_buffers(run, rand):
    A = te.placeholder((4, 3), name="A")
    B = te.compute((4, 3), lambda i, j: A[i, j] + 1.0, name="B")
    C = te.compute((4, 3), lambda i, j: B[i, j] * 2.0, name="C")
    s = te.create_schedule(C)
    vo, vi = s[C].split(C.op.axis[0], nparts=2)
    s[C].bind(vo, te.thread_axis("vthread"))
    s[B].compute_at(s[C], vo)
    a = rand(4, 3)
    out, func = run(s, [A, C], {"A": a})
    np.testing.assert_allclose(out["C"], (a + 1) * 2, rtol=1e-6)
    assert sorted(b.name for b in _allocs(func)) == ["B.vt0", "B.vt1"]


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "int64"])
def test_integer_dtypes_and_casts(run, rand, dtype):
    A = te.placeholder((3, 4), dtype, "A")
    r = te.reduce_axis(4, "r")
    B = te.compute((3,), lambda i: te.sum(A[i, r].astype("int32"), axis=r), name="B")
    s = te.create_schedule(B)
    a = rand(3, 4, dtype=dtype)
    out, _ = run(s, [A, B], {"A": a})
    np.testing.assert_array_equal(out["B"], a.astype("int32").sum(axis=1))


def test_float16_storage(run, rand):
    A = te.placeholder((5,), "float16", "A")
    B = te.compute((5,), lambda i: (A[i].astype("float32") * 2.0).astype("float16"), name="B")
    s = te.create_schedule(B)
    a = rand(5, dtype="float16")
    out, _ = run(s, [A, B], {"A": a})
    np.testing.assert_array_equal(out["B"], (a.astype("float32") * 2).astype("float16"))


@pytest.mark.parametrize("reducer,ref", [(te.max, np.max), (te.min, np.min)])
def test_max_min_reductions(run, rand, reducer, ref):
    A = te.placeholder((4, 5), name="A")
    r = te.reduce_axis(5, "r")
    B = te.compute((4,), lambda i: reducer(A[i, r], axis=r), name="B")
    s = te.create_schedule(B)
    a = rand(4, 5)
    out, _ = run(s, [A, B], {"A": a})
    np.testing.assert_array_equal(out["B"], ref(a, axis=1))


def test_if_then_else_padding_reads_only_inside(run, rand):
    A = te.placeholder((5,), name="A")
    B = te.compute((7,), lambda i: te.if_then_else((i >= 1) & (i < 6), A[i - 1], 0.0), name="B")
    s = te.create_schedule(B)
    a = rand(5)
    out, _ = run(s, [A, B], {"A": a})
    np.testing.assert_array_equal(out["B"], np.pad(a, 1))


def test_bool_output_and_where_reduction(run, rand):
    A = te.placeholder((3, 4), name="A")
    r = te.reduce_axis(4, "r")
    S = te.compute((3,), lambda i: te.sum(A[i, r], axis=r, where=A[i, r] > 0.0), name="S")
    P = te.compute((3,), lambda i: S[i] > 1.0, name="P")
    s = te.create_schedule(P)
    a = rand(3, 4)
    out, _ = run(s, [A, P], {"A": a})
    np.testing.assert_array_equal(out["P"], np.where(a > 0, a, 0).sum(axis=1) > 1)


def test_intrinsic_calls(run, rand):
    A = te.placeholder((6,), name="A")
    B = te.compute((6,), lambda i: te.exp(A[i]) + te.sqrt(te.fabs(A[i])) + te.sigmoid(A[i]), name="B")
    s = te.create_schedule(B)
    a = rand(6)
    out, _ = run(s, [A, B], {"A": a})
    np.testing.assert_allclose(out["B"], np.exp(a) + np.sqrt(np.abs(a)) + 1 / (1 + np.exp(-a)),
                               rtol=1e-5)


def test_rank_three_compute(run, rand):
    A = te.placeholder((2, 3, 4), name="A")
    B = te.compute((4, 2, 3), lambda c, a, b: A[a, b, c] - 1.0, name="B")
    s = te.create_schedule(B)
    s[B].reorder(B.op.axis[2], B.op.axis[0])
    a = rand(2, 3, 4)
    out, _ = run(s, [A, B], {"A": a})
    np.testing.assert_array_equal(out["B"], a.transpose(2, 0, 1) - 1)


def _allocs(func):
    from compiler.tir import ir
    from compiler.tir.visit import walk_stmt
    return [s.buffer for s in walk_stmt(func.body) if isinstance(s, ir.Allocate)]


def test_conv1d_with_padding_and_offset_reduce_axis(run, rand):
    X = te.placeholder((6,), name="X")
    W = te.placeholder((3,), name="W")
    r = te.reduce_axis(3, "r")
    Y = te.compute((6,), lambda i: te.sum(
        te.if_then_else((i + r - 1 >= 0) & (i + r - 1 < 6), X[i + r - 1], 0.0) * W[r], axis=r), name="Y")
    q = te.reduce_axis((1, 3), "q")
    Z = te.compute((6,), lambda i: te.sum(W[q] * Y[i], axis=q), name="Z")
    s = te.create_schedule(Z)
    yo, yi = s[Y].split(Y.op.axis[0], 4)
    s[Y].vectorize(yi)
    x, w = rand(6), rand(3)
    out, _ = run(s, [X, W, Z], {"X": x, "W": w})
    y = np.convolve(x, w[::-1], mode="same")
    np.testing.assert_allclose(out["Z"], y * (w[1] + w[2]), rtol=1e-5, atol=1e-6)


def test_compute_at_fused_axis_and_cache_read_for_two_readers(run, rand):
    A = te.placeholder((3, 5), name="A")
    B = te.compute((3, 5), lambda i, j: A[i, j] * 2.0, name="B")
    C = te.compute((3, 5), lambda i, j: B[i, j] + 1.0, name="C")
    D = te.compute((3, 5), lambda i, j: A[i, j] - C[i, j], name="D")
    s = te.create_schedule(D)
    AL = s.cache_read(A, "local", [B, D])
    f = s[C].fuse(*C.op.axis)
    fo, fi = s[C].split(f, 4)
    s[B].compute_at(s[C], fo)
    a = rand(3, 5)
    out, func = run(s, [A, D], {"A": a})
    np.testing.assert_allclose(out["D"], a - (a * 2 + 1), rtol=1e-6)
    assert {b.name: b.shape for b in _allocs(func)} == {"A.local": (3, 5), "C": (3, 5), "B": (2, 5)}
    assert AL.name == "A.local"
