"""GEMM-sized dense / matmul (M >= 64 rows): the register tile of half the vector registers
that is the default on AVX-512 (16 accumulators) and AVX2 (8), its panel loop order, and
the fallbacks, against numpy."""
from __future__ import annotations

import numpy as np
import pytest

from compiler import build_model
from compiler.codegen.llvm.target import Target
from compiler.graph import Graph, Op, input_node, make, param_node
from compiler.graph_lower.impls.dense import GEMM_MIN_ROWS
from compiler.graph_lower.strategy import Workload, default_registry
from driver.runtime import load_module

AVX512 = Target("x86_64-unknown-linux-gnu", "skylake-avx512", "+avx2,+fma,+avx512f", False)
AVX2 = Target("x86_64-unknown-linux-gnu", "haswell", "+avx2,+fma", False)
SSE = Target("x86_64-unknown-linux-gnu", "x86-64-v2", "", False)


def _space(node, name, target):
    impl = next(i for i in default_registry().implementations(node.op) if i.name == name)
    return impl.space(Workload(node, target))


def _mm(M, K, N):
    return make(Op.MATMUL, input_node("a", (M, K)), input_node("b", (K, N)))


@pytest.mark.parametrize("M,N,target,default", [
    (128, 128, AVX512, {"dense_block": 64, "mr": 4, "par": "panels"}),   # 4 rows x 4 zmm
    (128, 96, AVX512, {"dense_block": 32, "mr": 8, "par": "panels"}),    # 8 rows x 2 zmm
    (128, 80, AVX512, {"dense_block": 32, "mr": 8, "par": "panels"}),    # 96 = 80 padded
    (128, 1000, AVX512, {"dense_block": 64, "mr": 4, "par": "panels"}),  # 1024 = 1000 padded
    (128, 16, AVX512, {"dense_block": 16, "mr": 4, "par": "tiles"}),     # under 2 vectors
    (GEMM_MIN_ROWS - 1, 128, AVX512, {"dense_block": 16, "mr": 4, "par": "tiles"}),
    (128, 128, AVX2, {"dense_block": 32, "mr": 2, "par": "panels"}),     # 2 rows x 4 ymm
    (128, 48, AVX2, {"dense_block": 16, "mr": 4, "par": "panels"}),      # 4 rows x 2 ymm
    (128, 8, AVX2, {"dense_block": 8, "mr": 4, "par": "tiles"}),         # under 2 vectors
    (128, 128, SSE, {"dense_block": 16, "mr": 4, "par": "tiles"}),       # 4-lane: old tile
])
def test_gemm_default_point(M, N, target, default):
    assert _space(_mm(M, 8, N), "matmul_dense", target).default.as_dict() == default


def _run_matmul(M, K, N):
    rng = np.random.default_rng(M * 7 + N)
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    x = input_node("a", (M, K))
    g = Graph((x,), (make(Op.MATMUL, x, param_node("b", b)),), ("y",))
    m = load_module(build_model(g, params={"b": b}))
    m.set_input("a", a)
    m.run()
    return m.get_output(0), a @ b


@pytest.mark.parametrize("M,K,N", [
    (128, 64, 128),     # aligned: 4 x 64 tiles
    (200, 37, 192),     # K odd, M a multiple of the 4-row tile only
    (100, 50, 96),      # 8 x 32 tile capped to 5 rows (a divisor of 100)
    (67, 17, 64),       # M prime: 4-row tiles and a 3-row tail
    (1021, 8, 64),      # M prime, many tiles in parallel and the tail
    (72, 9, 80),        # N no multiple of 32: a padded 32-wide panel, a 16-wide tail
    (64, 8, 1000),      # 15 panels of 64 and a 40-wide tail
    (64, 8, 24),        # N under 2 vectors: the one-vector block
])
def test_gemm_matches_numpy(M, K, N):
    got, want = _run_matmul(M, K, N)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


@pytest.mark.parametrize("M,N", [(96, 64), (97, 100)])
def test_dense_with_bias_in_panel_order_matches_numpy(M, N):
    K = 40
    rng = np.random.default_rng(3)
    x = rng.standard_normal((M, K)).astype(np.float32)
    w = rng.standard_normal((N, K)).astype(np.float32)
    bias = rng.standard_normal(N).astype(np.float32)
    xi = input_node("x", (M, K))
    y = make(Op.RELU, make(Op.ADD, make(Op.DENSE, xi, param_node("w", w)), param_node("b", bias)))
    m = load_module(build_model(Graph((xi,), (y,), ("y",)), params={"w": w, "b": bias}))
    m.set_input("x", x)
    m.run()
    want = np.maximum(x @ w.T + bias, 0)
    np.testing.assert_allclose(m.get_output(0), want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def test_activation_product_default_packs_b():
    node = make(Op.MATMUL, input_node("a", (2, 128, 8)), input_node("b", (2, 8, 96)))
    assert _space(node, "batch_matmul", AVX512).default.as_dict() == {
        "mr": 8, "nb": 32, "pack_b": True}
    assert _space(node, "batch_matmul", AVX2).default.as_dict() == {
        "mr": 2, "nb": 32, "pack_b": True}
    assert _space(node, "batch_matmul", SSE).default.as_dict() == {
        "mr": 4, "nb": 16, "pack_b": False}


@pytest.mark.parametrize("sa,sb", [
    ((2, 128, 33), (2, 33, 64)),      # packed 4 x 64 tiles, two batches
    ((3, 100, 20), (20, 96)),         # broadcast right operand, 8 x 32 tile capped to 5 rows
    ((70, 16), (16, 40)),             # N = 40: one padded 64-wide panel
    ((70, 16), (16, 24)),             # N under 2 vectors: the unpacked kernel
    ((2, 67, 5), (2, 5, 64)),         # M prime: a partial row tile per batch
])
def test_activation_product_matches_numpy(sa, sb):
    rng = np.random.default_rng(len(sa) * 10 + sb[-1])
    a = rng.standard_normal(sa).astype(np.float32)
    b = rng.standard_normal(sb).astype(np.float32)
    xa, xb = input_node("a", sa), input_node("b", sb)
    m = load_module(build_model(Graph((xa, xb), (make(Op.MATMUL, xa, xb),), ("y",))))
    m.set_input("a", a)
    m.set_input("b", b)
    m.run()
    want = a @ b
    np.testing.assert_allclose(m.get_output(0), want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def test_dense_with_a_computed_weight_pads_it_in_the_kernel():
    M, K, N = 80, 12, 100                # 100 columns: panels of 64 and a 36-wide tail
    rng = np.random.default_rng(4)
    x = rng.standard_normal((M, K)).astype(np.float32)
    w = rng.standard_normal((N, K)).astype(np.float32)
    xi, wi = input_node("x", (M, K)), input_node("w", (N, K))
    m = load_module(build_model(Graph((xi, wi), (make(Op.DENSE, xi, wi),), ("y",))))
    m.set_input("x", x)
    m.set_input("w", w)
    m.run()
    want = x @ w.T
    np.testing.assert_allclose(m.get_output(0), want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
