"""Tensor expressions and schedules (TVM `te`).

Declare, schedule, lower::

    from compiler import te, tir

    A = te.placeholder((64, 32), "float32", name="A")
    B = te.placeholder((32, 48), "float32", name="B")
    k = te.reduce_axis(32, name="k")
    C = te.compute((64, 48), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")

    s = te.create_schedule(C)
    i, j = C.op.axis
    io, jo, ii, ji = s[C].tile(i, j, 8, 8)      # split both, order (io, jo, ii, ji)
    ko, ki = s[C].split(k, factor=4)
    s[C].reorder(io, jo, ko, ki, ii, ji)
    s[C].vectorize(ji)
    s[C].parallel(io)
    func = tir.lower(s, [A, B, C], "matmul")    # a PrimFunc, see compiler.tir.ir
"""

from .schedule import Schedule, ScheduleError, Stage, create_schedule
from .tensor import (ComputeOp, IterVar, PlaceholderOp, Tensor, cast, ceil, compute, erf, exp, fabs,
                     floor, identity, if_then_else, log, max, maximum, min, minimum, placeholder,
                     power, prod, reduce_axis, rsqrt, sigmoid, sqrt, sum, tanh, tensors_read, thread_axis)
from .tensorize import BufferView, Layout, TensorIntrin, decl_tensor_intrin

__all__ = ["BufferView", "ComputeOp", "IterVar", "Layout", "PlaceholderOp", "Schedule", "ScheduleError",
           "Stage", "Tensor", "TensorIntrin", "cast", "ceil", "compute", "create_schedule",
           "decl_tensor_intrin", "erf", "exp", "fabs", "floor", "identity", "if_then_else", "log",
           "max", "maximum", "min", "minimum", "placeholder", "power", "prod", "reduce_axis", "rsqrt",
           "sigmoid", "sqrt", "sum", "tanh", "tensors_read", "thread_axis"]
