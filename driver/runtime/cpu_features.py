"""CPU features a module needs vs. those this machine has (``/proc/cpuinfo``), without LLVM.

A CPU module's manifest records the code features (``vta_hw.host_cpu.CODE_FEATURES``:
``+avx2``, ``+avx512f``, ...) its kernels were compiled with; the host's are the flags
the operating system lists (``vta_hw.host_cpu.read_os_flags``), the same view the
compiler builds "this machine" from, so a module built here loads here. System features
(RDSEED, XSAVES, ...) an older manifest may list are not needs.
"""
from __future__ import annotations

import platform

from vta_hw import host_cpu

from .errors import RuntimeModuleError

#: the first word of an LLVM triple -> what ``platform.machine()`` says on that machine
#: (wasm32: none; its modules run in a WebAssembly runtime)
_MACHINES = {"x86_64": ("x86_64", "amd64"), "aarch64": ("aarch64", "arm64"),
             "armv7": ("armv7l", "armv7"), "wasm32": ()}


def _elsewhere(arch: str, executor: str) -> str:
    """How to run a module built for another machine (docs/deploy.md)."""
    if arch == "wasm32":
        return ("WebAssembly runs in Node or a browser: compile with --executor aot --wasm "
                "FILE.wasm and load it with driver/web/vta_runtime.mjs (docs/deploy.md)")
    if executor == "aot":
        return ("run it on that machine: build its model.o into a program there "
                "(docs/deploy.md)")
    return "run it on that machine: link its kernels.o there (docs/deploy.md)"


def host_cpu_flags() -> frozenset:
    """This machine's CPU flags as its kernel lists them (``vta_hw.host_cpu.read_os_flags``;
    empty where there is no ``/proc/cpuinfo``: then nothing is checked). Tests monkeypatch
    this function to stand in for other machines."""
    return host_cpu.read_os_flags()


def host_machine() -> str:
    """This machine's architecture as ``platform.machine()`` says it, lower case (tests
    monkeypatch it, with :func:`host_cpu_flags`)."""
    return platform.machine().lower()


def cpu_problem(cpu: "dict | None", where: str, executor: str = "graph") -> "str | None":
    """Why this machine cannot run kernels compiled for ``cpu`` (a manifest's ``{"triple",
    "cpu", "features"}``; None: no CPU kernels), as one line naming the first missing
    feature, the machine the kernels were built for and a target that runs here; None
    when it can. ``executor`` ("graph" or "aot", the manifest's) picks the advice for a
    module built for another architecture."""
    if not cpu:
        return None
    arch = cpu.get("triple", "").split("-")[0]
    here = host_machine()
    if arch in _MACHINES and here not in _MACHINES[arch]:
        return (f"{where}: kernels compiled for {arch} ({cpu.get('triple')}), this machine is "
                f"{here}; {_elsewhere(arch, executor)}, or recompile it here with --target llvm")
    flags = host_cpu_flags()
    missing = host_cpu.missing(cpu.get("features", []), flags)
    if not missing:
        return None
    level = host_cpu.best_level(flags) if arch == "x86_64" else "generic"
    more = ""
    if len(missing) > 1:
        more = (f" (and {len(missing) - 1} more: {', '.join(missing[1:4])}"
                + (", ..." if len(missing) > 4 else "") + ")")
    return (f"{where}: needs CPU feature {missing[0]}, which this machine lacks{more}; it was "
            f"built for {cpu.get('cpu', '?')} ({cpu.get('triple', '?')}); a target that runs "
            f"here: --target 'llvm -mcpu={level}' (accelerator modules: --cpu-target "
            f"'llvm -mcpu={level}'), or recompile on this machine with --target llvm")


def check_cpu(cpu: "dict | None", where: str, executor: str = "graph") -> None:
    """Raise unless this machine can run kernels compiled for ``cpu`` (see
    :func:`cpu_problem`).

    Raises:
        RuntimeModuleError: another architecture, or a code feature the host lacks (the
            message names the first one, the machine built for and a target that runs here).
    """
    problem = cpu_problem(cpu, where, executor)
    if problem:
        raise RuntimeModuleError(problem)
