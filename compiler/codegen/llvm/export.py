"""Deployment artifacts: object files, assembly and host shared libraries.

Objects are emitted for any target LLVM supports (ELF for x86-64, AArch64,
ARMv7; a wasm object for wasm32). Shared libraries are linked for the host
with the system C compiler (``$CC``, else ``cc``) and libgomp.
"""
from __future__ import annotations

import os
import shutil
import tempfile

import llvmlite.binding as llvm

from compiler.codegen.llvm.target import Target
from vta_hw.tool import run_tool

#: Wall-time limit of one link, seconds (``vta_hw.tool``; ``$VTA_TOOL_TIMEOUT_S`` replaces it).
LINK_LIMIT_S = 300.0


def emit_object(module: llvm.ModuleRef, target: Target) -> bytes:
    """Relocatable object code (PIC) of ``module`` for ``target``."""
    return target.machine().emit_object(module)


def emit_assembly(module: llvm.ModuleRef, target: Target) -> str:
    """Assembly text of ``module`` for ``target`` (for inspection and tests)."""
    return target.machine().emit_assembly(module)


def link_shared(objects: "list[bytes]", path: str, cc: "str | None" = None,
                soname: "str | None" = None) -> str:
    """Link object files into the shared library ``path`` (links ``-lgomp -lm``).

    Args:
        objects: host object files, as bytes.
        path: output ``.so`` path; its folder must exist.
        cc: C compiler driver; default ``$CC`` or ``cc``.
        soname: the library's ``DT_SONAME`` (``-Wl,-soname,...``: the name a program
            linked against it records and looks for at run time), or None for none.

    Returns:
        ``path``.

    Raises:
        RuntimeError: no C compiler found, or linking failed (the message
            holds the compiler's output).
        vta_hw.tool.ToolTimeout: (a RuntimeError) the link ran past ``LINK_LIMIT_S``.
    """
    cc = cc or os.environ.get("CC", "cc")
    if shutil.which(cc) is None:
        raise RuntimeError(f"linking a shared library needs a C compiler; {cc!r} is not on PATH "
                           "(set CC or install gcc)")
    with tempfile.TemporaryDirectory(prefix="compiler_link_") as tmp:
        names = []
        for i, obj in enumerate(objects):
            name = os.path.join(tmp, f"part{i}.o")
            with open(name, "wb") as f:
                f.write(obj)
            names.append(name)
        cmd = [cc, "-shared", "-fPIC", "-o", path, *names, "-lgomp", "-lm"]
        if soname is not None:
            cmd.append(f"-Wl,-soname,{soname}")
        proc = run_tool(cmd, timeout_s=LINK_LIMIT_S, what=f"{cc} (linking {os.path.basename(path)})",
                        capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"linking {path} failed ({' '.join(cmd)}):\n{proc.stderr}")
    return path
