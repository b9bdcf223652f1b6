"""CPU features a module needs vs. those this machine has (``/proc/cpuinfo``), without LLVM.

A CPU module's manifest records the ``"+"`` features its kernels were compiled with
(LLVM names: ``+avx2``, ``+avx512f``, ...). The host's come from the ``flags`` line
(x86-64) or ``Features`` line (AArch64) of ``/proc/cpuinfo``, through
:data:`CPUINFO_NAME`, LLVM name -> cpuinfo name (the two spell many features
differently: ``sse3`` is ``pni``, ``avx512vnni`` is ``avx512_vnni``). Features
with no known cpuinfo name are recorded in the manifest but not checked.
"""
from __future__ import annotations

import functools
import platform

from .errors import RuntimeModuleError

#: LLVM feature name -> /proc/cpuinfo flag (x86-64 from Linux's cpufeatures.h names,
#: AArch64 from its hwcap names). ``xsaves`` is left out: XSAVES is a supervisor-only
#: instruction no user-mode kernel can use, LLVM reports it on hosts whose hypervisor hides
#: it from the guest's cpuinfo (AMD EPYC VMs), and checking it refused modules built there.
CPUINFO_NAME = {
    # x86-64: baseline and SSE
    "cmov": "cmov", "cx8": "cx8", "fxsr": "fxsr", "mmx": "mmx", "sse": "sse", "sse2": "sse2",
    "sse3": "pni", "ssse3": "ssse3", "sse4.1": "sse4_1", "sse4.2": "sse4_2", "sse4a": "sse4a",
    "cx16": "cx16", "popcnt": "popcnt", "sahf": "lahf_lm", "movbe": "movbe", "lzcnt": "abm",
    # AVX and friends
    "avx": "avx", "avx2": "avx2", "fma": "fma", "f16c": "f16c", "bmi": "bmi1", "bmi2": "bmi2",
    "avxvnni": "avx_vnni",
    # AVX-512
    "avx512f": "avx512f", "avx512cd": "avx512cd", "avx512bw": "avx512bw",
    "avx512dq": "avx512dq", "avx512vl": "avx512vl", "avx512ifma": "avx512ifma",
    "avx512vbmi": "avx512vbmi", "avx512vbmi2": "avx512_vbmi2", "avx512vnni": "avx512_vnni",
    "avx512bitalg": "avx512_bitalg", "avx512vpopcntdq": "avx512_vpopcntdq",
    "avx512bf16": "avx512_bf16", "avx512fp16": "avx512_fp16",
    # AMX
    "amx-tile": "amx_tile", "amx-int8": "amx_int8", "amx-bf16": "amx_bf16",
    "amx-fp16": "amx_fp16",
    # crypto, bit manipulation, state
    "aes": "aes", "pclmul": "pclmulqdq", "sha": "sha_ni", "vaes": "vaes",
    "vpclmulqdq": "vpclmulqdq", "gfni": "gfni", "adx": "adx", "rdrnd": "rdrand",
    "rdseed": "rdseed", "xsave": "xsave", "xsaveopt": "xsaveopt", "xsavec": "xsavec",
    "fsgsbase": "fsgsbase", "clflushopt": "clflushopt", "clwb": "clwb",
    "clzero": "clzero", "prfchw": "3dnowprefetch", "rdpid": "rdpid",
    # AArch64 (Features line)
    "neon": "asimd", "fp-armv8": "fp", "crc": "crc32", "sha2": "sha2", "dotprod": "asimddp",
    "fullfp16": "asimdhp", "sve": "sve", "sve2": "sve2", "i8mm": "i8mm", "bf16": "bf16",
}

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


@functools.cache
def host_cpu_flags() -> frozenset:
    """This machine's CPU flags from ``/proc/cpuinfo`` (empty where there is none: then
    nothing is checked). Tests monkeypatch this function."""
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read()
    except OSError:
        return frozenset()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            return frozenset(value.split())
    return frozenset()


def missing_features(features, flags) -> list:
    """The LLVM features (``"+avx512f"``) among ``features`` whose cpuinfo flag is not in
    ``flags``; features without a known cpuinfo name are skipped."""
    out = []
    for f in features:
        name = f.lstrip("+")
        flag = CPUINFO_NAME.get(name)
        if flag is not None and flag not in flags:
            out.append(name)
    return out


def check_cpu(cpu: "dict | None", where: str, executor: str = "graph") -> None:
    """Raise unless this machine can run kernels compiled for ``cpu`` (a manifest's
    ``{"triple", "cpu", "features"}``; None: no CPU kernels). ``executor`` ("graph" or
    "aot", the manifest's) picks the advice for a module built for another machine.

    Raises:
        RuntimeModuleError: another architecture, or a needed feature the host lacks
            (the message names the first one and the target to recompile with).
    """
    if not cpu:
        return
    arch = cpu.get("triple", "").split("-")[0]
    here = platform.machine().lower()
    if arch in _MACHINES and here not in _MACHINES[arch]:
        raise RuntimeModuleError(f"{where}: kernels compiled for {arch} ({cpu.get('triple')}), "
                                 f"this machine is {here}; {_elsewhere(arch, executor)}, or "
                                 "recompile it here with --target llvm")
    flags = host_cpu_flags()
    if not flags:
        return
    missing = missing_features(cpu.get("features", []), flags)
    if missing:
        base = "x86-64-v2" if arch == "x86_64" else "generic"
        raise RuntimeModuleError(
            f"{where}: needs CPU feature {missing[0]}, which this machine lacks"
            + (f" (and {len(missing) - 1} more: {', '.join(missing[1:4])}"
               + (", ..." if len(missing) > 4 else "") + ")" if len(missing) > 1 else "")
            + f"; recompile on this machine, or for older CPUs with --target 'llvm -mcpu={base}' "
            f"(accelerator modules: --cpu-target 'llvm -mcpu={base}')")
