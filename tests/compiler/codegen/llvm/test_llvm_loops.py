"""Loops, memory and control flow through LLVM code generation (hand-built PrimFuncs),
checked against numpy and the reference interpreter compiler/tir/interp.py."""
import numpy as np
import pytest

from codegen_helpers import compile_funcs
from compiler.codegen import host_target
from compiler.tir import interp
from compiler.tir import ir as T
from compiler.tir.ops import ForKind

RNG = np.random.default_rng(1)
c = T.const


@pytest.fixture(autouse=True)
def every_parallel_loop_forks(monkeypatch):
    """These nests are small: let each parallel loop fork-join anyway, to test the outlining
    (``test_small_nests_run_serially`` tests the threshold itself)."""
    import compiler.codegen.llvm.parallel as par
    monkeypatch.setattr(par, "MIN_PARALLEL_WORK", 1)


def loop(v, n, body, kind=ForKind.SERIAL, lo=0):
    return T.For(v, c(lo), c(n), kind, body)


def run_both(func, *arrays):
    """Run ``func`` compiled and in the interpreter on copies; return both results."""
    compiled = [a.copy() for a in arrays]
    compile_funcs(func)(*compiled)
    reference = [a.copy() for a in arrays]
    interp.run(func, *reference)
    return compiled, reference


def test_parallel_2d_matches_interpreter_and_calls_libgomp():
    M, N = 37, 29
    A = T.Buffer("A", "float32", (M, N))
    B = T.Buffer("B", "float32", (M, N))
    i, j = T.var("i"), T.var("j")
    body = loop(i, M, loop(j, N, T.Store(B, T.load(A, [i * N + j]) * c(2.0) + T.cast(i, "float32"),
                                         (i * N + j,))), ForKind.PARALLEL)
    f = T.PrimFunc("par2d", (A, B), body)
    a = RNG.standard_normal((M, N)).astype("float32")
    (_, got), (_, ref) = run_both(f, a, np.zeros((M, N), "float32"))
    np.testing.assert_array_equal(got, ref)
    np.testing.assert_allclose(got, a * 2 + np.arange(M)[:, None], rtol=1e-6)
    assert "GOMP_parallel" in compile_funcs(f).llvm_ir


def test_small_nests_run_serially(monkeypatch):
    """A parallel nest storing under ``MIN_PARALLEL_WORK`` elements runs without a fork-join
    (vector stores count their lanes); one at the threshold, or of unknown size, forks."""
    import compiler.codegen.llvm.parallel as par
    monkeypatch.setattr(par, "MIN_PARALLEL_WORK", 64)
    i, j, n = T.var("i"), T.var("j"), T.var("n", "int32")

    def func(rows, cols, lanes=1, extent=None):
        A = T.Buffer("A", "float32", (rows * cols * lanes,))
        value = c(1.0, "float32") if lanes == 1 else T.broadcast(c(1.0, "float32"), lanes)
        index = (i * cols + j) * lanes
        store = T.Store(A, value, (index if lanes == 1 else T.ramp(index, 1, lanes),))
        f = T.PrimFunc("fill", (A,) + ((n,) if extent is not None else ()),
                       T.For(i, c(0), extent if extent is not None else c(rows),
                             ForKind.PARALLEL, loop(j, cols, store)))
        return f, A

    for (rows, cols, lanes), forks in [((7, 9, 1), False), ((8, 8, 1), True),
                                       ((4, 4, 2), False), ((4, 4, 4), True)]:
        f, _ = func(rows, cols, lanes)
        m = compile_funcs(f)
        a = np.zeros(rows * cols * lanes, "float32")
        m(a)
        np.testing.assert_array_equal(a, 1)
        assert ("GOMP_parallel" in m.llvm_ir) == forks, (rows, cols, lanes)
    f, _ = func(2, 3, extent=n)
    assert "GOMP_parallel" in compile_funcs(f).llvm_ir


@pytest.mark.parametrize("schedule", ["static", "dynamic"])
def test_parallel_schedules_cover_every_iteration_once(schedule, monkeypatch):
    import compiler.codegen.llvm.codegen as backend
    monkeypatch.setattr(backend, "PARALLEL_SCHEDULE", schedule)
    for n in (1, 2, 3, 17, 1000):
        A = T.Buffer("A", "int32", (n,))
        i = T.var("i")
        f = T.PrimFunc("count", (A,), loop(i, n, T.Store(A, T.load(A, [i]) + c(1), (i,)),
                                           ForKind.PARALLEL))
        a = np.zeros(n, "int32")
        m = compile_funcs(f)
        m(a)
        m(a)
        np.testing.assert_array_equal(a, 2)
        assert ("atomicrmw" in m.llvm_ir) == (schedule == "dynamic")


def test_parallel_inside_serial_and_nested_parallel():
    M, N = 5, 40
    A = T.Buffer("A", "int32", (M, N))
    i, j, k = T.var("i"), T.var("j"), T.var("k")
    inner = loop(k, 2, T.Store(A, T.load(A, [i * N + j]) + i * c(100) + j + k, (i * N + j,)),
                 ForKind.PARALLEL)          # nested in a parallel loop: runs serially
    body = loop(i, M, loop(j, N, inner, ForKind.PARALLEL))
    f = T.PrimFunc("nested", (A,), body)
    (got,), (ref,) = run_both(f, np.zeros((M, N), "int32"))
    np.testing.assert_array_equal(got, ref)


def test_parallel_loop_with_nonzero_min_and_let():
    n = 100
    A = T.Buffer("A", "int64", (n,))
    i, t = T.var("i"), T.var("t")
    body = T.LetStmt(t, c(3), loop(i, n - 10, T.Store(A, T.cast(i * t, "int64"), (i,)),
                                   ForKind.PARALLEL, lo=10))
    f = T.PrimFunc("offset", (A,), body)
    (got,), (ref,) = run_both(f, np.zeros(n, "int64"))
    np.testing.assert_array_equal(got, ref)
    assert got[9] == 0 and got[10] == 30 and got[99] == 297


def test_lowered_vector_code_uses_simd_registers():
    n = 256
    A, B = T.Buffer("A", "float32", (n,)), T.Buffer("B", "float32", (n,))
    io = T.var("io")
    idx = T.ramp(io * 16, 1, 16)
    body = loop(io, n // 16, T.Store(B, T.load(A, [idx], 16) * T.broadcast(c(3.0), 16)
                                     + T.load(A, [idx], 16), (idx,)))
    f = T.PrimFunc("vec", (A, B), body)
    a = RNG.standard_normal(n).astype("float32")
    (_, got), (_, ref) = run_both(f, a, np.zeros(n, "float32"))
    np.testing.assert_allclose(got, ref, rtol=1e-6)
    m = compile_funcs(f)
    assert "<16 x float>" in m.llvm_ir
    feats = host_target().features
    if "+avx512f" in feats:
        assert "zmm" in m.assembly()
    elif "+avx" in feats:
        assert "ymm" in m.assembly()


def test_strided_gather_and_scatter():
    n = 8
    A, B = T.Buffer("A", "float32", (n, n)), T.Buffer("B", "float32", (n, n))
    i = T.var("i")
    col = T.ramp(i, n, n)             # column i of A
    row = T.ramp(i * n, 1, n)
    body = loop(i, n, T.Store(B, T.load(A, [col], n), (row,)))   # transpose
    f = T.PrimFunc("transpose", (A, B), body)
    a = RNG.standard_normal((n, n)).astype("float32")
    b = np.zeros((n, n), "float32")
    compile_funcs(f)(a, b)
    np.testing.assert_array_equal(b, a.T)
    body = loop(i, n, T.Store(B, T.load(A, [row], n), (col,)))   # scatter form
    b2 = np.zeros((n, n), "float32")
    compile_funcs(T.PrimFunc("transpose2", (A, B), body))(a, b2)
    np.testing.assert_array_equal(b2, a.T)


def test_vectorized_for_from_hand_built_ir_and_unrolled_loop():
    n = 200          # 3 chunks of 64 lanes and one of 8
    A, B = T.Buffer("A", "int32", (n,)), T.Buffer("B", "int32", (n,))
    j, u = T.var("j"), T.var("u")
    body = T.seq(loop(j, n, T.Store(B, T.load(A, [j]) * c(3) + j, (j,)), ForKind.VECTORIZED),
                 loop(u, 4, T.Store(B, T.load(B, [u]) + c(1000), (u,)), ForKind.UNROLLED))
    f = T.PrimFunc("vu", (A, B), body)
    a = RNG.integers(-50, 50, n).astype("int32")
    (_, got), (_, ref) = run_both(f, a, np.zeros(n, "int32"))
    np.testing.assert_array_equal(got, ref)
    assert "<64 x i32>" in compile_funcs(f).llvm_ir


def test_local_and_large_allocations_in_parallel_regions():
    M, N = 16, 20000                   # the global scratch (80 kB) goes to the heap
    A, B = T.Buffer("A", "float32", (M, N)), T.Buffer("B", "float32", (M, N))
    big = T.Buffer("scratch", "float32", (M * N,), scope="global")
    acc = T.Buffer("acc", "float32", (1,), scope="local")
    i, j, k = T.var("i"), T.var("j"), T.var("k")
    fill = loop(i, M * N, T.Store(big, T.load(A, [i]) + c(1.0), (i,)), ForKind.PARALLEL)
    rows = loop(i, M, T.Allocate(acc, T.seq(
        T.Store(acc, c(0.0), (c(0),)),
        loop(j, N, T.Store(acc, T.load(acc, [c(0)]) + T.load(big, [i * N + j]), (c(0),))),
        loop(k, N, T.Store(B, T.load(acc, [c(0)]), (i * N + k,))))), ForKind.PARALLEL)
    f = T.PrimFunc("rowsum", (A, B), T.Allocate(big, T.seq(fill, rows)))
    a = RNG.random((M, N)).astype("float32")
    b = np.zeros((M, N), "float32")
    m = compile_funcs(f)
    m(a, b)
    assert "aligned_alloc" in m.llvm_ir
    np.testing.assert_allclose(b, np.broadcast_to((a + 1).sum(1, keepdims=True), (M, N)), rtol=1e-3)


def test_if_then_else_and_let_expression():
    n = 50
    A, B = T.Buffer("A", "int32", (n,)), T.Buffer("B", "int32", (n,))
    i, t = T.var("i"), T.var("t")
    body = loop(i, n, T.IfThenElse(T.eq(i % c(3), c(0)),
                                   T.Store(B, T.let(t, T.load(A, [i]) * c(2), t + t), (i,)),
                                   T.IfThenElse(i < c(10), T.Store(B, c(-1), (i,)))))
    f = T.PrimFunc("branches", (A, B), body)
    a = RNG.integers(-9, 9, n).astype("int32")
    (_, got), (_, ref) = run_both(f, a, np.full(n, 7, "int32"))
    np.testing.assert_array_equal(got, ref)


def test_address_of_and_evaluate_are_accepted():
    n = 4
    A = T.Buffer("A", "float32", (n,))
    i = T.var("i")
    body = loop(i, n, T.seq(T.Evaluate(T.Expr(T.Op.CALL, "handle", (T.load(A, [i]),), "address_of")),
                            T.Store(A, c(1.0), (i,))))
    a = np.zeros(n, "float32")
    compile_funcs(T.PrimFunc("addr", (A,), body))(a)
    np.testing.assert_array_equal(a, 1)


def test_thread_axes_are_rejected():
    A = T.Buffer("A", "float32", (4,))
    i = T.var("i")
    body = T.For(i, c(0), c(4), ForKind.SERIAL, T.Store(A, c(0.0), (i,)), thread="threadIdx.x")
    with pytest.raises(ValueError, match="bound to thread axis 'threadIdx.x'"):
        compile_funcs(T.PrimFunc("gpu", (A,), body))


def test_unbound_variable_and_multi_index_errors():
    A = T.Buffer("A", "float32", (4, 4))
    i, ghost = T.var("i"), T.var("ghost")
    body = loop(i, 4, T.Store(A, T.cast(ghost, "float32"), (i,)))
    with pytest.raises(ValueError, match="variable 'ghost' .* is used but not bound"):
        compile_funcs(T.PrimFunc("unbound", (A,), body))
    body = loop(i, 4, T.Store(A, c(0.0), (i, i)))
    with pytest.raises(ValueError, match="store to 'A' has 2 indices; .*one flat index"):
        compile_funcs(T.PrimFunc("nd", (A,), body))


def test_fast_math_is_off_by_default_and_fp_contract_opts_in():
    n = 16
    f = T.PrimFunc("fma", (T.Buffer("A", "float32", (n,)),),
                   loop(T.var("i"), n, T.Store(T.Buffer("A", "float32", (n,)),
                                               T.load(T.Buffer("A", "float32", (n,)), [T.var("i")])
                                               * c(2.0) + c(1.0), (T.var("i"),))))
    strict = compile_funcs(f)
    for flag in ("contract", "fast", "nnan", "ninf", "nsz", "arcp", "afn", "reassoc"):
        assert f" {flag} " not in strict.llvm_ir
    assert " contract " in compile_funcs(f, fp_contract=True).llvm_ir
