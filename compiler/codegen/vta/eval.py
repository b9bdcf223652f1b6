"""Integer evaluation of loop-IR index expressions for the VTA code generator.

The VTA backend runs the loops outside instructions at compile time (their
iterations become separate instructions), so every index it needs is a
number; inside an instruction (a DMA copy nest, a uop kernel) it evaluates
indices over the whole iteration grid at once with numpy and checks the
affine form the hardware needs from those numbers.

``evaluate(expr, env)``: ``env`` maps variable names to ints or int64 arrays
(broadcast together). Integer ops follow the IR (floor division/modulo);
comparisons and logic give bool arrays. LOAD, CALL and float dtypes are not
index arithmetic and raise ``CodegenError``. Each expression is compiled once into
a Python function (``compiled``), since the same expressions are evaluated for
every iteration of the loops the code generator runs.
"""
from __future__ import annotations

import functools

import numpy as np

from compiler.tir import ir
from compiler.tir.ops import Op
from vta_hw.errors import VtaError


class CodegenError(VtaError, ValueError):
    """Loop IR that the VTA code generator cannot turn into instructions; the message says why."""


#: Python source of each operator, on ints or int64 arrays alike: Python's ``//`` and
#: ``%`` are numpy's ``floor_divide`` and ``mod`` (floor semantics, as the IR's).
_BIN = {Op.ADD: "({} + {})", Op.SUB: "({} - {})", Op.MUL: "({} * {})",
        Op.FLOORDIV: "({} // {})", Op.FLOORMOD: "({} % {})", Op.MIN: "_min({}, {})",
        Op.MAX: "_max({}, {})", Op.EQ: "({} == {})", Op.NE: "({} != {})", Op.LT: "({} < {})",
        Op.LE: "({} <= {})", Op.GT: "({} > {})", Op.GE: "({} >= {})",
        Op.AND: "_np.logical_and({}, {})", Op.OR: "_np.logical_or({}, {})"}


def _min(a, b):
    if type(a) is int and type(b) is int:
        return a if a < b else b
    return np.minimum(a, b)


def _max(a, b):
    if type(a) is int and type(b) is int:
        return a if a > b else b
    return np.maximum(a, b)


_HELPERS = {"_np": np, "_min": _min, "_max": _max}
#: ``compiled`` by object identity first: the structural lookup compares equal copies
#: node by node, which cost more than evaluating
_BY_ID: dict[int, tuple] = {}
_BY_ID_MAX = 1 << 14


def evaluate(e: ir.Expr, env: dict):
    """The value of index expression ``e`` under ``env`` (int, bool, or numpy array).

    Raises:
        CodegenError: a variable of ``e`` is not in ``env``, or ``e`` holds an operation
            that is not index arithmetic (LOAD, CALL, ...).
    """
    hit = _BY_ID.get(id(e))
    if hit is None or hit[0] is not e:
        if len(_BY_ID) >= _BY_ID_MAX:
            _BY_ID.clear()
        hit = _BY_ID[id(e)] = (e, compiled(e))   # e kept alive: its id stays its own
    try:
        return hit[1](env)
    except KeyError as k:
        raise CodegenError(f"index variable {k.args[0]!r} is not bound by an enclosing loop "
                           "or let; VTA code needs every index computable at compile "
                           "time") from None


@functools.lru_cache(maxsize=1 << 14)
def compiled(e: ir.Expr):
    """``e`` as a Python function of ``env`` (``evaluate``'s meaning), made once per
    expression: the code generator evaluates the same index expressions for every
    iteration of the loops it runs, and walking the tree each time cost most of a
    build. Common subexpressions are computed once (the nodes compare structurally).

    Raises:
        CodegenError: ``e`` holds an operation that is not index arithmetic.
    """
    return _compile((e,), False)


def compiled_tuple(exprs: tuple):
    """``exprs`` as one Python function of ``env`` returning their values as a tuple
    (``compiled``'s meaning, subexpressions shared across them).

    Raises:
        CodegenError: as ``compiled``; when it runs, a variable missing from ``env``.
    """
    return _compile(tuple(exprs), True)


def _compile(roots: tuple, as_tuple: bool):
    lines: list[str] = []
    consts: dict[str, object] = {}
    seen: dict[tuple, str] = {}

    def go(x: ir.Expr, scope: tuple) -> str:
        key = (x, scope)
        hit = seen.get(key)
        if hit is not None:
            return hit
        op = x.op
        if op is Op.CONST:
            if type(x.arg) is int:
                return repr(x.arg)
            code = f"_c{len(consts)}"
            consts[code] = x.arg
        elif op is Op.VAR:
            bound = dict(scope).get(x.arg)
            code = bound if bound is not None else f"env[{x.arg!r}]"
        elif op in _BIN:
            code = _BIN[op].format(go(x.src[0], scope), go(x.src[1], scope))
        elif op is Op.NOT:
            code = f"_np.logical_not({go(x.src[0], scope)})"
        elif op is Op.SELECT:
            code = (f"_np.where({go(x.src[0], scope)}, {go(x.src[1], scope)}, "
                    f"{go(x.src[2], scope)})")
        elif op is Op.CAST:
            return go(x.src[0], scope)
        elif op is Op.LET:
            value = go(x.src[1], scope)
            return go(x.src[2], scope + ((x.src[0].arg, value),))
        else:
            raise CodegenError(f"{op.name} in an index expression ({x}); VTA indices must be "
                               "integer arithmetic on loop variables")
        name = f"_t{len(lines)}"
        lines.append(f"    {name} = {code}")
        seen[key] = name
        return name

    results = [go(e, ()) for e in roots]
    result = f"({', '.join(results)},)" if as_tuple else results[0]
    src = "def _f(env):\n" + "\n".join(lines) + f"\n    return {result}\n"
    space = {**_HELPERS, **consts}
    exec(compile(src, "<vta index expression>", "exec"), space)
    f = space["_f"]
    if not as_tuple:
        return f

    def run(env):
        try:
            return f(env)
        except KeyError as k:
            raise CodegenError(f"index variable {k.args[0]!r} is not bound by an enclosing "
                               "loop or let; VTA code needs every index computable at "
                               "compile time") from None
    return run


@functools.lru_cache(maxsize=1 << 12)
def flat_offset(buf: ir.Buffer, indices: tuple) -> ir.Expr:
    """The flat element offset of ``buf[indices]`` (N-D with strides, or already flat)."""
    if len(indices) == 1:
        return ir.convert(indices[0])
    if len(indices) != len(buf.shape):
        raise CodegenError(f"access to {buf.name!r} with {len(indices)} indices; the buffer "
                           f"has {len(buf.shape)} dimensions")
    out = ir.const(0)
    for i, s in zip(indices, buf.strides):
        out = out + ir.convert(i) * s
    return out


def element_index(buf: ir.Buffer, indices, elem_values: int, env: dict):
    """``buf[indices]`` as an index of whole elements of ``elem_values`` values.

    Raises:
        CodegenError: the offset is not a multiple of ``elem_values``.
    """
    off = np.asarray(evaluate(flat_offset(buf, tuple(indices)), env), np.int64)
    if np.any(off % elem_values):
        raise CodegenError(f"access to {buf.name!r} at value offset {int(off.flat[0])} is not "
                           f"aligned to its {elem_values}-value elements; instructions move "
                           "whole elements")
    return off // elem_values
