"""Simplifier cases as before/expected IR compared structurally."""

import pytest

from compiler.tir import ir
from compiler.tir.bounds import const_bounds, interval, max_by_enumeration
from compiler.tir.ops import ForKind
from compiler.tir.simplify import simplify_expr, simplify_stmt

i, j, k, x, y = (ir.var(n) for n in "ijkxy")
R = {i: (0, 3), j: (0, 3), k: (0, 15)}

CASES = [
    # affine folding into the canonical sum
    ((i * 4 + j) - (j + i * 4), ir.const(0)),
    ((i + 1) * 4 - 4, i * 4),
    (x * 2 + x * 3 - x, x * 4),
    (x - (y - x), x * 2 - y),
    ((i + 2) + (j + 3), i + j + 5),
    # floordiv / floormod with constants
    ((x // 8) * 8 + x % 8, x),
    ((x // 4) * 12 + (x % 4) * 3, x * 3),
    ((i * 16 + k) // 16, i),
    ((i * 16 + k) % 16, k),
    ((x * 8 + 3) // 4, x * 2),
    ((x * 8 + y) % 4, y % 4),
    ((x // 2) // 3, x // 6),
    ((x % 12) % 4, x % 4),
    (x // 1, x),
    (x % 1, ir.const(0)),
    (ir.const(-7) // 2, ir.const(-4)),
    (ir.const(-7) % 2, ir.const(1)),
    # boundary checks of splits decided by ranges
    (i * 4 + j < 16, ir.const(True)),
    (i * 4 + j >= 16, ir.const(False)),
    (ir.logical_and(i * 4 + j < 16, x < 3), x < 3),
    (ir.min_(i * 4 + j, 100), i * 4 + j),
    (ir.max_(x, x), x),
    # logic and selects
    (~(~(x < 1)), x < 1),
    (ir.select(ir.const(True), x, y), x),
    (ir.select(x < y, i, i), i),
    (ir.cast(ir.const(2.7, "float32"), "int32"), ir.const(2)),
    (ir.const(1.5) * 2.0, ir.const(3.0)),
]


@pytest.mark.parametrize("before,expected", CASES, ids=[repr(c[0]) for c in CASES])
def test_simplify_expr(before, expected):
    assert simplify_expr(before, R) == expected


# modulo and division by the bounds of their operand: a loop of extent 1 (b in [0, 0])
# makes the operand one value; multiples of the divisor drop out before ranges are used
b, m = ir.var("b"), ir.var("m")
BOUNDED = [
    ((b * 16) % 16, ir.const(0)),            # Simple Matrix Multiply at batch 1
    ((b * 16 + 5) % 16, ir.const(5)),
    ((b * 16) // 16, ir.const(0)),
    ((b * 16 + k) % 16, k),                  # k in [0, 15]: b*16 drops out, then k < 16
    ((m * 32 + k) % 16, k),                  # m unbounded: still k
    ((k + 16) % 16, k),                      # k + 16 in [16, 31]: one period
    ((k + 16) // 16, ir.const(1)),
    ((b * 16 + m) % 16, m % 16),             # m unbounded: stays
]
RB = R | {b: (0, 0)}


@pytest.mark.parametrize("before,expected", BOUNDED, ids=[repr(c[0]) for c in BOUNDED])
def test_simplify_uses_bounds_for_mod_and_div(before, expected):
    assert simplify_expr(before, RB) == expected


def test_undecidable_check_stays():
    e = i * 4 + j < 15
    assert simplify_expr(e, R) == e


def test_simplify_is_idempotent():
    e = (x // 8) * 8 + (x % 8) * 2 + y * 3 - 7
    once = simplify_expr(e)
    assert simplify_expr(once) == once


def test_simplify_stmt_drops_even_split_guard_and_unit_loops():
    A = ir.Buffer("A", "float32", (16,))
    io, ii = ir.var("io"), ir.var("ii")
    before = ir.For(io, ir.const(0), ir.const(4), ForKind.SERIAL,
                    ir.For(ii, ir.const(0), ir.const(4), ForKind.SERIAL,
                           ir.IfThenElse(io * 4 + ii < 16, ir.Store(A, ir.const(1.0), (io * 4 + ii,)))))
    expected = ir.For(io, ir.const(0), ir.const(4), ForKind.SERIAL,
                      ir.For(ii, ir.const(0), ir.const(4), ForKind.SERIAL,
                             ir.Store(A, ir.const(1.0), (ii + io * 4,))))
    assert simplify_stmt(before) == expected
    unit = ir.For(io, ir.const(0), ir.const(1), ForKind.SERIAL, ir.Store(A, ir.const(1.0), (io + 3,)))
    assert simplify_stmt(unit) == ir.Store(A, ir.const(1.0), (ir.const(3),))


def test_const_bounds():
    assert const_bounds(i * 4 + j, R) == (0, 15)
    assert const_bounds(k % 4, R) == (0, 3)
    assert const_bounds(k // 4 - i, R) == (-3, 3)
    assert const_bounds(x, R)[1] == float("inf")


def test_symbolic_interval():
    lo, hi = interval(i * 4 + j + k, {j: (ir.const(0), ir.const(3)), k: (ir.const(0), ir.const(2))})
    assert simplify_expr(lo) == i * 4 and simplify_expr(hi) == i * 4 + 5
    assert interval(ir.var("n") * j, {j: (ir.const(0), ir.const(3))}) is None


def test_max_by_enumeration_is_exact_where_intervals_are_loose():
    f = ir.var("f")
    ext = (f * 4 + 3) // 5 - (f * 4) // 5 + 1
    assert const_bounds(ext, {f: (0, 3)})[1] == 4
    assert max_by_enumeration(ext, {f: (0, 3)}) == 2
    assert max_by_enumeration(ext, {}) is None
    assert max_by_enumeration(ext, {f: (0, 10**6)}) is None
