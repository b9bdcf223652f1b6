"""The operator enums of the loop IR: `Op` for expressions, `ForKind` for loops."""

from enum import Enum, auto


class Op(Enum):
    """Expression operators. `Expr.src` holds the operands, `Expr.arg` the payload."""

    # leaves
    CONST = auto()      # arg: int | float | bool value
    VAR = auto()        # arg: name (unique inside a PrimFunc)
    # arithmetic (operands share one dtype)
    ADD = auto()
    SUB = auto()
    MUL = auto()
    DIV = auto()        # float division only
    FLOORDIV = auto()   # ints: rounds toward -inf (TVM floordiv)
    FLOORMOD = auto()   # ints: result has the sign of the divisor (TVM floormod)
    MIN = auto()
    MAX = auto()
    # comparisons (dtype bool, or boolxN for vectors)
    EQ = auto()
    NE = auto()
    LT = auto()
    LE = auto()
    GT = auto()
    GE = auto()
    # logic on bool
    AND = auto()
    OR = auto()
    NOT = auto()
    # other
    SELECT = auto()     # src: (cond, true_value, false_value); both values computed
    CAST = auto()       # src: (value,); dtype is the target
    CALL = auto()       # arg: intrinsic name ("exp", "sqrt", "address_of", ...); src: args
    LET = auto()        # src: (var, value, body)
    # memory
    LOAD = auto()       # arg: Buffer; src: indices (one flat offset after storage_flatten)
    # vectors
    RAMP = auto()       # src: (base, stride); arg: lanes -> base + stride*[0..lanes)
    BROADCAST = auto()  # src: (value,); arg: lanes
    # tensor-expression level only; `compiler.tir.lower` removes them
    TENSOR_READ = auto()  # arg: te.Tensor; src: indices
    REDUCE = auto()       # arg: (combiner name, tuple of reduce IterVars); src: (body, condition)


BINARY_ARITH = frozenset({Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.FLOORDIV, Op.FLOORMOD, Op.MIN, Op.MAX})
COMPARE = frozenset({Op.EQ, Op.NE, Op.LT, Op.LE, Op.GT, Op.GE})
COMMUTATIVE = frozenset({Op.ADD, Op.MUL, Op.MIN, Op.MAX, Op.EQ, Op.NE, Op.AND, Op.OR})


class ForKind(Enum):
    """How a `For` loop runs."""

    SERIAL = "serial"
    PARALLEL = "parallel"        # iterations on CPU threads
    VECTORIZED = "vectorized"    # iterations as SIMD lanes (`vectorize` pass)
    UNROLLED = "unrolled"        # iterations copied out (`unroll` pass)
