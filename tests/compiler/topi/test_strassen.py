"""Fast matrix products (Strassen, Winograd's variant) over the packed-GEMM leaf: the
coefficient tables, the kernel against numpy, the graph route with a pinned algorithm."""
from __future__ import annotations

import numpy as np
import pytest

import compiler.build
from compiler import te
from compiler.topi import strassen as st


@pytest.mark.parametrize("algorithm", sorted(st.ALGORITHMS))
@pytest.mark.parametrize("levels", [1, 2])
def test_coefficients_multiply_blocks_exactly(algorithm, levels):
    # the bilinear algorithm in float64 on a g x g grid of 3x3 integer blocks: exact
    U, V, W = st.coefficients(algorithm, levels)
    g = 2 ** levels
    rng = np.random.default_rng(levels)
    A, B = (rng.integers(-4, 5, (3 * g, 3 * g)).astype(np.float64) for _ in range(2))
    Ab, Bb = st._blocks(A, g), st._blocks(B, g)
    P = [sum(U[p, q] * Ab[q] for q in range(g * g)) @ sum(V[p, q] * Bb[q] for q in range(g * g))
         for p in range(7 ** levels)]
    C = np.block([[sum(W[r * g + c, p] * P[p] for p in range(7 ** levels)) for c in range(g)]
                  for r in range(g)])
    np.testing.assert_array_equal(C, A @ B)
    assert U.shape == V.shape == (7 ** levels, g * g) and W.shape == (g * g, 7 ** levels)


def test_strassen_has_the_fewest_nonzeros():
    # fused into operand reads, every coefficient is a load: 12 per table against 14
    assert [int((m != 0).sum()) for m in st.coefficients("strassen", 1)] == [12, 12, 12]
    assert [int((m != 0).sum()) for m in st.coefficients("winograd", 1)] == [14, 14, 14]


@pytest.mark.parametrize("algorithm,levels,n", [
    ("strassen", 1, 64), ("winograd", 1, 64),
    pytest.param("strassen", 2, 64, marks=pytest.mark.slow)])   # 49 unrolled operands: ~10 s
def test_kernel_matches_numpy(algorithm, levels, n):
    # 64^3 with 32^3 leaves (one level) or 16^3 (two), float32 throughout
    nb = 8
    x = te.placeholder((n, n), "float32", "x")
    bp = te.placeholder(st.strassen_weight_shape((n, n), levels, nb), "float32", "bp")
    acc = st.strassen_matmul(lambda i, k: x[i, k], (n, n), bp, algorithm, levels)
    s = te.create_schedule(acc)
    st.schedule_strassen(s, acc, acc, 2, nb)
    f = compiler.build(s, [x, bp, acc], name="strassen", fp_contract=True)
    rng = np.random.default_rng(3)
    A, B = (rng.standard_normal((n, n)).astype(np.float32) for _ in range(2))
    Bp = st.pack_strassen_weight(B, algorithm, levels, nb)
    assert Bp.dtype == np.float32 and Bp.shape == bp.shape
    y = np.empty((n, n), np.float32)
    f(A, Bp, y)
    want = A @ B
    assert np.abs(y - want).max() / np.abs(want).max() <= 1e-5


def test_errors_name_the_value_and_the_rule():
    with pytest.raises(ValueError, match="must be one of .*not 'coppersmith'"):
        st.coefficients("coppersmith", 1)
    with pytest.raises(ValueError, match="levels must be >= 1, not 0"):
        st.coefficients("strassen", 0)
    with pytest.raises(ValueError, match=r"B\[64, 72\] must have K a multiple of 2 and N of 16"):
        st.pack_strassen_weight(np.zeros((64, 72), np.float32), "strassen", 1, 8)
    x = te.placeholder((63, 64), "float32", "x")
    bp = te.placeholder((7, 4, 32, 8), "float32", "bp")
    with pytest.raises(ValueError, match=r"A\[63, 64\].*M, K multiples of 2"):
        st.strassen_matmul(lambda i, k: x[i, k], (63, 64), bp, "strassen", 1)


def _matmul_model(M, K, N, seed=0):
    """ONNX ``y = a[M, K] @ b`` with ``b[K, N]`` a constant (the ``matmul_dense`` route)."""
    from onnx import TensorProto, helper, numpy_helper
    B = np.random.default_rng(seed).standard_normal((K, N)).astype(np.float32)
    g = helper.make_graph([helper.make_node("MatMul", ["a", "b"], ["y"])], "mm",
                          [helper.make_tensor_value_info("a", TensorProto.FLOAT, [M, K])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(B, "b")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), B


@pytest.mark.parametrize("shape,offered", [((512, 512, 512), ("gemm", "strassen1", "winograd1")),
                                           ((1024, 1024, 1024), tuple(
                                               ["gemm", "strassen1", "strassen2", "winograd1",
                                                "winograd2"])),
                                           ((256, 512, 512), None), ((512, 512, 576), None)])
def test_fast_algorithms_offered_for_large_even_products(shape, offered):
    from compiler.autotune import extract_tasks
    (task,) = extract_tasks(_matmul_model(*shape)[0])
    knobs = {kn.name: kn for kn in task.space.knobs}
    assert (knobs["algorithm"].candidates if "algorithm" in knobs else None) == offered
    if offered:
        assert knobs["algorithm"].default == "gemm"


def test_pinned_strassen_through_build_model_matches_numpy(tmp_path, monkeypatch):
    from compiler.autotune.pin import pin_log
    from compiler.build_model import build_model
    from driver.runtime import load_module
    monkeypatch.setattr("compiler.autotune.apply.SHIPPED_DIR", tmp_path / "no_shipped_logs")
    model, B = _matmul_model(512, 512, 512)
    log = tmp_path / "pinned.jsonl"
    assert pin_log(model, log, algorithm="strassen1") == 1
    cm = build_model(model, tuning_log=str(log))
    assert cm.stats["tuning"]["covered"] == 1
    m = load_module(cm)
    a = np.random.default_rng(1).standard_normal((512, 512)).astype(np.float32)
    got = m(a)[0]
    want = a @ B
    assert np.abs(got - want).max() / np.abs(want).max() <= 1e-4


def test_run_time_packing_of_b_matches_compile_time():
    # the activation route packs B's sums in the kernel: the same operands as the constant's
    n, nb = 64, 8
    b = te.placeholder((n, n), "float32", "b")
    panels, bp = st.pack_strassen_b(lambda k, j: b[k, j], (n, n), "winograd", 1, nb)
    assert panels.shape == (1, n // nb, n, nb)
    s = te.create_schedule(bp)
    f = compiler.build(s, [b, bp], name="pack_b")
    B = np.random.default_rng(4).standard_normal((n, n)).astype(np.float32)
    got = np.empty(bp.shape, np.float32)
    f(B, got)
    np.testing.assert_array_equal(got, st.pack_strassen_weight(B, "winograd", 1, nb))


def test_run_time_sums_are_made_per_product_and_match_numpy():
    # B an activation: B's panels copied once (workspace with the products); per product
    # its left operand (32 x 32) and per column panel its right operand (32 x 8), in
    # buffers of the thread, 7 allocations of each: never the 7 x 32 x 32 operands at once
    from compiler import tir
    from compiler.tir.visit import walk_stmt
    n, nb = 64, 8
    x, b = (te.placeholder((n, n), "float32", name) for name in "xb")
    panels, bp = st.pack_strassen_b(lambda k, j: b[k, j], (n, n), "strassen", 1, nb)
    acc = st.strassen_matmul(lambda i, k: x[i, k], (n, n), bp, "strassen", 1)
    prod = acc.op.reads()[0]
    assert st.strassen_workspace(acc) == [panels, prod]
    s = te.create_schedule(acc)
    st.schedule_strassen(s, acc, acc, 2, nb)
    func = tir.lower(s, [x, b, acc], "strassen_act")
    sizes = {}
    for a in walk_stmt(func.body):
        if isinstance(a, tir.ir.Allocate):
            sizes.setdefault(a.buffer.name, []).append(a.buffer.size)
    assert sizes[bp.op.name] == [n // 2 * nb] * 7
    assert sizes[prod.op.reads()[0].op.name] == [n // 2 * n // 2] * 7
    f = compiler.build(s, [x, b, acc], name="strassen_act", fp_contract=True)
    rng = np.random.default_rng(7)
    A, B = (rng.standard_normal((n, n)).astype(np.float32) for _ in range(2))
    y = np.empty((n, n), np.float32)
    f(A, B, y)
    want = A @ B
    assert np.abs(y - want).max() / np.abs(want).max() <= 1e-5


def test_pinned_strassen_for_two_activations_matches_numpy(tmp_path, monkeypatch):
    from compiler.autotune.pin import pin_log
    from compiler.build_model import build_model
    from driver.runtime import load_module
    from onnx import TensorProto, helper
    monkeypatch.setattr("compiler.autotune.apply.SHIPPED_DIR", tmp_path / "no_shipped_logs")
    inputs = [helper.make_tensor_value_info(x, TensorProto.FLOAT, [512, 512]) for x in "ab"]
    model = helper.make_model(helper.make_graph(
        [helper.make_node("MatMul", ["a", "b"], ["y"])], "mm", inputs,
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]),
        opset_imports=[helper.make_opsetid("", 13)])
    log = tmp_path / "pinned.jsonl"
    assert pin_log(model, log, algorithm="strassen1") == 1
    m = load_module(build_model(model, tuning_log=str(log)))
    a, b = (np.random.default_rng(s).standard_normal((512, 512)).astype(np.float32)
            for s in (5, 6))
    got, want = m(a, b)[0], a @ b
    assert np.abs(got - want).max() / np.abs(want).max() <= 1e-4
