"""Candidates built ahead of their measurement: a module file each, then timed.

``BUILDS[task kind](payload, config, options, path) -> Built`` lowers and
compiles one candidate to a module file at ``path`` (for ``llvm``: the fused
group lowered at the config point, optimised at -O3 and linked into a shared
library, no JIT); ``RUNS[task kind](payload, built, options) -> costs`` loads
it and times it as ``measure.py`` does (warm-up, output checked against the
default point, repeats). The local runner builds a batch's candidates in
several worker processes at once and then runs them one at a time, so no
build competes with a timing. Kinds without an entry (the cycle model's) are
built and measured in one step by ``measure.MEASURES``.
"""
from __future__ import annotations

import _ctypes
from dataclasses import dataclass

import numpy as np

from .measure import arg_types, guarded, inputs, time_kernel


@dataclass(frozen=True)
class Built:
    """A built candidate: its module file and what its arguments are made from.

    Attributes:
        path: the shared library.
        packs: per group input, its packing tag or None.
        types: ``(shape, dtype)`` per kernel argument.
        constants: the kernel's compile-time tables (numpy arrays).
    """

    path: str
    packs: tuple
    types: tuple
    constants: tuple


def build_llvm(payload: dict, config, options: dict, path: str) -> Built:
    """Lower the fused group ``payload["node"]`` at ``config`` and link it into ``path`` (the
    object pipeline of whole-model builds, ``compiler/graph_lower/link.py``: FMA
    contraction, -O3)."""
    from compiler.codegen.llvm.export import link_shared
    from compiler.codegen.llvm.target import parse_target
    from compiler.graph_lower.link import compile_object
    from compiler.graph_lower.lower import lower_group
    from compiler.tir import lower
    tgt = parse_target(payload["target"])
    kdef = lower_group(payload["node"], "cand", tgt, config)
    link_shared([compile_object([lower(kdef.schedule, kdef.args, "cand")], tgt)], path)
    return Built(path, tuple(kdef.packs), tuple(arg_types(kdef)),
                 tuple(np.asarray(c) for c in kdef.constants))


def run_llvm(payload: dict, built: Built, options: dict) -> list:
    """Seconds per run of the built candidate (``measure.time_kernel``)."""
    from compiler.codegen.llvm.artifact import load_library
    lib = load_library(built.path)
    try:
        args = inputs(payload["node"], built.packs, built.types, built.constants, 0)
        return time_kernel(payload, lib["cand"], args, options)
    finally:
        _ctypes.dlclose(lib._lib._handle)    # a long session loads thousands of candidates


#: task kind -> build(payload, config, options, path) -> Built
BUILDS = {"llvm": build_llvm}
#: task kind -> run(payload, built, options) -> costs
RUNS = {"llvm": run_llvm}


def build(kind: str, payload: dict, config, options: dict, path: str) -> tuple:
    """``("ok", Built)`` or ``("error", one line)``: never raises for a bad candidate."""
    if kind not in BUILDS:
        return "error", f"no build function for task kind {kind!r}; kinds: {sorted(BUILDS)}"
    return guarded(BUILDS[kind], payload, config, options, path)


def run(kind: str, payload: dict, built: Built, options: dict) -> tuple:
    """``("ok", costs)`` or ``("error", one line)``: never raises for a bad candidate."""
    if kind not in RUNS:
        return "error", f"no run function for task kind {kind!r}; kinds: {sorted(RUNS)}"
    return guarded(RUNS[kind], payload, built, options)
