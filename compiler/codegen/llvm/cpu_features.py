"""The CPU features a named LLVM CPU implies (``-mcpu=cascadelake`` -> ``+avx512vnni``, ...).

llvmlite gives the host's features but has no call for a named CPU's, and LLVM's
target machine keeps them in its subtarget. They are read back through the inliner,
which LLVM lets inline a callee into a caller only where the callee's subtarget features
are a subset of the caller's (``TargetTransformInfo::areInlineCompatible`` on x86 and
AArch64): for each candidate feature F, one module holds a caller compiled for the CPU
alone and a callee for the CPU plus ``+F``; after the O2 pipeline the call is gone
exactly when the CPU already has F. One module and one optimisation run per CPU (about
0.3 s), cached per process.

The candidates per architecture are a registry (:data:`CANDIDATES`): on x86-64 the
feature names LLVM's host detection lists when the host is x86-64 (every x86 feature
this LLVM knows), else a fixed list of those path selection reads.
"""
from __future__ import annotations

import functools
from typing import Callable

import llvmlite.binding as llvm

_X86_FIXED = ("sse4.2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512dq",
              "avx512vl", "avx512vnni", "avxvnni", "avx512bf16", "avx512fp16", "amx-tile",
              "amx-int8", "amx-bf16")


def _x86_candidates() -> tuple[str, ...]:
    if llvm.get_process_triple().startswith("x86_64"):
        return tuple(sorted(llvm.get_host_cpu_features().keys()))
    return _X86_FIXED


#: architecture (first part of the triple) -> the feature names worth probing
CANDIDATES: dict[str, Callable[[], tuple[str, ...]]] = {
    "x86_64": _x86_candidates,
    "aarch64": lambda: ("neon", "fp-armv8", "crc", "aes", "sha2", "fullfp16", "dotprod",
                        "i8mm", "bf16", "sve", "sve2"),
}


def _probe_ir(cpu: str, names: tuple[str, ...]) -> str:
    lines = [f'attributes #0 = {{ "target-cpu"="{cpu}" }}']
    for i, name in enumerate(names):
        lines += [f'define i32 @callee{i}(i32 %x) #{i + 1} {{',
                  f'  %y = mul i32 %x, {i + 3}', '  %z = xor i32 %y, %x', '  ret i32 %z', '}',
                  f'define i32 @caller{i}(i32 %x) #0 {{',
                  f'  %r = call i32 @callee{i}(i32 %x)', '  ret i32 %r', '}',
                  f'attributes #{i + 1} = {{ "target-cpu"="{cpu}" "target-features"="+{name}" }}']
    return "\n".join(lines)


@functools.cache
def cpu_features(triple: str, cpu: str) -> tuple[str, ...]:
    """The LLVM features (names without ``+``, sorted) that ``cpu`` implies on ``triple``
    among :data:`CANDIDATES` of its architecture; ``()`` for an architecture without
    candidates. ``cpu`` must be one LLVM knows for ``triple`` (``parse_target`` checks
    that first; an unknown CPU would read as having no features)."""
    from .target import init_llvm
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
                 if f"@callee{i}(" not in str(mod.get_function(f"caller{i}")))


def merge(implied: tuple[str, ...], mattr: str) -> str:
    """An LLVM feature string: ``+f`` for each implied feature, then ``mattr``'s
    ``+f``/``-f`` entries overriding them (LLVM's rule: the later entry wins)."""
    signs = {name: "+" for name in implied}
    for entry in filter(None, mattr.split(",")):
        sign, name = (entry[0], entry[1:]) if entry[0] in "+-" else ("+", entry)
        signs[name] = sign
    return ",".join(sign + name for name, sign in signs.items())
