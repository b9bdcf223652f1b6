"""Elementwise ops: unary activations and math, CAST, binary arithmetic and comparisons with
numpy broadcasting, and WHERE.

All keep the input shape (binary, WHERE: the broadcast shape, numpy rules, as
ONNX's multidirectional broadcasting) and dtype (CAST: `to`; EQUAL, LESS,
GREATER: bool). Binary operands must share a dtype (POW: the exponent may
differ; the result has the base's dtype). NOT takes and gives bool; ABS and
NEG take any numeric dtype, the other math ops float. WHERE src (condition
bool, x, y): x where the condition holds, else y (x and y share a dtype).
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import GraphError
from ..ops import Kind, Op
from ..registry import register

_erf = np.vectorize(math.erf, otypes=[np.float64])


def erf(x: np.ndarray) -> np.ndarray:
    """Exact (float64 libm) error function, returned in x's dtype."""
    return _erf(x.astype(np.float64)).astype(x.dtype)


def _same(src, a):
    return src[0].shape, src[0].dtype


def _float_only(src, a):
    if not np.issubdtype(np.dtype(src[0].dtype), np.floating):
        raise GraphError(f"input must be a float tensor, not {src[0].dtype}; insert a CAST")
    return _same(src, a)


def _numeric(src, a):
    if np.dtype(src[0].dtype) == np.bool_:
        raise GraphError("input must be numeric, not bool; insert a CAST")
    return _same(src, a)


def _bool_only(src, a):
    if np.dtype(src[0].dtype) != np.bool_:
        raise GraphError(f"input must be bool, not {src[0].dtype}; compare (EQUAL, LESS, GREATER) or CAST first")
    return _same(src, a)


def _unary(op: Op, fn, infer=_float_only):
    register(op, Kind.INJECTIVE, 1)(lambda: (infer, lambda args, a: fn(args[0], a).astype(args[0].dtype, copy=False)))


def _gelu(x, a):
    if a.get("approximate", "none") == "tanh":
        return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + erf(x / np.sqrt(np.asarray(2.0, x.dtype))))


def _sigmoid(x, a):
    return np.exp(-np.logaddexp(0, -x.astype(np.float64)))


_unary(Op.RELU, lambda x, a: np.maximum(x, 0), _same)
_unary(Op.LEAKY_RELU, lambda x, a: np.where(x >= 0, x, x * np.asarray(a["alpha"], x.dtype)))
_unary(Op.CLIP, lambda x, a: np.clip(x, a.get("min"), a.get("max")), _same)
_unary(Op.SIGMOID, _sigmoid)
_unary(Op.TANH, lambda x, a: np.tanh(x))
_unary(Op.ERF, lambda x, a: erf(x))
_unary(Op.GELU, _gelu)
_unary(Op.HARD_SWISH, lambda x, a: x * np.clip(x / np.asarray(6, x.dtype) + np.asarray(0.5, x.dtype), 0, 1))
_unary(Op.SQRT, lambda x, a: np.sqrt(x))
_unary(Op.EXP, lambda x, a: np.exp(x))
_unary(Op.LOG, lambda x, a: np.log(x))
_unary(Op.ABS, lambda x, a: np.abs(x), _numeric)
_unary(Op.NEG, lambda x, a: np.negative(x), _numeric)
_unary(Op.NOT, lambda x, a: np.logical_not(x), _bool_only)


@register(Op.CAST, Kind.INJECTIVE, 1)
def _cast():
    def infer(src, a):
        return src[0].shape, np.dtype(a["to"])
    return infer, lambda args, a: args[0].astype(a["to"])


def broadcast_shape(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """numpy/ONNX multidirectional broadcast of `shapes`; GraphError if incompatible."""
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise GraphError(f"shapes {' and '.join(str(list(s)) for s in shapes)} do not broadcast "
                         "(trailing dims must match or be 1)") from None


def _binary(op: Op, fn, same_dtype=True, out_dtype=None):
    """Register a broadcasting binary op: result in the first operand's dtype, or `out_dtype`."""
    def infer(src, a):
        if same_dtype and src[0].dtype != src[1].dtype:
            raise GraphError(f"operands must share a dtype, not {src[0].dtype} and {src[1].dtype}; insert a CAST")
        return broadcast_shape(src[0].shape, src[1].shape), out_dtype or src[0].dtype

    def compute(args, a):
        return np.asarray(fn(args[0], args[1])).astype(out_dtype or args[0].dtype, copy=False)
    register(op, Kind.INJECTIVE, 2)(lambda: (infer, compute))


def _div(x, y):
    if np.issubdtype(x.dtype, np.integer):
        return np.trunc(x / y)  # ONNX integer Div truncates toward zero
    return x / y


_binary(Op.ADD, np.add)
_binary(Op.SUB, np.subtract)
_binary(Op.MUL, np.multiply)
_binary(Op.DIV, _div)
_binary(Op.POW, lambda x, y: np.power(x, y.astype(x.dtype)), same_dtype=False)
_binary(Op.EQUAL, np.equal, out_dtype="bool")
_binary(Op.LESS, np.less, out_dtype="bool")
_binary(Op.GREATER, np.greater, out_dtype="bool")


@register(Op.WHERE, Kind.INJECTIVE, 3)
def _where():
    def infer(src, a):
        cond, x, y = src
        if np.dtype(cond.dtype) != np.bool_:
            raise GraphError(f"condition must be bool, not {cond.dtype}; compare or CAST it first")
        if x.dtype != y.dtype:
            raise GraphError(f"x and y must share a dtype, not {x.dtype} and {y.dtype}; insert a CAST")
        return broadcast_shape(cond.shape, x.shape, y.shape), x.dtype
    return infer, lambda args, a: np.where(*args).astype(args[1].dtype, copy=False)
