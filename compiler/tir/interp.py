"""A reference interpreter for PrimFuncs: runs the loop IR on numpy arrays, slowly.

`run(func, *args)` takes one numpy array per Buffer param (C-contiguous, the
buffer's dtype, `buffer.size` elements; written in place) and one Python number
per scalar VAR param. It accepts the IR before and after storage_flatten (N-D
or flat indices), vector RAMP/BROADCAST code and virtual-thread copies, so
tests can check every pass and code generators can diff against it. Allocated
buffers start as NaN (floats) or 0x5A bytes (ints) to expose reads of values
never written. Out-of-bounds accesses raise IndexError.
"""

from __future__ import annotations

import math

import numpy as np

from . import dtype as dt
from . import ir
from .ops import Op

_UNARY = {"exp": np.exp, "log": np.log, "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x),
          "tanh": np.tanh, "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "fabs": np.abs,
          "erf": np.vectorize(math.erf), "floor": np.floor, "ceil": np.ceil, "round": np.rint,
          "sin": np.sin, "cos": np.cos}
_BINARY = {Op.ADD: np.add, Op.SUB: np.subtract, Op.MUL: np.multiply, Op.DIV: np.divide,
           Op.FLOORDIV: np.floor_divide, Op.FLOORMOD: np.mod, Op.MIN: np.minimum, Op.MAX: np.maximum,
           Op.EQ: np.equal, Op.NE: np.not_equal, Op.LT: np.less, Op.LE: np.less_equal,
           Op.GT: np.greater, Op.GE: np.greater_equal, Op.AND: np.logical_and, Op.OR: np.logical_or}


class _Machine:
    def __init__(self):
        self.env: dict = {}
        self.mem: dict[str, np.ndarray] = {}

    def offset(self, buf: ir.Buffer, indices) -> np.ndarray | int:
        idx = [self.eval(i) for i in indices]
        off = idx[0] if len(idx) == 1 else sum(i * s for i, s in zip(idx, buf.strides))
        arr = np.asarray(off)
        if arr.size and (arr.min() < 0 or arr.max() >= buf.size):
            raise IndexError(f"access to {buf.name!r} at element offset {off} is outside its "
                             f"{buf.size} elements (indices {[str(i) for i in indices]})")
        return off

    def eval(self, e: ir.Expr):
        op = e.op
        if op is Op.CONST:
            return dt.to_numpy(e.dtype).type(e.arg)
        if op is Op.VAR:
            return self.env[e]
        if op in _BINARY:
            return _BINARY[op](self.eval(e.src[0]), self.eval(e.src[1]))
        if op is Op.NOT:
            return np.logical_not(self.eval(e.src[0]))
        if op is Op.LOAD:
            return self.mem[e.arg.name][self.offset(e.arg, e.src)]
        if op is Op.CAST:
            x = np.asarray(self.eval(e.src[0]))
            return x.astype(dt.to_numpy(e.dtype))[()]
        if op is Op.RAMP:
            base, stride = self.eval(e.src[0]), self.eval(e.src[1])
            return (base + stride * np.arange(e.arg)).astype(dt.to_numpy(e.dtype))
        if op is Op.BROADCAST:
            return np.full(e.arg, self.eval(e.src[0]), dt.to_numpy(e.dtype))
        if op is Op.SELECT:
            c, a, b = (self.eval(s) for s in e.src)
            return np.where(c, a, b).astype(dt.to_numpy(e.dtype))[()]
        if op is Op.LET:
            saved = self.env.get(e.src[0])
            self.env[e.src[0]] = self.eval(e.src[1])
            try:
                return self.eval(e.src[2])
            finally:
                self.env[e.src[0]] = saved
        if op is Op.CALL:
            return self.call(e)
        raise TypeError(f"interpreter: cannot evaluate {op.name} ({e})")

    def call(self, e: ir.Expr):
        name = e.arg
        if name == "if_then_else":
            c = self.eval(e.src[0])
            if np.ndim(c) == 0:
                return self.eval(e.src[1] if c else e.src[2])
            return np.where(c, self.eval(e.src[1]), self.eval(e.src[2]))
        args = [self.eval(s) for s in e.src]
        out = np.power(*args) if name == "pow" else _UNARY[name](*args) if name in _UNARY else None
        if out is None:
            raise TypeError(f"interpreter: intrinsic {name!r} has no reference")
        return np.asarray(out).astype(dt.to_numpy(e.dtype))[()]

    def exec(self, s: ir.Stmt) -> None:
        if isinstance(s, ir.SeqStmt):
            for c in s.stmts:
                self.exec(c)
        elif isinstance(s, ir.For):
            lo, n = int(self.eval(s.min)), int(self.eval(s.extent))
            t = dt.to_numpy(s.var.dtype).type
            for x in range(lo, lo + n):
                self.env[s.var] = t(x)
                self.exec(s.body)
            self.env.pop(s.var, None)
        elif isinstance(s, ir.Store):
            off = self.offset(s.buffer, s.indices)
            self.mem[s.buffer.name][off] = self.eval(s.value)
        elif isinstance(s, ir.Allocate):
            b = s.buffer
            if dt.is_float(b.dtype):
                arr = np.full(b.size, np.nan, dt.to_numpy(b.dtype))
            else:
                arr = np.frombuffer(b"\x5a" * (b.size * dt.to_numpy(b.dtype).itemsize),
                                    dt.to_numpy(b.dtype)).copy()
            self.mem[b.name] = arr
            self.exec(s.body)
            del self.mem[b.name]
        elif isinstance(s, ir.IfThenElse):
            if self.eval(s.cond):
                self.exec(s.then_case)
            elif s.else_case is not None:
                self.exec(s.else_case)
        elif isinstance(s, ir.LetStmt):
            self.env[s.var] = self.eval(s.value)
            self.exec(s.body)
            del self.env[s.var]
        elif isinstance(s, ir.Evaluate):
            self.eval(s.value)
        elif isinstance(s, ir.AttrStmt):
            self.exec(s.body)
        else:
            raise TypeError(f"not a statement: {s!r}")


def run(func: ir.PrimFunc, *args) -> None:
    """Execute `func` on `args` (see module docstring). Raises ValueError for mismatched arguments."""
    if len(args) != len(func.params):
        raise ValueError(f"{func.name} takes {len(func.params)} arguments, got {len(args)}")
    m = _Machine()
    for p, a in zip(func.params, args):
        if isinstance(p, ir.Buffer):
            if not isinstance(a, np.ndarray) or a.dtype != dt.to_numpy(p.dtype) or a.size != p.size \
                    or not a.flags.c_contiguous:
                raise ValueError(f"argument {p.name!r} must be a C-contiguous {p.dtype} array of "
                                 f"{p.size} elements (shape {p.shape}), not {getattr(a, 'dtype', type(a))} "
                                 f"of shape {getattr(a, 'shape', None)}")
            m.mem[p.name] = a.reshape(-1)
        else:
            m.env[p] = dt.to_numpy(p.dtype).type(a)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        m.exec(func.body)
