"""LLVM's backends registered once per process (every target machine and object emission
needs them)."""
from __future__ import annotations

import functools

import llvmlite.binding as llvm


@functools.cache
def init_llvm() -> None:
    """Register every LLVM backend and asm printer once per process.

    ``llvm.initialize()`` is gone in llvmlite 0.50 (it raises); the target,
    target-MC and asm-printer registrations are still needed before a target
    machine can be created or an object emitted.
    """
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    llvm.initialize_native_asmparser()
