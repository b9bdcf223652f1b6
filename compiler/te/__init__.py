"""Tensor expressions and schedules (TVM `te`): declare with `placeholder`/`compute`,
transform with `create_schedule(...)[tensor].split(...)` etc., lower with
`compiler.tir.lower`."""

from .schedule import Schedule, ScheduleError, Stage, create_schedule
from .tensor import (ComputeOp, IterVar, PlaceholderOp, Tensor, cast, ceil, compute, erf, exp, fabs,
                     floor, identity, if_then_else, log, max, maximum, min, minimum, placeholder,
                     power, reduce_axis, rsqrt, sigmoid, sqrt, sum, tanh, thread_axis)
from .tensorize import BufferView, TensorIntrin, decl_tensor_intrin

__all__ = ["BufferView", "ComputeOp", "IterVar", "PlaceholderOp", "Schedule", "ScheduleError",
           "Stage", "Tensor", "TensorIntrin", "cast", "ceil", "compute", "create_schedule",
           "decl_tensor_intrin", "erf", "exp", "fabs", "floor", "identity", "if_then_else", "log",
           "max", "maximum", "min", "minimum", "placeholder", "power", "reduce_axis", "rsqrt",
           "sigmoid", "sqrt", "sum", "tanh", "thread_axis"]
