"""Which tuning records fit a CPU build: the same CPU, else the same ISA class.

A CPU record's ``target`` entry (``record.target_record``) names a triple, an LLVM CPU and
that CPU's ``+``/``-`` features. Two views of it decide whether a build may use it:

- **The exact target** (:func:`exact_key`): triple, CPU name and the *code features*
  (``vta_hw.host_cpu.code_features``: the ``+`` features that change generated code).
  System features (RDSEED, XSAVES...) differ between a VM and bare metal of one CPU and
  never appear in our kernels, so they do not tell two targets apart. Records written
  before this rule hold every feature; the same reduction reads them.
- **The ISA class** (:func:`isa_class`): architecture, vector register width in bits
  (``Target.vector_bits``: 512 with +avx512f, 256 with +avx/+avx2, else 128) and the
  units a schedule's best point depends on besides width (:data:`UNITS`): the
  dot-product (x86 VNNI, AArch64 i8mm/dotprod), bf16 and matrix (AMX) units our kernels
  would use there, the first of each kind's alternatives the CPU has all features of, in
  the order path selection prefers them (``compiler/quant/kernels/select.py``: 512-bit VNNI
  before ``avxvnni``), so ``avxvnni`` beside ``avx512vnni`` does not split a class. A
  schedule tuned on one CPU of a class (its tiles sized to that register file and those
  instructions) is a good start on another: ``apply.py`` applies such a *sibling's*
  record where no exact one exists (issue 31).

Entries without a triple (the accelerator's ``{"target": "vta", ...}``, a GPU device's)
have no class: only the exact entry matches them.
"""
from __future__ import annotations

import json

from vta_hw.host_cpu import code_features

#: unit kind -> its alternatives (each the LLVM features it needs, x86-64 and AArch64), most
#: preferred first; a class holds per kind the first alternative its CPU has (source: the
#: paths our kernels select, ``compiler/quant/kernels/select.py`` for int8 VNNI and AMX,
#: ``compiler/graph_lower/impls/conv_bf16*.py`` for AVX512-BF16 and AMX-BF16)
UNITS = {
    "dot": (("avx512vnni",), ("avxvnni",), ("i8mm",), ("dotprod",)),
    "bf16": (("avx512bf16",), ("bf16",)),
    "matrix": (("amx-tile", "amx-int8", "amx-bf16"), ("amx-tile", "amx-int8"),
               ("amx-tile", "amx-bf16")),
}

#: (architecture, vector bits) -> the name a report gives that width's ISA
_WIDTH_NAMES = {("x86_64", 512): "avx512", ("x86_64", 256): "avx2", ("x86_64", 128): "sse",
                ("aarch64", 128): "neon"}


def is_cpu_entry(entry: dict) -> bool:
    """Whether a log ``target`` entry is an LLVM CPU's (it has a triple and features)."""
    return "triple" in entry and isinstance(entry.get("features"), list)


def exact_key(entry: dict) -> str:
    """The identity of a log ``target`` entry for exact matching (module docstring): triple,
    CPU name and code features for a CPU, the whole entry (JSON) for any other."""
    if not is_cpu_entry(entry):
        return json.dumps(entry, sort_keys=True)
    return json.dumps([entry["triple"], entry.get("cpu"), code_features(entry["features"])])


def isa_class(entry: dict) -> "tuple | None":
    """The ISA class of a log ``target`` entry, ``(arch, vector bits, dot, bf16, matrix)``
    (each unit the alternative of :data:`UNITS` it has, a tuple of LLVM feature names, ``()``
    for none), or None for an entry that is not a CPU's (module docstring)."""
    if not is_cpu_entry(entry):
        return None
    from compiler.codegen.llvm.target import Target
    feats = code_features(entry["features"])
    tgt = Target(entry["triple"], entry.get("cpu") or "generic", ",".join(feats), False)
    on = {f[1:] for f in feats}
    return (tgt.arch, tgt.vector_bits) + tuple(
        next((alt for alt in alts if on.issuperset(alt)), ()) for alts in UNITS.values())


def describe_class(cls: tuple) -> str:
    """A class as a report names it: ``"avx2, 256-bit"``,
    ``"avx512 + avx512vnni + avx512bf16, 512-bit"``."""
    arch, bits, *units = cls
    name = _WIDTH_NAMES.get((arch, bits), arch)
    return " + ".join([name] + [u for kind in units for u in kind]) + f", {bits}-bit"
