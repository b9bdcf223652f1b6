"""Math functions for the LLVM backend: LLVM intrinsics or libm calls.

``call_math(builder, module, name, args)`` emits ``name`` (``exp``, ``log``,
``sqrt``, ``tanh``, ...) on float scalars or vectors. Functions with an LLVM
intrinsic (``llvm.exp.v16f32`` ...) use it, so LLVM may vectorise or
constant-fold them; the others call libm per lane (``tanhf``). Vector
intrinsics without a vector library are split into per-lane libm calls by
LLVM itself.
"""
from __future__ import annotations

from llvmlite import ir

from compiler.codegen.llvm.vector import extract_lanes, pack_lanes

# name -> number of arguments; all have an llvm.<name>.* intrinsic.
INTRINSICS = {"exp": 1, "exp2": 1, "log": 1, "log2": 1, "log10": 1, "sqrt": 1, "sin": 1,
              "cos": 1, "fabs": 1, "floor": 1, "ceil": 1, "trunc": 1, "round": 1,
              "roundeven": 1, "pow": 2, "minnum": 2, "maxnum": 2, "fma": 3, "tanh": 1, "tan": 1}
# name -> number of arguments; called in libm per lane (no LLVM intrinsic).
LIBM = {"atan": 1, "asin": 1, "acos": 1, "sinh": 1, "cosh": 1, "erf": 1, "atan2": 2}
# "round" is numpy's rint (half to even), as the reference interpreter.
ALIASES = {"abs": "fabs", "round": "roundeven", "nearbyint": "roundeven"}

MATH_FUNCTIONS = frozenset(INTRINSICS) | frozenset(LIBM) | frozenset(ALIASES)


def _suffix(ty: ir.Type) -> str:
    if isinstance(ty, ir.VectorType):
        return f"v{ty.count}{_suffix(ty.element)}"
    return {ir.HalfType: "f16", ir.FloatType: "f32", ir.DoubleType: "f64"}[type(ty)]


def call_math(builder: ir.IRBuilder, module: ir.Module, name: str, args: "list[ir.Value]") -> ir.Value:
    """Emit math function ``name`` on float ``args`` (all of one scalar or vector type).

    Raises:
        ValueError: ``name`` is not a known math function, or the argument
            count is wrong.
    """
    name = ALIASES.get(name, name)
    arity = INTRINSICS.get(name, LIBM.get(name))
    if arity is None:
        raise ValueError(f"math function must be one of {sorted(MATH_FUNCTIONS)}, not {name!r}")
    if len(args) != arity:
        raise ValueError(f"{name} takes {arity} argument(s), got {len(args)}")
    ty = args[0].type
    if name in INTRINSICS:
        fname = f"llvm.{name}.{_suffix(ty)}"
        fn = module.globals.get(fname) or ir.Function(module, ir.FunctionType(ty, [ty] * arity), fname)
        return builder.call(fn, args)
    scalar = ty.element if isinstance(ty, ir.VectorType) else ty
    if isinstance(scalar, ir.HalfType):
        wide = [builder.fpext(a, ir.VectorType(ir.FloatType(), ty.count)
                              if isinstance(ty, ir.VectorType) else ir.FloatType()) for a in args]
        return builder.fptrunc(call_math(builder, module, name, wide), ty)
    cname = name + ("f" if isinstance(scalar, ir.FloatType) else "")
    fn = module.globals.get(cname) or ir.Function(module, ir.FunctionType(scalar, [scalar] * arity), cname)
    if not isinstance(ty, ir.VectorType):
        return builder.call(fn, args)
    per_lane = [extract_lanes(builder, a, ty.count) for a in args]
    return pack_lanes(builder, [builder.call(fn, list(lane)) for lane in zip(*per_lane)])
