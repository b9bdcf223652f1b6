"""Lowered kernels -> the bytes of one host shared library.

``link_library(funcs, target, fp_contract, opt_level)`` emits every PrimFunc
into ONE LLVM module, optimises it once, emits one object and links it with
the system C compiler (``$CC`` or ``cc``, with libgomp and libm). Whole-model
builds (``compile_graph``) and the accelerator route's CPU steps both use it.
"""
from __future__ import annotations

import os
import tempfile


def link_library(funcs: list, target="llvm", fp_contract: bool = True, opt_level: int = 3) -> bytes:
    """Compile and link lowered kernels into a host shared library.

    Args:
        funcs: lowered ``compiler.tir`` PrimFuncs (distinct names); each is
            exported with the C ABI of ``compiler.codegen.llvm``. An empty list links
            a library without kernels (a model of constants and identities).
        target: a host LLVM target string or ``Target`` (``"llvm"``,
            ``"llvm -mcpu=x86-64-v2"``); shared libraries are host-only.
        fp_contract: allow fusing float multiply-add into FMA. Pass False for
            kernels that must round like numpy (quantize, requantize).
        opt_level: LLVM optimisation level 0..3.

    Returns:
        the ``.so`` file's bytes (ELF).

    Raises:
        ValueError: ``target`` is not this machine
            (cross triples get object files from ``compiler.build``; whole-model
            shared libraries are linked for the host only).
        RuntimeError: no C compiler, or the link failed.
    """
    from compiler.codegen.llvm.artifact import parse_ir
    from compiler.codegen.llvm.codegen import codegen_llvm
    from compiler.codegen.llvm.export import emit_object, link_shared
    from compiler.codegen.llvm.optimize import optimize
    from compiler.codegen.llvm.target import parse_target

    tgt = parse_target(target)
    if not tgt.is_host:
        raise ValueError(f"shared libraries are linked for the host only; target {tgt} is not "
                         "this machine (build on that machine, or use compiler.build(...)"
                         ".save_object() for a cross object file)")
    source = codegen_llvm(list(funcs), tgt, fp_contract=fp_contract)
    mod = parse_ir(source.text)
    optimize(mod, tgt.machine(), opt_level)
    obj = emit_object(mod, tgt)
    with tempfile.TemporaryDirectory(prefix="vtamod_link_") as tmp:
        path = link_shared([obj], os.path.join(tmp, "kernels.so"))
        with open(path, "rb") as f:
            return f.read()
