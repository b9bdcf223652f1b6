"""The host-CPU half of the module contract: which CPU features change generated code, what
the operating system calls them, and the x86-64 micro-architecture levels.

The compiler (``compiler/codegen/llvm/target.py``) and the runtime (``driver/runtime``)
both read this one table, so a module is compiled for exactly the features the loader
will check, and checked against the same view of the host:

- **The host's usable features** are those LLVM's host query reports (CPUID on x86-64)
  that the operating system also lists: the ``flags`` line of ``/proc/cpuinfo`` on
  x86-64 Linux, the ``Features`` line (the kernel's hwcaps) on AArch64. Where the two
  disagree the kernel's view wins: Linux hides RDSEED on AMD Zen 5 (an erratum), some
  hypervisors hide XSAVES or AVX-512, and code using them would fault or be refused.
  :func:`usable` turns LLVM's view into that one.
- **Code features** (:data:`CODE_FEATURES`) are those whose use changes the instructions
  LLVM emits for our kernels: the SSE/AVX/AVX-512 families, FMA, F16C, BMI, LZCNT,
  POPCNT, MOVBE, GFNI, VNNI, BF16, FP16, AMX; NEON, SVE, dotprod, i8mm, bf16 on AArch64.
  A module's manifest records these alone, and the loader checks these alone; system
  features (RDSEED, RDRAND, XSAVE*, FSGSBASE, CLWB, CET, ...) never appear in our code.
- **Levels** (:data:`X86_LEVELS`): the x86-64 psABI micro-architecture levels
  (x86-64-v2/v3/v4, "x86-64 psABI" 1.0, section 3.1.1, as LLVM's ``-mcpu=x86-64-vN``
  defines them), used to name a target that runs on a given host.

Pure Python: the runtime imports this without LLVM.
"""
from __future__ import annotations

import functools

#: LLVM feature name -> the operating system's name for it (x86-64: Linux's
#: ``arch/x86/include/asm/cpufeatures.h`` names as ``/proc/cpuinfo`` prints them; AArch64:
#: the hwcap names of its ``Features`` line). Features LLVM knows by no OS name are not
#: filtered (the OS cannot hide what it does not list).
OS_NAME = {
    # x86-64: baseline and SSE
    "cmov": "cmov", "cx8": "cx8", "fxsr": "fxsr", "mmx": "mmx", "sse": "sse", "sse2": "sse2",
    "sse3": "pni", "ssse3": "ssse3", "sse4.1": "sse4_1", "sse4.2": "sse4_2", "sse4a": "sse4a",
    "cx16": "cx16", "popcnt": "popcnt", "sahf": "lahf_lm", "movbe": "movbe", "lzcnt": "abm",
    # AVX and friends
    "avx": "avx", "avx2": "avx2", "fma": "fma", "f16c": "f16c", "bmi": "bmi1", "bmi2": "bmi2",
    "avxvnni": "avx_vnni", "gfni": "gfni",
    # AVX-512
    "avx512f": "avx512f", "avx512cd": "avx512cd", "avx512bw": "avx512bw",
    "avx512dq": "avx512dq", "avx512vl": "avx512vl", "avx512ifma": "avx512ifma",
    "avx512vbmi": "avx512vbmi", "avx512vbmi2": "avx512_vbmi2", "avx512vnni": "avx512_vnni",
    "avx512bitalg": "avx512_bitalg", "avx512vpopcntdq": "avx512_vpopcntdq",
    "avx512bf16": "avx512_bf16", "avx512fp16": "avx512_fp16",
    # AMX
    "amx-tile": "amx_tile", "amx-int8": "amx_int8", "amx-bf16": "amx_bf16",
    "amx-fp16": "amx_fp16",
    # system, crypto and state: filtered like the rest, never recorded or checked
    "aes": "aes", "pclmul": "pclmulqdq", "sha": "sha_ni", "vaes": "vaes",
    "vpclmulqdq": "vpclmulqdq", "adx": "adx", "rdrnd": "rdrand", "rdseed": "rdseed",
    "xsave": "xsave", "xsaveopt": "xsaveopt", "xsavec": "xsavec", "xsaves": "xsaves",
    "fsgsbase": "fsgsbase", "clflushopt": "clflushopt", "clwb": "clwb", "clzero": "clzero",
    "prfchw": "3dnowprefetch", "rdpid": "rdpid", "movdiri": "movdiri",
    "movdir64b": "movdir64b", "serialize": "serialize", "cldemote": "cldemote",
    "rtm": "rtm", "invpcid": "invpcid", "tsxldtrk": "tsxldtrk", "waitpkg": "waitpkg",
    "shstk": "user_shstk", "pku": "pku", "sgx": "sgx",
    # AArch64 (Features line)
    "neon": "asimd", "fp-armv8": "fp", "crc": "crc32", "sha2": "sha2", "dotprod": "asimddp",
    "fullfp16": "asimdhp", "sve": "sve", "sve2": "sve2", "i8mm": "i8mm", "bf16": "bf16",
}

#: LLVM features whose use changes the code LLVM emits for our kernels (vector ISA
#: extensions and the scalar instructions its instruction selection picks on its own):
#: what a module's manifest records and the loader checks.
CODE_FEATURES = frozenset({
    # x86-64 scalar instructions instruction selection uses
    "cmov", "cx8", "cx16", "sahf", "popcnt", "lzcnt", "movbe", "bmi", "bmi2",
    # SSE, AVX
    "mmx", "fxsr", "sse", "sse2", "sse3", "ssse3", "sse4.1", "sse4.2", "sse4a",
    "avx", "avx2", "fma", "f16c", "avxvnni", "gfni",
    # AVX-512
    "avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl", "avx512ifma", "avx512vbmi",
    "avx512vbmi2", "avx512vnni", "avx512bitalg", "avx512vpopcntdq", "avx512bf16",
    "avx512fp16",
    # AMX
    "amx-tile", "amx-int8", "amx-bf16", "amx-fp16",
    # AArch64
    "neon", "fp-armv8", "fullfp16", "dotprod", "i8mm", "bf16", "sve", "sve2",
})

#: x86-64 psABI micro-architecture levels: each level's features (LLVM names) beyond the
#: one before; a level has every feature of those before it.
X86_LEVELS = {
    "x86-64": ("cmov", "cx8", "fxsr", "mmx", "sse", "sse2"),
    "x86-64-v2": ("cx16", "sahf", "popcnt", "sse3", "ssse3", "sse4.1", "sse4.2"),
    "x86-64-v3": ("avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe", "xsave"),
    "x86-64-v4": ("avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"),
}


def parse_os_flags(text: str) -> frozenset:
    """The CPU flags of a ``/proc/cpuinfo`` text: its first ``flags`` (x86-64) or
    ``Features`` (AArch64) line, split; empty where it has neither."""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            return frozenset(value.split())
    return frozenset()


@functools.cache
def read_os_flags() -> frozenset:
    """This machine's CPU flags as its kernel lists them (``/proc/cpuinfo``); empty where
    there is none (then nothing is filtered or checked)."""
    try:
        with open("/proc/cpuinfo") as f:
            return parse_os_flags(f.read())
    except OSError:
        return frozenset()


def hidden(name: str, os_flags: frozenset) -> bool:
    """Whether LLVM feature ``name`` is one the OS names but does not list in ``os_flags``
    (never, when ``os_flags`` is empty: no OS view to go by)."""
    flag = OS_NAME.get(name)
    return bool(os_flags) and flag is not None and flag not in os_flags


def usable(llvm_features: dict, os_flags: frozenset) -> dict:
    """LLVM's host features (name -> on, ``llvm.get_host_cpu_features()``) with each one
    the OS hides turned off: the features code for this host may use."""
    return {name: bool(on) and not hidden(name, os_flags) for name, on in llvm_features.items()}


def code_features(features) -> list:
    """The ``"+name"`` entries among ``features`` (an LLVM feature string ``"+a,-b"`` or an
    iterable of such entries) that are :data:`CODE_FEATURES`, sorted: a manifest's needs."""
    if isinstance(features, str):
        features = features.split(",")
    return sorted({f for f in features
                   if f.startswith("+") and f[1:] in CODE_FEATURES})


def missing(needs, os_flags: frozenset) -> list:
    """The code features among ``needs`` (``"+avx512f"`` or ``"avx512f"``) that ``os_flags``
    lacks, in the order given; system and unknown features are not needs."""
    names = [n.lstrip("+") for n in needs]
    return [n for n in names if n in CODE_FEATURES and hidden(n, os_flags)]


def best_level(os_flags: frozenset) -> str:
    """The highest x86-64 level (``"x86-64-v3"``...) all of whose features ``os_flags``
    lists; ``"x86-64"`` when it lists none of v2's."""
    have = "x86-64"
    for level, feats in X86_LEVELS.items():
        if any(hidden(f, os_flags) for f in feats):
            break
        have = level
    return have
