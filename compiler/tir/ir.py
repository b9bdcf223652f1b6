"""Loop IR nodes: `Expr` (one node type, `Op` enum), statements, `Buffer`, `PrimFunc`.

All nodes are frozen dataclasses; structurally equal nodes compare and hash
equal. Variables are `Expr(Op.VAR, dtype, arg=name)`: two variables with the
same name and dtype are the same variable, so names are unique inside a
PrimFunc (`compiler.tir.lower` makes them so).

Forms handed to code generation (the output of `compiler.tir.lower`, which
runs `compiler.tir.pipeline.DEFAULT_PIPELINE`; `compiler.tir.verify(func,
flat=True)` checks them):

Expressions (`Expr.op`):
- CONST (int/float/bool scalar), VAR (int32 loop/let variables; params may be
  any scalar dtype).
- ADD SUB MUL DIV MIN MAX (operands and result share a dtype, scalar or
  vector), FLOORDIV FLOORMOD on ints (floor semantics: -7 // 2 == -4,
  -7 % 2 == 1, as Python).
- EQ NE LT LE GT GE (operands share a dtype, result bool / boolxN),
  AND OR NOT on bool.
- SELECT(cond, a, b) (both sides evaluated), CAST(value) to `dtype`,
  CALL(arg=name, src=args) for the intrinsics in `INTRINSICS` except
  "if_then_else" (lowering turns that lazy select into IfThenElse statements),
  LET(var, value, body). "address_of" takes one LOAD and gives a "handle" (the
  element's address); it appears only in tensor intrinsics' statements.
- LOAD(arg=Buffer, src=(index,)): exactly one index, an element offset into the
  buffer's flat storage. A vector load has value dtype <elem>xN and an index
  that is a RAMP with a constant stride (any constant, usually 1).
- RAMP(base, stride; arg=lanes) with scalar int32 operands, BROADCAST(value;
  arg=lanes) of a scalar; vector operations work lane by lane.
Statements:
- For: `min` and `extent` int32 expressions (constants from `lower`; `min` is
  nonzero on loops cut by loop_partition). Kinds left: SERIAL and PARALLEL
  (VECTORIZED loops became vector code or SERIAL, UNROLLED were copied out).
  `thread` may name a GPU axis ("blockIdx.x", "threadIdx.x"); "vthread" loops
  were replaced by copies.
- Store(buffer, value, (index,)): one flat index, scalar or vector as LOAD.
- Allocate(buffer, body): `buffer.size` elements of `buffer.dtype` in
  `buffer.scope`, live in body.
- IfThenElse (bool scalar condition), LetStmt, SeqStmt, Evaluate (a CALL),
  AttrStmt (keys "pragma_<name>" around loops, "virtual_thread" around each
  virtual thread's copy with the thread index as value, "tensorize" around an
  intrinsic's statements with its name as value).
TENSOR_READ and REDUCE (tensor-expression level) never appear.

Buffers keep their declared N-D `shape` and `strides` after flattening; the
storage is `Buffer.size` contiguous elements and the flat offset of element
(i0, i1, ...) is sum(i_d * strides[d]).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Union

from . import dtype as dt
from .ops import BINARY_ARITH, COMPARE, ForKind, Op

INTRINSICS = frozenset({"exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "fabs", "pow",
                        "floor", "ceil", "round", "sin", "cos", "address_of", "if_then_else",
                        "storage_sync"})   # storage_sync: a GPU block barrier (codegen.gpu_barriers)
#: target instructions a tensor intrinsic may call (``"x86.vpdpbusd"``, ...): registered by the
#: backend that emits them (``compiler.codegen.llvm.intrin_x86``), which also gives their operand
#: types; a CALL of one is built with :func:`target_call`
TARGET_INTRINSICS: set = set()


def target_call(name: str, dtype: str, *args) -> "Expr":
    """A call of target instruction ``name`` (registered in ``TARGET_INTRINSICS``) with
    operands of their own dtypes (no conversion), returning ``dtype``.

    Raises:
        ValueError: ``name`` is not registered.
    """
    if name not in TARGET_INTRINSICS:
        raise ValueError(f"unknown target intrinsic {name!r}; registered: "
                         f"{', '.join(sorted(TARGET_INTRINSICS)) or 'none'} (import the backend's "
                         "intrinsic module, e.g. compiler.codegen.llvm.intrin_x86)")
    return Expr(Op.CALL, dtype, tuple(args), name)


class ExprOps:
    """Python operators building expressions; `==` stays structural equality, use `eq`/`ne`.

    Subclasses define `as_expr()`.
    """

    __slots__ = ()

    def _bin(self, op: Op, other, reverse: bool = False) -> Expr:
        a = self.as_expr()
        b = convert(other, a.dtype)
        return binary(op, b, a) if reverse else binary(op, a, b)

    def __add__(self, o): return self._bin(Op.ADD, o)
    def __radd__(self, o): return self._bin(Op.ADD, o, True)
    def __sub__(self, o): return self._bin(Op.SUB, o)
    def __rsub__(self, o): return self._bin(Op.SUB, o, True)
    def __mul__(self, o): return self._bin(Op.MUL, o)
    def __rmul__(self, o): return self._bin(Op.MUL, o, True)
    def __truediv__(self, o): return self._bin(Op.DIV, o)
    def __rtruediv__(self, o): return self._bin(Op.DIV, o, True)
    def __floordiv__(self, o): return self._bin(Op.FLOORDIV, o)
    def __rfloordiv__(self, o): return self._bin(Op.FLOORDIV, o, True)
    def __mod__(self, o): return self._bin(Op.FLOORMOD, o)
    def __rmod__(self, o): return self._bin(Op.FLOORMOD, o, True)
    def __lt__(self, o): return self._bin(Op.LT, o)
    def __le__(self, o): return self._bin(Op.LE, o)
    def __gt__(self, o): return self._bin(Op.GT, o)
    def __ge__(self, o): return self._bin(Op.GE, o)
    def __and__(self, o): return self._bin(Op.AND, o)
    def __or__(self, o): return self._bin(Op.OR, o)
    def __rshift__(self, o): return self._bin(Op.FLOORDIV, 1 << _shift_amount(o, ">>"))
    def __lshift__(self, o): return self._bin(Op.MUL, 1 << _shift_amount(o, "<<"))
    def __invert__(self): return Expr(Op.NOT, self.as_expr().dtype, (self.as_expr(),))
    def __neg__(self): return self._bin(Op.SUB, 0, True)

    def astype(self, dtype: str) -> Expr:
        return cast(self.as_expr(), dtype)


def _shift_amount(n, sym: str) -> int:
    """A constant shift amount in [0, 31]: ``x >> n`` is ``x // 2**n`` (arithmetic shift,
    floor division), ``x << n`` is ``x * 2**n``, so shifts need no op of their own."""
    v = n.value if isinstance(n, Expr) and n.op is Op.CONST else n
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= 31:
        raise ValueError(f"shift amount of `{sym}` must be a constant int in [0, 31], not {n!r}; "
                         "shift by a variable amount with a select over the amounts")
    return v


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Expr(ExprOps):
    """One expression node: `op`, result `dtype`, operands `src`, payload `arg` (see `Op`)."""

    op: Op
    dtype: str
    src: tuple[Expr, ...] = ()
    arg: object = None
    _hash: int = field(init=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "_hash", hash((self.op, self.dtype, self.src, self.arg)))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other) -> bool:
        if self is other:
            return True
        return (isinstance(other, Expr) and self._hash == other._hash and self.op is other.op
                and self.dtype == other.dtype and self.arg == other.arg and self.src == other.src)

    def __bool__(self):
        raise TypeError(f"the truth value of expression {self} is unknown at compile time; "
                        "use `is None`, structural `==`, or build a condition with select")

    def __repr__(self) -> str:
        from .printer import expr_str
        return expr_str(self)

    def as_expr(self) -> Expr:
        return self

    @property
    def name(self) -> str:
        """The name of a VAR."""
        assert self.op is Op.VAR, self.op
        return self.arg

    @property
    def value(self):
        """The value of a CONST."""
        assert self.op is Op.CONST, self.op
        return self.arg


@dataclass(frozen=True, slots=True)
class Buffer:
    """A named region of memory: element `dtype`, N-D `shape` and `strides` in elements, `scope`.

    scope: "global" (DRAM / host memory), "local" (registers / stack), "shared"
    (GPU), or an accelerator SRAM scope such as "local.inp_buffer".
    """

    name: str
    dtype: str
    shape: tuple[int, ...]
    strides: tuple[int, ...] = ()
    scope: str = "global"

    def __post_init__(self):
        if not self.strides:
            strides, acc = [], 1
            for n in reversed(self.shape):
                strides.append(acc)
                acc *= n
            object.__setattr__(self, "strides", tuple(reversed(strides)))
        if len(self.strides) != len(self.shape):
            raise ValueError(f"buffer {self.name!r}: strides {self.strides} must have one entry per "
                             f"dimension of shape {self.shape}")

    @property
    def size(self) -> int:
        """Elements of storage: the largest flat offset plus one (0 for an empty buffer)."""
        if any(n == 0 for n in self.shape):
            return 0
        return 1 + sum((n - 1) * s for n, s in zip(self.shape, self.strides))

    def __repr__(self) -> str:
        return f"Buffer({self.name}: {self.dtype}{list(self.shape)} @{self.scope})"


# ---------------------------------------------------------------- statements

class _Printed:
    __slots__ = ()

    def __repr__(self) -> str:
        from .printer import stmt_str
        return stmt_str(self)


@dataclass(frozen=True, slots=True, repr=False)
class For(_Printed):
    """for var in [min, min+extent): body. `thread` binds the loop to a GPU or virtual thread axis."""

    var: Expr
    min: Expr
    extent: Expr
    kind: ForKind
    body: Stmt
    thread: str | None = None


@dataclass(frozen=True, slots=True, repr=False)
class Store(_Printed):
    """buffer[indices] = value (one flat index after storage_flatten)."""

    buffer: Buffer
    value: Expr
    indices: tuple[Expr, ...]


@dataclass(frozen=True, slots=True, repr=False)
class Allocate(_Printed):
    """Storage for `buffer` (buffer.size elements of buffer.dtype in buffer.scope) live in `body`."""

    buffer: Buffer
    body: Stmt


@dataclass(frozen=True, slots=True, repr=False)
class IfThenElse(_Printed):
    cond: Expr
    then_case: Stmt
    else_case: Stmt | None = None


@dataclass(frozen=True, slots=True, repr=False)
class LetStmt(_Printed):
    var: Expr
    value: Expr
    body: Stmt


@dataclass(frozen=True, slots=True, repr=False)
class SeqStmt(_Printed):
    stmts: tuple[Stmt, ...]


@dataclass(frozen=True, slots=True, repr=False)
class Evaluate(_Printed):
    """Evaluate an expression for its effect (an intrinsic CALL)."""

    value: Expr


@dataclass(frozen=True, slots=True, repr=False)
class AttrStmt(_Printed):
    """An annotation on `body`: key "pragma_<name>", "virtual_thread", "tensorize"; value any hashable."""

    key: str
    value: object
    body: Stmt


Stmt = Union[For, Store, Allocate, IfThenElse, LetStmt, SeqStmt, Evaluate, AttrStmt]


@dataclass(frozen=True, slots=True)
class PrimFunc:
    """A function over buffers and scalar variables: params are `Buffer`s or VAR `Expr`s."""

    name: str
    params: tuple[Union[Buffer, Expr], ...]
    body: Stmt

    def __repr__(self) -> str:
        from .printer import func_str
        return func_str(self)


# ---------------------------------------------------------------- constructors

def const(value, dtype: str | None = None) -> Expr:
    """A scalar constant; dtype defaults to int32 / float32 / bool from the Python type."""
    if dtype is None:
        dtype = "bool" if isinstance(value, bool) else "int32" if isinstance(value, int) else "float32"
    if dt.is_bool(dtype):
        value = bool(value)
    elif dt.is_int(dtype):
        value = int(value)
    else:
        value = float(value)
    return Expr(Op.CONST, dtype, (), value)


def var(name: str, dtype: str = "int32") -> Expr:
    return Expr(Op.VAR, dtype, (), name)


def convert(x, dtype: str = "int32") -> Expr:
    """An Expr from an Expr, IterVar-like object (`as_expr`) or Python number (given `dtype`)."""
    if isinstance(x, Expr):
        return x
    if isinstance(x, ExprOps):
        return x.as_expr()
    if isinstance(x, (bool, int, float)):
        if isinstance(x, float) and not dt.is_float(dtype):
            dtype = "float32"
        return const(x, dt.element(dtype) if not isinstance(x, bool) else "bool")
    raise TypeError(f"cannot use {x!r} ({type(x).__name__}) as an expression; pass an Expr, an "
                    "IterVar or a Python number")


def binary(op: Op, a: Expr, b: Expr) -> Expr:
    """`a op b`; raises TypeError when dtypes differ (insert a cast)."""
    if a.dtype != b.dtype:
        if a.op is Op.CONST and dt.lanes(b.dtype) == 1:
            a = const(a.value, b.dtype)
        elif b.op is Op.CONST and dt.lanes(a.dtype) == 1:
            b = const(b.value, a.dtype)
        else:
            raise TypeError(f"{op.name} of {a} ({a.dtype}) and {b} ({b.dtype}): operand dtypes "
                            "must match; cast one side with .astype(...)")
    if op in COMPARE:
        return Expr(op, dt.with_lanes("bool", dt.lanes(a.dtype)), (a, b))
    if op in (Op.AND, Op.OR) and not dt.is_bool(a.dtype):
        raise TypeError(f"{op.name} needs bool operands, not {a.dtype}")
    if op in (Op.FLOORDIV, Op.FLOORMOD) and not dt.is_int(a.dtype):
        raise TypeError(f"{op.name} needs integer operands, not {a.dtype}; use / for floats")
    assert op in BINARY_ARITH or op in (Op.AND, Op.OR), op
    return Expr(op, a.dtype, (a, b))


def eq(a, b) -> Expr:
    a = convert(a)
    return binary(Op.EQ, a, convert(b, a.dtype))


def ne(a, b) -> Expr:
    a = convert(a)
    return binary(Op.NE, a, convert(b, a.dtype))


def min_(a, b) -> Expr:
    a = convert(a)
    return binary(Op.MIN, a, convert(b, a.dtype))


def max_(a, b) -> Expr:
    a = convert(a)
    return binary(Op.MAX, a, convert(b, a.dtype))


def logical_and(*conds) -> Expr:
    """AND of all conditions; `true` for none."""
    out = None
    for c in conds:
        out = convert(c, "bool") if out is None else binary(Op.AND, out, convert(c, "bool"))
    return const(True) if out is None else out


def select(cond, a, b) -> Expr:
    """cond ? a : b (both sides evaluated); a and b share a dtype."""
    a = convert(a)
    b = convert(b, a.dtype)
    a, b = (convert(a, b.dtype), b) if a.op is Op.CONST else (a, b)
    if a.dtype != b.dtype:
        raise TypeError(f"select branches {a} ({a.dtype}) and {b} ({b.dtype}) must share a dtype")
    return Expr(Op.SELECT, a.dtype, (convert(cond, "bool"), a, b))


def cast(x, dtype: str) -> Expr:
    x = convert(x)
    dt.split_lanes(dtype)
    return x if x.dtype == dtype else Expr(Op.CAST, dtype, (x,))


def call(name: str, dtype: str, *args) -> Expr:
    """An intrinsic call; `name` must be in INTRINSICS."""
    if name not in INTRINSICS:
        raise ValueError(f"unknown intrinsic {name!r}; known: {', '.join(sorted(INTRINSICS))}")
    return Expr(Op.CALL, dtype, tuple(convert(a, dtype) for a in args), name)


def load(buffer: Buffer, indices, lanes_: int = 1) -> Expr:
    idx = tuple(convert(i) for i in indices)
    return Expr(Op.LOAD, dt.with_lanes(buffer.dtype, lanes_), idx, buffer)


def ramp(base, stride, lanes_: int) -> Expr:
    base = convert(base)
    return Expr(Op.RAMP, dt.with_lanes(base.dtype, lanes_), (base, convert(stride, base.dtype)), lanes_)


def broadcast(value, lanes_: int) -> Expr:
    value = convert(value)
    return Expr(Op.BROADCAST, dt.with_lanes(value.dtype, lanes_), (value,), lanes_)


def let(v: Expr, value: Expr, body: Expr) -> Expr:
    return Expr(Op.LET, body.dtype, (v, value, body))


def seq(*stmts: Stmt | None) -> Stmt:
    """A SeqStmt of the non-None statements, flattened; a single statement is returned as is."""
    flat: list[Stmt] = []
    for s in stmts:
        if s is None:
            continue
        flat.extend(s.stmts if isinstance(s, SeqStmt) else (s,))
    return flat[0] if len(flat) == 1 else SeqStmt(tuple(flat))


def is_const(e: Expr, value=None) -> bool:
    return e.op is Op.CONST and (value is None or e.arg == value)


def map_children(e: Expr, fn: Callable[[Expr], Expr]) -> Expr:
    """`e` with `fn` applied to each operand (the same object when nothing changes)."""
    new = tuple(fn(s) for s in e.src)
    if all(a is b for a, b in zip(new, e.src)):
        return e
    return Expr(e.op, e.dtype, new, e.arg)
