"""dense / matmul: packed-weight dense, batched matmul of activations, fused epilogues."""
from __future__ import annotations

import numpy as np
import pytest

import compiler.build
from compiler import te
from compiler.graph import Op, make
from compiler.topi import dense as tdense


@pytest.mark.parametrize("m,k,n", [(1, 64, 48), (5, 33, 20), (8, 16, 7)])
def test_dense_packed_matches_numpy(m, k, n):
    nb = tdense.dense_block(n)
    x = te.placeholder((m, k), "float32", "x")
    w = te.placeholder((n // nb, k, nb), "float32", "w")
    acc = tdense.dense(x, w)
    s = te.create_schedule(acc)
    tdense.schedule_dense(s, acc, acc)
    f = compiler.build(s, [x, w, acc], name="dense", fp_contract=True)
    rng = np.random.default_rng(1)
    xv = rng.standard_normal((m, k)).astype("float32")
    wv = rng.standard_normal((n, k)).astype("float32")
    y = np.empty((m, n), "float32")
    f(xv, tdense.pack_dense_weight(wv, nb), y)
    np.testing.assert_allclose(y, xv @ wv.T, rtol=1e-4, atol=1e-4)


def test_batch_matmul_matches_numpy():
    a = te.placeholder((3, 6, 10), "float32", "a")
    b = te.placeholder((3, 10, 20), "float32", "b")
    acc = tdense.batch_matmul(a, b)
    s = te.create_schedule(acc)
    tdense.schedule_batch_matmul(s, acc, acc)
    f = compiler.build(s, [a, b, acc], name="bmm", fp_contract=True)
    rng = np.random.default_rng(2)
    av = rng.standard_normal(a.shape).astype("float32")
    bv = rng.standard_normal(b.shape).astype("float32")
    y = np.empty(acc.shape, "float32")
    f(av, bv, y)
    np.testing.assert_allclose(y, av @ bv, rtol=1e-4, atol=1e-4)


def test_dense_3d_input_bias_gelu(case):
    x = case.input("x", (1, 12, 32))
    w = case.rand_param("w", (40, 32), 0.3)
    b = case.rand_param("b", (40,))
    y = make(Op.GELU, make(Op.ADD, make(Op.DENSE, x, w), b))
    cm, _ = case.check(y)
    assert cm.stats["kernels"] == 1


def test_dense_then_reshape_transpose(case):
    x = case.input("x", (1, 8, 32))
    w = case.rand_param("w", (32, 32), 0.3)
    y = make(Op.RESHAPE, make(Op.DENSE, x, w), newshape=(1, 8, 4, 8))
    case.check(make(Op.TRANSPOSE, y, perm=(0, 2, 1, 3)))


def test_matmul_of_activations_with_scale(case):
    q = case.input("q", (1, 2, 8, 16))
    k = case.input("k", (1, 2, 16, 8))
    scale = case.param("scale", np.asarray(4.0, "float32"))
    case.check(make(Op.DIV, make(Op.MATMUL, q, k), scale))


def test_matmul_with_constant_weight(case):
    x = case.input("x", (2, 5, 24))
    w = case.rand_param("w", (24, 16))
    case.check(make(Op.MATMUL, x, w))


@pytest.mark.parametrize("sa,sb", [((16,), (16, 8)), ((3, 16), (16,)), ((2, 1, 4, 8), (3, 8, 5))])
def test_matmul_vector_and_broadcast_operands(case, sa, sb):
    a = case.input("a", sa)
    b = case.input("b", sb)
    case.check(make(Op.MATMUL, a, b))


@pytest.mark.parametrize("M,N,par", [(5, 32, "panels"), (5, 8, "panels"), (7, 32, "tiles"),
                                     (17, 32, "rows")])
def test_dense_peels_a_partial_row_tile(M, N, par):
    """A partial last row tile (M = 5, 7, 17 in 4-row tiles) is peeled off a plain row loop, not
    bound-checked in every tile (which scalarises the guarded rows): no ``if`` in the
    kernel, in any order, with panels in parallel (4 of them) or row tiles (1 panel)."""
    from compiler.tir import ir as T
    from compiler.tir.visit import walk_stmt
    func = _dense_func(M, N, par)
    assert not any(isinstance(st, T.IfThenElse) for st in walk_stmt(func.body))
    _check_against_numpy(func, M, N, seed=M + N)


def _dense_func(M: int, N: int, par: str, K: int = 6, nb: int = 8):
    """The lowered ``dense`` of an (M, K) by packed (N, K) product in 4-row tiles, ``par``."""
    from compiler.tir import lower
    x = te.placeholder((M, K), "float32", "x")
    w = te.placeholder((N // nb, K, nb), "float32", "w")
    acc = tdense.dense(x, w)
    s = te.create_schedule(acc)
    tdense.schedule_dense(s, acc, acc, 4, par, nb)
    return lower(s, [x, w, acc], "dense")


def _check_against_numpy(func, M: int, N: int, seed: int, K: int = 6, nb: int = 8):
    rng = np.random.default_rng(seed)
    xv = rng.standard_normal((M, K)).astype("float32")
    wv = rng.standard_normal((N, K)).astype("float32")
    y = np.empty((M, N), "float32")
    compiler.build(func)(xv, tdense.pack_dense_weight(wv, nb), y)
    np.testing.assert_allclose(y, xv @ wv.T, rtol=1e-4, atol=1e-4)


def _parallel_extents(func) -> list:
    from compiler.tir import ir as T
    from compiler.tir.visit import walk_stmt
    return [st.extent for st in walk_stmt(func.body)
            if isinstance(st, T.For) and st.kind == T.ForKind.PARALLEL]


@pytest.mark.parametrize("M,par,extent", [(1, "rows", 16), (4, "rows", 16), (16, "rows", 4),
                                          (1, "tiles", 16)])
def test_rows_order_with_few_row_tiles_runs_the_columns_in_parallel(M, par, extent):
    """A matrix-vector product (1 row tile) in ``"rows"`` order would run on one thread:
    under MIN_PARALLEL_PANELS row tiles its 16 column blocks run in parallel as well."""
    from compiler.tir import ir as T
    func = _dense_func(M, 128, par)
    assert _parallel_extents(func) == [T.const(extent)]
    _check_against_numpy(func, M, 128, seed=M)


def test_packed_batch_matmul_peels_a_partial_row_tile():
    """Packed B, 2 batches x 2 panels in parallel, 67 rows in 4-row tiles: no ``if``."""
    from compiler.tir import ir as T
    from compiler.tir import lower
    from compiler.tir.visit import walk_stmt
    a = te.placeholder((2, 67, 5), "float32", "a")
    b = te.placeholder((2, 5, 32), "float32", "b")
    bp = tdense.pack_batch_b(lambda bb, k, j: b[bb, k, j], (2, 5, 32), 16)
    acc = tdense.batch_matmul_packed(lambda bb, i, k: a[bb, i, k], bp, 67)
    s = te.create_schedule(acc)
    tdense.schedule_batch_matmul(s, acc, acc, 4, 16)
    func = lower(s, [a, b, acc], "bmm")
    assert not any(isinstance(st, T.IfThenElse) for st in walk_stmt(func.body))
    rng = np.random.default_rng(5)
    av = rng.standard_normal(a.shape).astype("float32")
    bv = rng.standard_normal(b.shape).astype("float32")
    y = np.empty(acc.shape, "float32")
    compiler.build(func)(av, bv, y)
    np.testing.assert_allclose(y, av @ bv, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("M,mr,rows", [(1024, 2, 2), (1021, 2, 2), (1021, 4, 4), (100, 8, 5),
                                       (12, 8, 6), (1, 4, 1), (3, 1, 1)])
def test_row_tile_is_never_one_row_below_the_cap(M, mr, rows):
    """A divisor of M at least half the cap, but never 1 row for a cap above 1 (M = 1021 in
    1-row tiles ran at about half speed): then the cap and a partial, peeled tile."""
    assert tdense._row_tile(M, mr) == rows
