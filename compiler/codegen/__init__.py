"""Code generation backends.

LLVM (llvmlite; x86-64 hosts, AArch64, ARMv7, wasm32): ``codegen_llvm``
(lowered PrimFuncs -> LLVM IR text) -> ``BuiltModule`` (optimise; JIT on the
host) -> call it, ``save_object``, ``export_library``; ``load_library``
reopens a library. ``compiler.build`` drives this pipeline.

The names below are imported lazily, so importing another backend
(``compiler.codegen.cuda``, ``compiler.codegen.opencl``) does not load LLVM.
"""
import importlib

_LAZY = {
    "BuiltModule": "artifact", "LibraryModule": "artifact", "load_library": "artifact",
    "LLVMSource": "llvm", "codegen_llvm": "llvm",
    "ArgSpec": "module", "CompiledFunction": "module",
    "AARCH64": "target", "ARMV7": "target", "WASM32": "target", "Target": "target",
    "host_target": "target", "parse_target": "target",
}


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(f"compiler.codegen.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'compiler.codegen' has no attribute {name!r}")


__all__ = sorted(_LAZY)
