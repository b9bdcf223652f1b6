"""Each dtype through LLVM code generation, against numpy (hand-built PrimFuncs)."""
import numpy as np
import pytest

from codegen_helpers import compile_funcs, elementwise
from compiler.tir import ir as T
from compiler.tir.ops import ForKind

N = 67   # not a multiple of any vector width
RNG = np.random.default_rng(0)


def rand(dtype, n=N):
    if dtype == "bool":
        return RNG.random(n) < 0.5
    if np.dtype(dtype).kind == "f":
        return RNG.standard_normal(n).astype(dtype)
    info = np.iinfo(dtype)
    return RNG.integers(max(info.min, -1000), min(info.max, 1000), n, endpoint=True).astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int8", "uint8", "int32", "int64",
                                   "int16", "uint16", "uint32", "uint64"])
@pytest.mark.parametrize("kind", [ForKind.SERIAL, ForKind.PARALLEL, ForKind.VECTORIZED])
def test_arithmetic(dtype, kind):
    f = elementwise("arith", N, [dtype] * 3, dtype,
                    lambda a, b, c: T.max_(T.min_(a * b + c - a, b), c), kind)
    x, y, z = rand(dtype), rand(dtype), rand(dtype)
    out = np.zeros(N, dtype)
    compile_funcs(f)(x, y, z, out)
    with np.errstate(over="ignore"):
        want = np.maximum(np.minimum(x * y + z - x, y), z)
    np.testing.assert_allclose(out, want, rtol=1e-5 if dtype == "float32" else 1e-12)


def test_float16_arithmetic_without_casts():
    f = elementwise("h", N, ["float16", "float16"], "float16", lambda a, b: a * b + a - b / b,
                    ForKind.VECTORIZED)
    x, y = rand("float16"), rand("float16")
    y[y == 0] = 1
    out = np.zeros(N, "float16")
    compile_funcs(f)(x, y, out)
    np.testing.assert_allclose(out.astype("float32"), (x * y + x - y / y).astype("float32"),
                               rtol=2e-3, atol=2e-3)


def test_large_unsigned_constants():
    f = elementwise("u64", N, ["uint64"], "uint64", lambda a: a + T.const(2**64 - 1, "uint64"))
    x = rand("uint64")
    out = np.zeros(N, "uint64")
    compile_funcs(f)(x, out)
    np.testing.assert_array_equal(out, x + np.uint64(2**64 - 1))


def test_integer_wraps_like_numpy():
    f = elementwise("wrap", N, ["int8", "int8"], "int8", lambda a, b: a * b + a)
    x, y = rand("int8"), rand("int8")
    out = np.zeros(N, "int8")
    compile_funcs(f)(x, y, out)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(out, x * y + x)


def test_float16_storage_float32_compute():
    f = elementwise("half", N, ["float16", "float16"], "float16",
                    lambda a, b: T.cast(T.cast(a, "float32") * T.cast(b, "float32")
                                        + T.const(1.0), "float16"), ForKind.VECTORIZED)
    x, y = rand("float16"), rand("float16")
    out = np.zeros(N, "float16")
    compile_funcs(f)(x, y, out)
    want = (x.astype("float32") * y.astype("float32") + 1).astype("float16")
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("dtype", ["int32", "int64", "int8"])
def test_floordiv_floormod_round_toward_minus_infinity(dtype):
    f = elementwise("fdiv", N, [dtype, dtype], dtype, lambda a, b: a // b)
    g = elementwise("fmod", N, [dtype, dtype], dtype, lambda a, b: a % b)
    x = rand(dtype)
    y = rand(dtype)
    y[y == 0] = 3
    y[:4] = [2, -2, 7, -7]
    x[:4] = [-7, -7, 7, 7]
    m = compile_funcs(f, g)
    q, r = np.zeros(N, dtype), np.zeros(N, dtype)
    m["fdiv"](x, y, q)
    m["fmod"](x, y, r)
    np.testing.assert_array_equal(q, x // y)
    np.testing.assert_array_equal(r, x % y)


def test_unsigned_division():
    f = elementwise("udiv", N, ["uint8", "uint8"], "uint8", lambda a, b: a // b + a % b)
    x, y = rand("uint8"), rand("uint8") | 1
    out = np.zeros(N, "uint8")
    compile_funcs(f)(x, y, out)
    np.testing.assert_array_equal(out, x // y + x % y)


@pytest.mark.parametrize("kind", [ForKind.SERIAL, ForKind.VECTORIZED])
def test_bool_buffers_and_logic(kind):
    f = elementwise("logic", N, ["bool", "bool", "float32"], "bool",
                    lambda a, b, c: T.binary(T.Op.OR, a & ~b, c > T.const(0.5)), kind)
    x, y, z = rand("bool"), rand("bool"), rand("float32")
    out = np.zeros(N, "bool")
    compile_funcs(f)(x, y, z, out)
    np.testing.assert_array_equal(out, (x & ~y) | (z > 0.5))


@pytest.mark.parametrize("src,dst", [("float32", "int32"), ("int32", "float32"), ("int8", "int64"),
                                     ("uint8", "int32"), ("int64", "int8"), ("float32", "float16"),
                                     ("float16", "float64"), ("bool", "float32"),
                                     ("int32", "bool"), ("float32", "bool"), ("uint8", "float32")])
def test_casts(src, dst):
    f = elementwise("cast", N, [src], dst, lambda a: T.cast(a, dst), ForKind.VECTORIZED)
    x = rand(src)
    if src == "float32" and dst == "int32":
        x = x * 1000
    out = np.zeros(N, dst)
    compile_funcs(f)(x, out)
    np.testing.assert_array_equal(out, x.astype(dst))


@pytest.mark.parametrize("op", ["eq", "ne", "lt", "le", "gt", "ge"])
@pytest.mark.parametrize("dtype", ["float32", "int32", "uint8"])
def test_comparisons_and_select(op, dtype):
    cmp = {"eq": T.eq, "ne": T.ne, "lt": lambda a, b: a < b, "le": lambda a, b: a <= b,
           "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b}[op]
    f = elementwise("sel", N, [dtype, dtype], dtype, lambda a, b: T.select(cmp(a, b), a, b))
    x, y = rand(dtype), rand(dtype)
    y[::3] = x[::3]
    out = np.zeros(N, dtype)
    compile_funcs(f)(x, y, out)
    npcmp = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
             "gt": np.greater, "ge": np.greater_equal}[op]
    np.testing.assert_array_equal(out, np.where(npcmp(x, y), x, y))


@pytest.mark.parametrize("name,fn", [
    ("exp", np.exp), ("log", lambda x: np.log(np.abs(x) + 1)), ("sqrt", lambda x: np.sqrt(np.abs(x))),
    ("rsqrt", lambda x: 1 / np.sqrt(np.abs(x) + 1)), ("tanh", np.tanh),
    ("sigmoid", lambda x: 1 / (1 + np.exp(-x))), ("fabs", np.abs), ("floor", np.floor),
    ("ceil", np.ceil), ("round", np.rint), ("sin", np.sin), ("cos", np.cos)])
@pytest.mark.parametrize("kind", [ForKind.SERIAL, ForKind.VECTORIZED])
def test_math_intrinsics(name, fn, kind):
    def body(a):
        if name == "log":
            a = T.call("fabs", "float32", a) + T.const(1.0)
        elif name == "sqrt":
            a = T.call("fabs", "float32", a)
        elif name == "rsqrt":
            a = T.call("fabs", "float32", a) + T.const(1.0)
        return T.call(name, "float32", a)
    f = elementwise("math", N, ["float32"], "float32", body, kind)
    x = rand("float32") * 2
    x[:3] = [0.5, 1.5, -2.5]     # rint ties
    out = np.zeros(N, "float32")
    compile_funcs(f)(x, out)
    want = fn(x) if name not in ("log", "sqrt", "rsqrt") else fn(x)
    np.testing.assert_allclose(out, want.astype("float32"), rtol=2e-6, atol=1e-6)


def test_pow_and_erf():
    f = elementwise("pe", N, ["float32", "float32"], "float32",
                    lambda a, b: T.call("pow", "float32", T.call("fabs", "float32", a), b)
                    + T.call("erf", "float32", b), ForKind.VECTORIZED)
    x, y = rand("float32"), rand("float32")
    out = np.zeros(N, "float32")
    compile_funcs(f)(x, y, out)
    import math
    want = np.abs(x) ** y + np.array([math.erf(v) for v in y], "float32")
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)


def test_scalar_parameters():
    alpha = T.var("alpha", "float32")
    shift = T.var("shift", "int64")
    x = T.Buffer("x", "float32", (N,))
    out = T.Buffer("out", "float32", (N,))
    i = T.var("i")
    body = T.For(i, T.const(0), T.const(N), ForKind.SERIAL,
                 T.Store(out, T.load(x, [i]) * alpha + T.cast(shift, "float32"), (i,)))
    m = compile_funcs(T.PrimFunc("axpb", (alpha, x, shift, out), body))
    xs, o = rand("float32"), np.zeros(N, "float32")
    m(np.float32(2.5), xs, 7, o)
    np.testing.assert_allclose(o, xs * 2.5 + 7, rtol=1e-6)
