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
