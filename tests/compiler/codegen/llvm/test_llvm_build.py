"""compiler.build end to end: te schedules through compiler.tir.lower to machine code."""
import numpy as np
import pytest

import compiler.build
from compiler import te
from compiler.topi import dense as tdense
from compiler.build import build
from compiler.tir import interp, lower
from compiler.tir import ir as T
from compiler.tir.ops import ForKind

RNG = np.random.default_rng(2)


def vadd(n=1000, dtype="float32"):
    A = te.placeholder((n,), dtype, "A")
    B = te.placeholder((n,), dtype, "B")
    C = te.compute((n,), lambda i: A[i] + B[i], name="C")
    return A, B, C


def test_scheduled_elementwise_parallel_vectorized():
    n = 1 << 16     # over codegen's MIN_PARALLEL_WORK: a smaller nest runs serially
    A, B, C = vadd(n)
    s = te.create_schedule(C)
    xo, xi = s[C].split(C.op.axis[0], factor=16)
    s[C].vectorize(xi)
    s[C].parallel(xo)
    f = compiler.build(s, [A, B, C], name="vadd")    # the module is callable
    a, b = RNG.random(n, dtype="float32"), RNG.random(n, dtype="float32")
    c = np.zeros(n, "float32")
    f(a, b, c)
    np.testing.assert_array_equal(c, a + b)
    assert "GOMP_parallel" in f.llvm_ir and "x float>" in f.llvm_ir


def _packed_gemm(M, N, K, nb, mr, par):
    """``x[M, K] @ w[N, K].T`` through ``topi.dense`` (the weight packed ``[N/nb, K, nb]``)
    with an ``mr x nb`` register tile in ``par`` order; returns (schedule, args, x, w)."""
    x = te.placeholder((M, K), "float32", "x")
    w = te.placeholder((N // nb, K, nb), "float32", "w")
    acc = tdense.dense(x, w)
    s = te.create_schedule(acc)
    tdense.schedule_dense(s, acc, acc, mr, par, nb)
    xv = RNG.standard_normal((M, K), dtype=np.float32)
    wv = RNG.standard_normal((N, K), dtype=np.float32)
    return s, [x, w, acc], xv, wv


@pytest.mark.parametrize("M,N,K,nb,mr,par", [(48, 64, 37, 32, 6, "panels"),
                                             (50, 64, 16, 64, 4, "tiles"),
                                             (12, 32, 9, 32, 12, "rows")])
def test_topi_gemm_schedule_matches_numpy(M, N, K, nb, mr, par):
    s, args, xv, wv = _packed_gemm(M, N, K, nb, mr, par)
    f = build(s, args, fp_contract=True)
    c = np.zeros((M, N), "float32")
    f(xv, tdense.pack_dense_weight(wv, nb), c)
    np.testing.assert_allclose(c, xv @ wv.T, rtol=1e-4, atol=1e-4)


def test_topi_gemm_matches_interpreter():
    M, N, K = 12, 32, 8
    s, args, xv, wv = _packed_gemm(M, N, K, 16, 6, "panels")
    func = lower(s, args, "mm")
    wp = tdense.pack_dense_weight(wv, 16)
    got, ref = np.zeros((M, N), "float32"), np.zeros((M, N), "float32")
    build(func)(xv, wp, got)
    interp.run(func, xv, wp, ref)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


def test_int8_matmul_with_int32_accumulation():
    M, N, K = 16, 24, 40
    A = te.placeholder((M, K), "int8", "A")
    B = te.placeholder((K, N), "uint8", "B")
    k = te.reduce_axis((0, K), "k")
    C = te.compute((M, N), lambda i, j: te.sum(te.cast(A[i, k], "int32") * te.cast(B[k, j], "int32"),
                                               axis=k), name="C")
    s = te.create_schedule(C)
    s[C].parallel(C.op.axis[0])
    f = build(s, [A, B, C])
    a = RNG.integers(-128, 127, (M, K)).astype("int8")
    b = RNG.integers(0, 255, (K, N)).astype("uint8")
    c = np.zeros((M, N), "int32")
    f(a, b, c)
    np.testing.assert_array_equal(c, a.astype("int32") @ b.astype("int32"))


def test_float16_storage_with_float32_compute_and_bool_output():
    n = 300
    A = te.placeholder((n,), "float16", "A")
    Y = te.compute((n,), lambda i: te.cast(te.exp(te.cast(A[i], "float32")), "float16"), name="Y")
    P = te.compute((n,), lambda i: Y[i] > te.cast(te.cast(1.0, "float32"), "float16"), name="P")
    s = te.create_schedule(P)
    xo, xi = s[Y].split(Y.op.axis[0], factor=8)
    s[Y].vectorize(xi)
    f = build(s, [A, Y, P])
    a = RNG.standard_normal(n).astype("float16")
    y, p = np.zeros(n, "float16"), np.zeros(n, "bool")
    f(a, y, p)
    want = np.exp(a.astype("float32")).astype("float16")
    np.testing.assert_allclose(y.astype("float32"), want.astype("float32"), rtol=1e-3)
    np.testing.assert_array_equal(p, y > 1)


def test_build_accepts_primfuncs_and_lists():
    A, B, C = vadd(16, "int64")
    func = lower(te.create_schedule(C), [A, B, C], "add64")
    other = lower(te.create_schedule(C), [A, B, C], "add64_b")
    m = build([func, other])
    a, b = np.arange(16), np.arange(16) * 10
    c = np.zeros(16, "int64")
    m["add64_b"](a, b, c)
    np.testing.assert_array_equal(c, a + b)
    with pytest.raises(TypeError, match="module has kernels add64, add64_b; pick one"):
        m(a, b, c)
    build(func)(a, b, c)


def test_argument_errors_name_the_argument():
    A, B, C = vadd(8)
    f = build(te.create_schedule(C), [A, B, C], name="vadd")
    a, b, c = (np.zeros(8, "float32") for _ in range(3))
    with pytest.raises(ValueError, match=r"vadd\(\): argument 'B' has shape \(7,\), expected \(8,\)"):
        f(a, np.zeros(7, "float32"), c)
    with pytest.raises(ValueError, match=r"argument 'C' has dtype float64, expected float32 "
                                         r"\(convert with .astype\('float32'\)\)"):
        f(a, b, np.zeros(8))
    with pytest.raises(TypeError, match=r"vadd\(\) takes 3 arguments \(A, B, C\), got 2"):
        f(a, b)
    with pytest.raises(TypeError, match="argument 'A' must be a numpy.ndarray, not list"):
        f([0.0] * 8, b, c)
    with pytest.raises(ValueError, match="argument 'A' must have strides"):
        f(np.zeros(16, "float32")[::2], b, c)
    with pytest.raises(ValueError, match="arguments 'A' and 'C' overlap in memory"):
        f(a, b, a)


def test_build_input_errors():
    A, B, C = vadd(8)
    s = te.create_schedule(C)
    with pytest.raises(TypeError, match="args .* is required with a schedule"):
        build(s)
    with pytest.raises(TypeError, match="takes a te.Schedule, a PrimFunc or a list of PrimFuncs, "
                                        "not int"):
        build(3)
    with pytest.raises(ValueError, match="target kind must be 'llvm'"):
        build(s, [A, B, C], target="cuda")
    buf = T.Buffer("x", "float32", (2,))
    dup = T.PrimFunc("same", (buf,), T.Store(buf, T.const(0.0), (T.const(0),)))
    with pytest.raises(ValueError, match="two PrimFuncs are named 'same'"):
        build([dup, dup])
    bad = T.PrimFunc("c64", (T.Buffer("z", "handle", (2,)),), T.SeqStmt(()))
    with pytest.raises(ValueError, match="dtype must be bool, int8..int64"):
        build(bad)


def test_parallel_kind_survives_lowering():
    A, B, C = vadd(64)
    s = te.create_schedule(C)
    s[C].parallel(C.op.axis[0])
    func = lower(s, [A, B, C], "p")
    assert isinstance(func.body, T.For) and func.body.kind is ForKind.PARALLEL


def test_avx2_gemm_tile_on_an_avx2_target():
    from compiler.codegen import host_target
    if "+avx2" not in host_target().features:
        pytest.skip("host cannot run AVX2 code")
    M, N, K = 5, 64, 19                  # 2-row tiles of 4 ymm vectors and a 1-row tail
    s, args, xv, wv = _packed_gemm(M, N, K, 32, 2, "panels")
    f = build(s, args, target="llvm -mcpu=haswell", fp_contract=True)
    assert "ymm" in f.assembly() and "zmm" not in f.assembly()
    c = np.zeros((M, N), "float32")
    f(xv, tdense.pack_dense_weight(wv, 32), c)
    np.testing.assert_allclose(c, xv @ wv.T, rtol=1e-4, atol=1e-4)
