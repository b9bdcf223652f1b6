"""Permission to use AMX tiles: Linux's ``arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)``.

Linux (5.16+) keeps the AMX tile data state off until a process asks for it; the first
``tileloadd`` / ``tdpbusd`` of a process that has not asked dies with SIGILL. The loader
asks once per process (ctypes ``syscall``, no LLVM) for modules whose manifest features
include ``+amx-tile`` (:func:`needs_amx`). Numbers from ``arch/x86/include/uapi/asm/prctl.h``
and ``asm/fpu/types.h``.
"""
from __future__ import annotations

import ctypes
import functools
import os
import platform

from .errors import RuntimeModuleError

SYS_ARCH_PRCTL = 158            # x86-64 syscall number of arch_prctl
ARCH_REQ_XCOMP_PERM = 0x1023
XFEATURE_XTILEDATA = 18


def needs_amx(cpu: "dict | None") -> bool:
    """Whether a manifest's ``cpu`` entry (``{"triple", "cpu", "features"}``) uses AMX tiles."""
    return bool(cpu) and "+amx-tile" in cpu.get("features", [])


def _syscall():
    libc = ctypes.CDLL(None, use_errno=True)
    fn = libc.syscall
    fn.restype = ctypes.c_long
    return fn


@functools.cache
def request_amx(where: str = "module", syscall=None) -> None:
    """Ask the kernel for the AMX tile data state for this process (once; later calls return).

    Args:
        where: what needs it, for the message (a module path).
        syscall: ``syscall(number, *args) -> int`` (default libc's; tests hand in another).

    Raises:
        RuntimeModuleError: not x86-64 Linux, or the kernel refused (its errno named:
            EINVAL on kernels before 5.16 or CPUs without AMX, EPERM when a
            seccomp/sandbox policy forbids it), with what to recompile for instead.
    """
    if syscall is None and (platform.system() != "Linux" or platform.machine() != "x86_64"):
        raise RuntimeModuleError(f"{where}: uses AMX tiles, which need x86-64 Linux (this is "
                                 f"{platform.system()} {platform.machine()}); recompile without "
                                 "AMX, e.g. --target 'llvm -mcpu=x86-64-v4'")
    call = syscall or _syscall()
    if call(SYS_ARCH_PRCTL, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) != 0:
        err = ctypes.get_errno()
        name = os.strerror(err) if err else "refused"
        raise RuntimeModuleError(
            f"{where}: the kernel refused AMX tile data for this process "
            f"(arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA): errno {err}, {name}); it needs "
            "Linux 5.16+ on a CPU with AMX and no sandbox forbidding it; or recompile without "
            "AMX, e.g. --target 'llvm -mcpu=x86-64-v4'")
