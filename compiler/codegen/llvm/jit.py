"""Just-in-time compilation for the host through LLVM's MCJIT.

:class:`JITModule` owns the execution engine, so the machine code stays
mapped as long as the object lives; functions taken from it must not outlive
it (``CompiledFunction`` keeps a reference).
"""
from __future__ import annotations

import llvmlite.binding as llvm

from compiler.codegen.llvm.target import Target
from compiler.runtime_native.openmp import load_libgomp


class JITModule:
    """Machine code for one optimised LLVM module, loaded into this process.

    Args:
        module: optimised, verified LLVM module (ownership passes to the engine).
        target: must be the host target.

    Raises:
        ValueError: ``target`` is a cross target (emit an object instead).
    """

    def __init__(self, module: llvm.ModuleRef, target: Target):
        if not target.is_host:
            raise ValueError(f"cannot JIT for cross target {target}; use export_object() instead")
        load_libgomp()   # GOMP_parallel & co. must resolve before finalisation
        self._machine = target.machine(jit=True)
        self._engine = llvm.create_mcjit_compiler(module, self._machine)
        self._engine.finalize_object()
        self._module = module

    def address(self, name: str) -> int:
        """Address of function ``name``.

        Raises:
            KeyError: no function of that name in the module.
        """
        addr = self._engine.get_function_address(name)
        if not addr:
            raise KeyError(f"no function {name!r} in the JIT module")
        return addr
