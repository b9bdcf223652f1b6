"""The CPU features a named LLVM CPU implies (``-mcpu=cascadelake`` -> ``+avx512vnni``, ...).

llvmlite gives the host's features but has no call for a named CPU's, and LLVM's
target machine keeps them in its subtarget. They are read back through the inliner,
which LLVM lets inline a callee into a caller only where the callee's subtarget features
are a subset of the caller's (``TargetTransformInfo::areInlineCompatible`` on x86 and
AArch64): for each candidate feature F, one module holds a caller compiled for the CPU
alone and a callee for the CPU plus ``+F``; after the O2 pipeline the call is gone
exactly when the CPU already has F. The inliner ignores a few features (x86's
``InlineFeatureIgnoreList``: ``64bit``, ``cx16``, ``sahf``, tuning flags), which would
read as always present; a control pair per feature (caller ``-F``, callee ``+F``)
finds those, and they are left out. One module and one optimisation run per CPU
(about 0.5 s), cached per process.

The candidates per architecture are a registry (:data:`CANDIDATES`): on x86-64 the
feature names LLVM's host detection lists when the host is x86-64 (every x86 feature
this LLVM knows), else a fixed list of those path selection reads.
"""
from __future__ import annotations

import functools
from typing import Callable

import llvmlite.binding as llvm

from .llvm_init import init_llvm

_X86_FIXED = ("sse4.2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512dq",
              "avx512vl", "avx512vnni", "avxvnni", "avx512bf16", "avx512fp16", "amx-tile",
              "amx-int8", "amx-bf16")


def _x86_candidates() -> tuple[str, ...]:
    """``64bit`` is the triple's, not a CPU's (and LLVM aborts on ``-64bit`` in 64-bit code)."""
    if llvm.get_process_triple().startswith("x86_64"):
        return tuple(sorted(set(llvm.get_host_cpu_features().keys()) - {"64bit"}))
    return _X86_FIXED


#: architecture (first part of the triple) -> the feature names worth probing
CANDIDATES: dict[str, Callable[[], tuple[str, ...]]] = {
    "x86_64": _x86_candidates,
    "aarch64": lambda: ("neon", "fp-armv8", "crc", "aes", "sha2", "fullfp16", "dotprod",
                        "i8mm", "bf16", "sve", "sve2"),
}


def _pair(tag: str, i: int, caller_attrs: str, callee_attrs: str) -> list[str]:
    """A caller and a callee that only an inlining decision tells apart afterwards."""
    return [f'define i32 @{tag}_callee{i}(i32 %x) {callee_attrs} {{',
            f'  %y = mul i32 %x, {i + 3}', '  %z = xor i32 %y, %x', '  ret i32 %z', '}',
            f'define i32 @{tag}_caller{i}(i32 %x) {caller_attrs} {{',
            f'  %r = call i32 @{tag}_callee{i}(i32 %x)', '  ret i32 %r', '}']


def _probe_ir(cpu: str, names: tuple[str, ...]) -> str:
    lines = []
    for i, name in enumerate(names):
        plus = f'"target-cpu"="{cpu}" "target-features"="+{name}"'
        minus = f'"target-cpu"="{cpu}" "target-features"="-{name}"'
        lines += _pair("probe", i, f'"target-cpu"="{cpu}"', plus)
        lines += _pair("control", i, minus, plus)
    return "\n".join(lines)


def _inlined(mod, tag: str, i: int) -> bool:
    return f"@{tag}_callee{i}(" not in str(mod.get_function(f"{tag}_caller{i}"))


@functools.cache
def cpu_features(triple: str, cpu: str) -> tuple[str, ...]:
    """The LLVM features (names without ``+``, sorted) that ``cpu`` implies on ``triple``
    among :data:`CANDIDATES` of its architecture; ``()`` for an architecture without
    candidates. ``cpu`` must be one LLVM knows for ``triple`` (``parse_target`` checks
    that first; an unknown CPU would read as having no features)."""
    pick = CANDIDATES.get(triple.split("-")[0])
    if pick is None:
        return ()
    names = pick()
    init_llvm()
    tm = llvm.Target.from_triple(triple).create_target_machine(cpu=cpu, features="")
    mod = llvm.parse_assembly(_probe_ir(cpu, names))
    mod.triple = triple
    pb = llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=2))
    pb.getModulePassManager().run(mod, pb)
    return tuple(n for i, n in enumerate(names)
                 if _inlined(mod, "probe", i) and not _inlined(mod, "control", i))


def merge(implied: tuple[str, ...], mattr: str) -> str:
    """An LLVM feature string: ``+f`` for each implied feature, then ``mattr``'s
    ``+f``/``-f`` entries overriding them (LLVM's rule: the later entry wins)."""
    signs = {name: "+" for name in implied}
    for entry in filter(None, mattr.split(",")):
        sign, name = (entry[0], entry[1:]) if entry[0] in "+-" else ("+", entry)
        signs[name] = sign
    return ",".join(sign + name for name, sign in signs.items())
