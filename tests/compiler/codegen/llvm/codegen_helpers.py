"""Hand-built PrimFuncs for codegen tests (the lowered form of compiler/tir/ir.py)."""
from __future__ import annotations

from compiler.codegen import BuiltModule, codegen_llvm, host_target
from compiler.tir import ir as T
from compiler.tir.ops import ForKind


def compile_funcs(*funcs, **kwargs) -> BuiltModule:
    """JIT ``funcs`` for the host."""
    return BuiltModule(codegen_llvm(list(funcs), host_target(), **kwargs))


def elementwise(name: str, n: int, in_dtypes, out_dtype: str, fn, kind=ForKind.SERIAL) -> T.PrimFunc:
    """``out[i] = fn(in0[i], in1[i], ...)`` for i < n, one loop of ``kind``."""
    ins = [T.Buffer(f"x{k}", d, (n,)) for k, d in enumerate(in_dtypes)]
    out = T.Buffer("out", out_dtype, (n,))
    i = T.var("i")
    body = T.For(i, T.const(0), T.const(n), kind,
                 T.Store(out, fn(*[T.load(b, [i]) for b in ins]), (i,)))
    return T.PrimFunc(name, (*ins, out), body)
