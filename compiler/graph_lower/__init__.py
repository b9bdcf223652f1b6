"""Graph lowering: FUSED groups -> scheduled ``te`` kernels -> one shared library.

- ``strategy``: per graph op, its implementations (condition, compute, schedule
  template, config space); the entries live in ``impls/``, one module per op
  family, and ``Registry.select`` picks one per op for the target.
- ``lower.lower_group(node, name, target=None)``: one fused group as a
  scheduled kernel (``KernelDef``), its injective ops inlined into the
  master's epilogue; ``schedule.schedule_group`` attaches the epilogue and
  applies the master's template.
- ``build.compile_graph(graph, params, memory_plan, target)``: every kernel of
  a fused graph (shared between equal signatures) in one LLVM module and one
  shared library, plus the graph JSON and packed params (``CompiledModel``).
- ``link.link_library(funcs, target, fp_contract, opt_level)``: lowered
  kernels -> the bytes of one host shared library; ``link.kernel_files``: that,
  or a cross triple's relocatable object (``kernels.o``).
- ``aot``: the AOT executor: the same kernels and plan as one C-callable entry
  (``vtamod_run``) with the parameters as constant data, and its C header
  (``compile_graph(..., executor="aot")``; the registry is ``build.EXECUTORS``).
"""
from .build import CompiledModel, compile_graph
from .link import kernel_files, link_library
from .lower import KernelDef, LoweringError, lower_group

__all__ = ["CompiledModel", "KernelDef", "LoweringError", "compile_graph", "kernel_files", "link_library", "lower_group"]
