"""The LLVM backend (llvmlite): x86-64 hosts, AArch64, ARMv7 and wasm32.

``target`` (target strings and CPU features) -> ``codegen`` (lowered PrimFuncs ->
LLVM IR text, with ``expr``, ``loops``, ``vector``, ``intrinsics``, ``parallel``
and ``dtypes``) -> ``optimize`` -> ``export`` (objects, shared libraries) or
``jit``; ``artifact`` wraps the result for callers, ``module`` is the C ABI of
one kernel.
"""
