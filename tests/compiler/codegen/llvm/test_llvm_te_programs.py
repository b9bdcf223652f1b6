"""Assorted te programs compiled with LLVM and run in the reference interpreter: the
two must agree (and match numpy where a formula is at hand)."""
import numpy as np
import pytest

from compiler import te
from compiler.build import build
from compiler.tir import interp, lower

RNG = np.random.default_rng(4)


def check(s, args, inputs, rtol=1e-5, atol=1e-6):
    """Run schedule ``s`` compiled and interpreted on ``inputs`` (arrays for the first
    len(inputs) args; outputs start at zero); return the compiled outputs."""
    func = lower(s, args, "prog")
    arrays = list(inputs) + [np.zeros(t.shape, t.dtype) for t in args[len(inputs):]]
    got = [a.copy() for a in arrays]
    ref = [a.copy() for a in arrays]
    build(func)(*got)
    interp.run(func, *ref)
    for g, r in zip(got[len(inputs):], ref[len(inputs):]):
        np.testing.assert_allclose(g, r, rtol=rtol, atol=atol)
    return got[len(inputs):]


def test_softmax_rows_with_max_and_sum_reductions():
    M, N = 7, 33
    X = te.placeholder((M, N), "float32", "X")
    k1 = te.reduce_axis((0, N), "k1")
    mx = te.compute((M,), lambda i: te.max(X[i, k1], axis=k1), name="mx")
    E = te.compute((M, N), lambda i, j: te.exp(X[i, j] - mx[i]), name="E")
    k2 = te.reduce_axis((0, N), "k2")
    S = te.compute((M,), lambda i: te.sum(E[i, k2], axis=k2), name="S")
    Y = te.compute((M, N), lambda i, j: E[i, j] / S[i], name="Y")
    s = te.create_schedule(Y)
    s[Y].parallel(Y.op.axis[0])
    x = RNG.standard_normal((M, N)).astype("float32")
    (y,) = check(s, [X, Y], [x])
    want = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(y, want / want.sum(1, keepdims=True), rtol=1e-5)


def test_padding_with_if_then_else_and_inlined_stage():
    n, p = 10, 2
    A = te.placeholder((n, n), "float32", "A")
    P = te.compute((n + 2 * p, n + 2 * p), lambda i, j: te.if_then_else(
        (i >= p) & (i < n + p) & (j >= p) & (j < n + p), A[i - p, j - p], 0.0), name="P")
    R = te.compute((n + 2 * p, n + 2 * p), lambda i, j: te.maximum(P[i, j], 0.0), name="R")
    s = te.create_schedule(R)
    s[P].compute_inline()
    a = RNG.standard_normal((n, n)).astype("float32")
    (r,) = check(s, [A, R], [a])
    np.testing.assert_array_equal(r, np.pad(np.maximum(a, 0), p))


def test_conv2d_nchw_tiled():
    C, H, W, F, KS = 3, 10, 12, 4, 3
    X = te.placeholder((C, H, W), "float32", "X")
    Wt = te.placeholder((F, C, KS, KS), "float32", "Wt")
    rc = te.reduce_axis((0, C), "rc")
    ry = te.reduce_axis((0, KS), "ry")
    rx = te.reduce_axis((0, KS), "rx")
    Y = te.compute((F, H - KS + 1, W - KS + 1), lambda f, y, x: te.sum(
        X[rc, y + ry, x + rx] * Wt[f, rc, ry, rx], axis=[rc, ry, rx]), name="Y")
    s = te.create_schedule(Y)
    f, y, x = Y.op.axis
    xo, xi = s[Y].split(x, factor=4)
    s[Y].parallel(f)
    s[Y].unroll(xi)
    xs = RNG.standard_normal((C, H, W)).astype("float32")
    ws = RNG.standard_normal((F, C, KS, KS)).astype("float32")
    (out,) = check(s, [X, Wt, Y], [xs, ws], rtol=1e-4, atol=1e-5)
    want = np.zeros_like(out)
    for fo in range(F):
        for yy in range(H - KS + 1):
            for xx in range(W - KS + 1):
                want[fo, yy, xx] = (xs[:, yy:yy + KS, xx:xx + KS] * ws[fo]).sum()
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "int64", "float16"])
def test_transpose_with_cache_read_and_vectorize(dtype):
    n = 24
    A = te.placeholder((n, n), dtype, "A")
    B = te.compute((n, n), lambda i, j: A[j, i], name="B")
    s = te.create_schedule(B)
    AL = s.cache_read(A, "local", [B])
    io, jo, ii, ji = s[B].tile(B.op.axis[0], B.op.axis[1], 8, 8)
    s[AL].compute_at(s[B], jo)
    s[B].vectorize(ji)
    a = (RNG.standard_normal((n, n)) * 50).astype(dtype)
    (b,) = check(s, [A, B], [a])
    np.testing.assert_array_equal(b, a.T)


def test_bool_mask_reduction_to_int32():
    n, m = 9, 40
    A = te.placeholder((n, m), "float32", "A")
    M = te.compute((n, m), lambda i, j: A[i, j] > 0.0, name="M")
    k = te.reduce_axis((0, m), "k")
    C = te.compute((n,), lambda i: te.sum(te.cast(M[i, k], "int32"), axis=k), name="C")
    s = te.create_schedule(C)
    a = RNG.standard_normal((n, m)).astype("float32")
    mask, count = check(s, [A, M, C], [a])
    np.testing.assert_array_equal(count, (a > 0).sum(1))
    np.testing.assert_array_equal(mask, a > 0)
