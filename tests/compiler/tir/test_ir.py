"""IR nodes: structural equality and hashing, dtype checks, buffers, printer."""

import pytest

from compiler.tir import dtype as dt
from compiler.tir import ir
from compiler.tir.ops import ForKind, Op


def test_structural_equality_and_hash():
    i, j = ir.var("i"), ir.var("j")
    a = (i * 4 + j) // 2
    b = (ir.var("i") * 4 + ir.var("j")) // 2
    assert a == b and hash(a) == hash(b) and a is not b
    assert a != (i * 4 + j) % 2
    assert ir.var("i") != ir.var("i", "int64")
    buf = ir.Buffer("A", "float32", (4, 4))
    s1 = ir.Store(buf, ir.load(buf, [i, j]) + 1.0, (i, j))
    s2 = ir.Store(ir.Buffer("A", "float32", (4, 4)), ir.load(buf, [i, j]) + 1.0, (i, j))
    assert s1 == s2 and len({s1, s2}) == 1


def test_expr_has_no_truth_value():
    with pytest.raises(TypeError, match="truth value of expression"):
        bool(ir.var("i") < 3)


def test_binary_dtype_mismatch_names_both():
    with pytest.raises(TypeError, match=r"ADD of x \(float32\) and i \(int32\): operand dtypes must "
                       r"match; cast one side"):
        ir.var("x", "float32") + ir.var("i")
    with pytest.raises(TypeError, match="FLOORDIV needs integer operands, not float32"):
        ir.var("x", "float32") // 2.0


def test_python_numbers_take_the_expression_dtype():
    e = ir.var("x", "float16") * 2
    assert e.src[1] == ir.const(2.0, "float16") and e.dtype == "float16"
    assert (ir.var("i") < 3).dtype == "bool"


@pytest.mark.parametrize("s,expect", [("float32", ("float32", 1)), ("float32x8", ("float32", 8)),
                                      ("int8x16", ("int8", 16)), ("bool", ("bool", 1))])
def test_dtype_lanes(s, expect):
    assert dt.split_lanes(s) == expect


@pytest.mark.parametrize("bad", ["float31", "float32x1", "int", "x8"])
def test_dtype_errors(bad):
    with pytest.raises(ValueError, match=f"not '{bad}'"):
        dt.split_lanes(bad)


def test_buffer_strides_and_size():
    b = ir.Buffer("A", "int8", (2, 3, 4))
    assert b.strides == (12, 4, 1) and b.size == 24
    assert ir.Buffer("B", "int8", (3, 5), (9, 1)).size == 23
    with pytest.raises(ValueError, match=r"strides \(1,\) must have one entry per dimension"):
        ir.Buffer("C", "int8", (2, 2), (1,))


def test_printer_reads_like_code():
    i = ir.var("i")
    A = ir.Buffer("A", "float32", (8,))
    body = ir.IfThenElse(i < 7, ir.Store(A, ir.load(A, [i]) * 2.0 + ir.call("exp", "float32", 1.0), (i,)))
    f = ir.PrimFunc("f", (A,), ir.For(i, ir.const(0), ir.const(8), ForKind.PARALLEL, body))
    assert repr(f) == (
        "def f(A: float32[8]):\n"
        "  for i in range(0, 8):  # parallel\n"
        "    if (i < 7):\n"
        "      A[i] = ((A[i] * 2.0f) + exp(1.0f))\n")
    vec = ir.load(A, [ir.ramp(i, 1, 4)], 4)
    assert repr(vec) == "A[ramp(i, 1, 4)]" and vec.dtype == "float32x4"
    assert repr(ir.broadcast(ir.const(1.5), 4)) == "broadcast(1.5f, 4)"


def test_seq_flattens_and_drops_none():
    e = ir.Evaluate(ir.const(0))
    assert ir.seq(None, e) is e
    assert ir.seq(ir.seq(e, e), None, e) == ir.SeqStmt((e, e, e))


def test_unknown_intrinsic():
    with pytest.raises(ValueError, match="unknown intrinsic 'expo'"):
        ir.call("expo", "float32", 1.0)
    assert Op.CALL in Op
