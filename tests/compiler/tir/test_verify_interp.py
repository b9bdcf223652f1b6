"""The verifier's checks and the reference interpreter on hand-written IR."""

import numpy as np
import pytest

from compiler.tir import interp, ir
from compiler.tir.ops import ForKind, Op
from compiler.tir.verify import IRError, verify

i = ir.var("i")
A = ir.Buffer("A", "float32", (4,))


def loop(body, n=4, v=i):
    return ir.For(v, ir.const(0), ir.const(n), ForKind.SERIAL, body)


@pytest.mark.parametrize("body,msg", [
    (ir.Store(A, ir.const(1.0), (ir.var("j"),)), "variable 'j' is not bound"),
    (ir.Store(ir.Buffer("B", "float32", (4,)), ir.const(1.0), (ir.const(0),)),
     "buffer 'B' is neither a param nor allocated here"),
    (loop(loop(ir.Store(A, ir.const(1.0), (i,)))), "loop variable 'i' is already bound"),
    (ir.Store(A, ir.const(1), (ir.const(0),)), "access to float32 buffer 'A' with 1 lanes has dtype int32"),
    (ir.IfThenElse(ir.const(1), ir.Evaluate(ir.const(0))), "condition 1 has dtype int32, not bool"),
    (ir.Store(A, ir.Expr(Op.ADD, "float32", (ir.const(1.0), ir.const(1))), (ir.const(0),)),
     "ADD operands have dtypes float32 and int32"),
    (ir.Store(A, ir.load(A, [ir.ramp(0, 1, 4)], 4), (ir.const(0),)),
     "access to float32 buffer 'A' with 1 lanes has dtype float32x4"),
])
def test_verifier_rejects(body, msg):
    with pytest.raises(IRError, match=msg):
        verify(ir.PrimFunc("f", (A,), body))


def test_verifier_flat_mode_wants_one_index():
    B = ir.Buffer("B", "float32", (2, 2))
    f = ir.PrimFunc("f", (B,), ir.Store(B, ir.const(0.0), (ir.const(0), ir.const(1))))
    verify(f)
    with pytest.raises(IRError, match="access to 'B' has 2 indices after flattening"):
        verify(f, flat=True)


def test_interpreter_runs_loops_vectors_lets_and_selects():
    out = np.zeros(8, "float32")
    B = ir.Buffer("B", "float32", (8,))
    x = ir.var("x")
    body = ir.seq(
        ir.Store(B, ir.broadcast(ir.const(2.0), 4), (ir.ramp(0, 1, 4),)),
        loop(ir.LetStmt(x, i + 4, ir.Store(B, ir.select(i < 2, ir.cast(x, "float32"), ir.const(-1.0)), (x,)))))
    interp.run(ir.PrimFunc("f", (B,), body), out)
    np.testing.assert_array_equal(out, [2, 2, 2, 2, 4, 5, -1, -1])


def test_interpreter_floor_semantics_and_int_wrap():
    C = ir.Buffer("C", "int8", (3,))
    out = np.zeros(3, "int8")
    body = ir.seq(ir.Store(C, ir.cast(ir.const(-7) // 2, "int8"), (ir.const(0),)),
                  ir.Store(C, ir.cast(ir.const(-7) % 2, "int8"), (ir.const(1),)),
                  ir.Store(C, ir.const(100, "int8") + ir.const(100, "int8"), (ir.const(2),)))
    interp.run(ir.PrimFunc("f", (C,), body), out)
    np.testing.assert_array_equal(out, [-4, 1, -56])


def test_interpreter_out_of_bounds_and_argument_errors():
    f = ir.PrimFunc("f", (A,), loop(ir.Store(A, ir.const(0.0), (i + 1,))))
    with pytest.raises(IndexError, match="access to 'A' at element offset 4 is outside its 4 elements"):
        interp.run(f, np.zeros(4, "float32"))
    with pytest.raises(ValueError, match="argument 'A' must be a C-contiguous float32 array of 4 elements"):
        interp.run(f, np.zeros(4, "float64"))


def test_interpreter_uninitialized_allocation_is_nan():
    T = ir.Buffer("T", "float32", (2,), scope="local")
    f = ir.PrimFunc("f", (A,), ir.Allocate(T, ir.Store(A, ir.load(T, [ir.const(1)]), (ir.const(0),))))
    out = np.zeros(4, "float32")
    interp.run(f, out)
    assert np.isnan(out[0])
