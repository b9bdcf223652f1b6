"""Property: random splits, reorders, annotations and compute_at keep a matmul-plus-bias exact."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler import te, tir
from compiler.tir import interp


@st.composite
def schedules(draw):
    m, n, k = draw(st.integers(1, 5)), draw(st.integers(1, 6)), draw(st.integers(1, 4))
    factors = [draw(st.integers(1, 7)) for _ in range(3)]
    perm = draw(st.permutations(range(6)))
    attach = draw(st.integers(-1, 5))
    flags = draw(st.tuples(st.booleans(), st.booleans(), st.booleans()))
    return m, n, k, factors, perm, attach, flags


@settings(max_examples=40, deadline=None)
@given(schedules())
def test_random_schedule_matches_numpy(case):
    m, n, k, factors, perm, attach, (vec, par, unr) = case
    A = te.placeholder((m, k), name="A")
    B = te.placeholder((k, n), name="B")
    Bias = te.compute((m, n), lambda i, j: (i * 10 + j).astype("float32"), name="Bias")
    r = te.reduce_axis(k, "r")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r) , name="C")
    D = te.compute((m, n), lambda i, j: C[i, j] + Bias[i, j], name="D")
    s = te.create_schedule(D)
    i, j = C.op.axis
    leaves = [*s[C].split(i, factors[0]), *s[C].split(j, factors[1]), *s[C].split(r, factors[2])]
    order = [leaves[p] for p in perm]
    s[C].reorder(*order)
    if vec and not s[C].is_reduce_axis(order[-1]):
        s[C].vectorize(order[-1])
    if par and not s[C].is_reduce_axis(order[0]):
        s[C].parallel(order[0])
    if unr:
        s[C].unroll(order[2])
    if attach >= 0:
        s[Bias].compute_at(s[D], s[D].split(D.op.axis[attach % 2], 2)[attach // 2 % 2])
    func = tir.lower(s, [A, B, D], "f", check=True)
    assert "# vectorized" not in repr(func) and "# unrolled" not in repr(func)
    a = np.arange(m * k, dtype="float32").reshape(m, k) - 3
    b = np.arange(k * n, dtype="float32").reshape(k, n) % 5
    d = np.zeros((m, n), "float32")
    interp.run(func, a, b, d)
    bias = np.arange(m)[:, None] * 10 + np.arange(n)[None, :]
    np.testing.assert_array_equal(d, a @ b + bias)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 6), st.integers(1, 6), st.integers(1, 4), st.integers(1, 5), st.integers(1, 5),
       st.booleans(), st.integers(0, 3))
def test_random_compute_at_of_reduction_with_cache_read(m, n, k, fi, fj, swap, at):
    A = te.placeholder((m + 1, k), name="A")
    r = te.reduce_axis(k, "r")
    C = te.compute((m + 1, n), lambda i, j: te.max(A[i, r] * (j + 1).astype("float32"), axis=r), name="C")
    D = te.compute((m, n), lambda i, j: C[i, j] + C[i + 1, j], name="D")
    s = te.create_schedule(D)
    AL = s.cache_read(A, "local", [C])
    io, ii = s[D].split(D.op.axis[0], fi)
    jo, ji = s[D].split(D.op.axis[1], fj)
    order = [jo, io, ji, ii] if swap else [io, jo, ii, ji]
    s[D].reorder(*order)
    s[C].compute_at(s[D], order[at])
    s[AL].compute_at(s[C], C.op.axis[0])
    func = tir.lower(s, [A, D], "f", check=True)
    a = (np.arange((m + 1) * k, dtype="float32").reshape(m + 1, k) * 7) % 11 - 5
    d = np.zeros((m, n), "float32")
    interp.run(func, a, d)
    c = (a[:, :, None] * (np.arange(n) + 1)[None, None, :]).max(axis=1)
    np.testing.assert_array_equal(d, c[:-1] + c[1:])
