"""LLVM's optimisation pipeline (new pass manager), run on a parsed module.

llvmlite 0.50 dropped the legacy pass manager; the ``O<speed_level>``
pipeline comes from ``create_pipeline_tuning_options`` +
``create_pass_builder``. Loop and SLP vectorisation and unrolling stay on:
our own vectorised loops arrive as LLVM vector types already, and LLVM's
vectoriser only adds to the scalar remainder.
"""
from __future__ import annotations

import llvmlite.binding as llvm


def optimize(module: llvm.ModuleRef, machine: llvm.TargetMachine, level: int = 3) -> None:
    """Run the ``O{level}`` pipeline for ``machine`` over ``module`` in place.

    Args:
        module: a parsed and verified LLVM module.
        machine: the target machine (its cost model guides vectorisation).
        level: 0..3, as clang's ``-O``.

    Raises:
        ValueError: ``level`` outside 0..3.
    """
    if level not in (0, 1, 2, 3):
        raise ValueError(f"optimisation level must be 0, 1, 2 or 3, not {level!r}")
    if level == 0:
        return
    pto = llvm.create_pipeline_tuning_options(speed_level=level)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    pto.loop_unrolling = True
    builder = llvm.create_pass_builder(machine, pto)
    builder.getModulePassManager().run(module, builder)
