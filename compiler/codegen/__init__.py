"""Code generation backends.

LLVM (llvmlite; x86-64 hosts, AArch64, ARMv7, wasm32): ``codegen_llvm``
(lowered PrimFuncs -> LLVM IR text) -> ``BuiltModule`` (optimise; JIT on the
host) -> call it, ``save_object``, ``export_library``; ``load_library``
reopens a library. ``compiler.build`` drives this pipeline.

The names below are imported lazily, so importing another backend
(``compiler.codegen.gpu.cuda``, ``compiler.codegen.gpu.opencl``) does not load LLVM.
"""
import importlib

_LAZY = {
    "BuiltModule": "llvm.artifact", "LibraryModule": "llvm.artifact", "load_library": "llvm.artifact",
    "LLVMSource": "llvm.codegen", "codegen_llvm": "llvm.codegen",
    "ArgSpec": "llvm.module", "CompiledFunction": "llvm.module",
    "AARCH64": "llvm.target", "ARMV7": "llvm.target", "WASM32": "llvm.target", "Target": "llvm.target",
    "host_target": "llvm.target", "parse_target": "llvm.target",
}


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(f"compiler.codegen.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'compiler.codegen' has no attribute {name!r}")


__all__ = sorted(_LAZY)
