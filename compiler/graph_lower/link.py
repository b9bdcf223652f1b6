"""Lowered kernels -> the kernel file of a module: a host shared library or a cross object.

Every PrimFunc goes into ONE LLVM module, optimised once and emitted as one
object. For the host, :func:`link_library` links it with the system C compiler
(``$CC`` or ``cc``, with libgomp and libm) into ``kernels.so``; for a cross
triple (AArch64, ARMv7, wasm32) :func:`kernel_files` keeps the relocatable
object as ``kernels.o``, to be linked for (or on) that machine. Whole-model
builds (``compile_graph``) and the accelerator route's CPU steps use them.
"""
from __future__ import annotations

import os
import tempfile


def compile_object(funcs: list, target="llvm", fp_contract: bool = True,
                   opt_level: int = 3, entry_ir: "str | None" = None,
                   data_ir: "str | None" = None, exports: "list[str] | None" = None) -> bytes:
    """One relocatable object (PIC; ELF, or a wasm object for wasm32) of lowered kernels.

    Args:
        funcs: lowered ``compiler.tir`` PrimFuncs (distinct names); each is exported
            with the C ABI of ``compiler.codegen.llvm``. An empty list gives an object
            without kernels (a model of constants and identities).
        target: an LLVM target string or ``Target`` (host or cross).
        fp_contract: allow fusing float multiply-add into FMA. Pass False for
            kernels that must round like numpy (quantize, requantize).
        opt_level: LLVM optimisation level 0..3.
        entry_ir: LLVM IR text linked into the kernels' module before optimisation (the
            AOT executor's entry function, ``aot.py``), or None.
        data_ir: LLVM IR text linked in after optimisation (constant data that the
            optimiser need not see: the AOT module's parameters), or None.
        exports: None (every kernel stays a global symbol), or the only functions and
            variables of the optimised module that do: the others become internal (local
            to the object), so that two such objects link into one program without a
            clash. ``data_ir``'s constants, linked in after, keep their own linkage.

    Raises:
        ValueError: a bad target string.
    """
    from compiler.codegen.llvm.artifact import parse_ir
    from compiler.codegen.llvm.codegen import codegen_llvm
    from compiler.codegen.llvm.export import emit_object
    from compiler.codegen.llvm.optimize import optimize
    from compiler.codegen.llvm.target import parse_target

    tgt = parse_target(target)
    source = codegen_llvm(list(funcs), tgt, fp_contract=fp_contract)
    mod = parse_ir(source.text)
    if entry_ir is not None:
        mod.link_in(parse_ir(entry_ir))
    optimize(mod, tgt.machine(), opt_level)
    if exports is not None:
        _internalize(mod, set(exports))
    if data_ir is not None:
        mod.link_in(parse_ir(data_ir))
    return emit_object(mod, tgt)


def _internalize(mod, keep: set) -> None:
    """Give every definition of ``mod`` (an llvmlite ``ModuleRef``) not named in ``keep``
    internal linkage."""
    import llvmlite.binding as llvm

    for value in (*mod.functions, *mod.global_variables):
        if not value.is_declaration and value.name not in keep:
            value.linkage = llvm.Linkage.internal


def link_library(funcs: list, target="llvm", fp_contract: bool = True, opt_level: int = 3,
                 entry_ir: "str | None" = None, data_ir: "str | None" = None,
                 exports: "list[str] | None" = None, soname: "str | None" = None) -> bytes:
    """Compile and link lowered kernels into a host shared library (arguments as
    :func:`compile_object`; ``soname``: the library's ``DT_SONAME``, or None for none).

    Returns:
        the ``.so`` file's bytes (ELF).

    Raises:
        ValueError: ``target`` is not this machine (use :func:`kernel_files` or
            :func:`compile_object` for a cross triple).
        RuntimeError: no C compiler, or the link failed.
    """
    from compiler.codegen.llvm.export import link_shared
    from compiler.codegen.llvm.target import parse_target

    tgt = parse_target(target)
    if not tgt.is_host:
        raise ValueError(f"shared libraries are linked for the host only; target {tgt} is not "
                         "this machine (kernel_files() gives a cross object, kernels.o)")
    obj = compile_object(funcs, tgt, fp_contract, opt_level, entry_ir, data_ir, exports)
    with tempfile.TemporaryDirectory(prefix="vtamod_link_") as tmp:
        path = link_shared([obj], os.path.join(tmp, "kernels.so"), soname=soname)
        with open(path, "rb") as f:
            return f.read()


def kernel_files(funcs: list, target="llvm", fp_contract: bool = True,
                 opt_level: int = 3) -> dict:
    """A module's kernel file: ``{"kernels.so": bytes}`` for the host, ``{"kernels.o": bytes}``
    (the relocatable object, undefined references to libgomp and libm left to the link)
    for a cross triple. Arguments and errors as :func:`link_library`."""
    from compiler.codegen.llvm.target import parse_target

    tgt = parse_target(target)
    if tgt.is_host:
        return {"kernels.so": link_library(funcs, tgt, fp_contract, opt_level)}
    return {"kernels.o": compile_object(funcs, tgt, fp_contract, opt_level)}
