"""Property: the simplifier keeps the value of random integer expressions within the ranges it is given."""

import operator

from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.tir import ir
from compiler.tir.ops import Op
from compiler.tir.simplify import simplify_expr

VARS = {ir.var("i"): (0, 7), ir.var("j"): (0, 3), ir.var("x"): (-6, 6)}
_PY = {Op.ADD: operator.add, Op.SUB: operator.sub, Op.MUL: operator.mul, Op.FLOORDIV: operator.floordiv,
       Op.FLOORMOD: operator.mod, Op.MIN: min, Op.MAX: max, Op.LT: operator.lt, Op.LE: operator.le,
       Op.EQ: operator.eq, Op.AND: lambda a, b: a and b}


def evaluate(e: ir.Expr, env: dict):
    if e.op is Op.CONST:
        return e.arg
    if e.op is Op.VAR:
        return env[e]
    if e.op is Op.SELECT:
        return evaluate(e.src[1], env) if evaluate(e.src[0], env) else evaluate(e.src[2], env)
    if e.op is Op.NOT:
        return not evaluate(e.src[0], env)
    return _PY[e.op](*(evaluate(s, env) for s in e.src))


leaves = st.one_of(st.sampled_from(list(VARS)), st.integers(-9, 9).map(ir.const))


def grow(children):
    const = st.integers(1, 6).map(ir.const)
    return st.one_of(
        st.tuples(children, children).map(lambda t: t[0] + t[1]),
        st.tuples(children, children).map(lambda t: t[0] - t[1]),
        st.tuples(children, st.integers(-4, 4)).map(lambda t: t[0] * t[1]),
        st.tuples(children, const).map(lambda t: t[0] // t[1]),
        st.tuples(children, const).map(lambda t: t[0] % t[1]),
        st.tuples(children, children).map(lambda t: ir.min_(t[0], t[1])),
        st.tuples(children, children).map(lambda t: ir.max_(t[0], t[1])),
        st.tuples(children, children, children, children).map(
            lambda t: ir.select(t[0] < t[1], t[2], t[3])),
    )


exprs = st.recursive(leaves, grow, max_leaves=10)
envs = st.fixed_dictionaries({v: st.integers(lo, hi) for v, (lo, hi) in VARS.items()})


@settings(max_examples=300, deadline=None)
@given(exprs, envs)
def test_simplify_preserves_value(e, env):
    s = simplify_expr(e, VARS)
    assert evaluate(s, env) == evaluate(e, env), f"{e} -> {s}"


@settings(max_examples=150, deadline=None)
@given(exprs, exprs, envs)
def test_simplify_preserves_comparisons(a, b, env):
    for c in (a < b, a <= b, ir.eq(a, b), ir.logical_and(a < b, b <= a + 3)):
        assert evaluate(simplify_expr(c, VARS), env) == evaluate(c, env), f"{c}"
