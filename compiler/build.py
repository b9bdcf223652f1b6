"""``compiler.build``: a schedule or PrimFunc to runnable / deployable machine code.

Usage::

    import compiler.build
    A = te.placeholder((n,), "float32", "A"); ...
    s = te.create_schedule(C)
    f = compiler.build(s, [A, B, C], target="llvm")   # or compiler.build.build(...)
    f(a, b, c)                                          # numpy arrays, checked
    f.export_library("vadd.so"); f.save_object("vadd.o"); f.llvm_ir

    k = compiler.build(s, [A, B, C], target="vta", config="1x16_i8w8a32_15_15_18_17")
    driver.run_kernel(k, {"A": a, "B": b})             # an accelerator kernel: run by the driver

The module object is itself callable (``compiler.build(...)`` and
``from compiler.build import build`` are the same function).
"""
from __future__ import annotations

import sys
import types

from compiler.codegen.llvm.artifact import BuiltModule
from compiler.codegen.llvm.codegen import codegen_llvm
from compiler.codegen.llvm.target import parse_target
from compiler.tir import ir as tir


def build(inputs, args: "list | None" = None, target="llvm", name: str = "default_function",
          opt_level: int = 3, fp_contract: bool = False, *, config=None,
          kinds: "dict[str, str] | None" = None):
    """Compile a te schedule, a PrimFunc, or a list of PrimFuncs for ``target``.

    Args:
        inputs: a ``te.Schedule`` (lowered with ``compiler.tir.lower(inputs,
            args, name)``), a lowered ``PrimFunc``, or a list of them.
        args: the schedule's parameters in order (te Tensors and scalar VARs);
            required with a schedule, ignored for PrimFuncs.
        target: a target string (``"llvm"``, ``"llvm -mtriple=aarch64-linux-gnu"``,
            ``"aarch64"``, ``"armv7"``, ``"wasm32"``), a ``Target``, or ``"vta"`` (the
            accelerator: a schedule that caches into its SRAM scopes, marks DMA copies
            and tensorizes onto its intrinsics, ``compiler.topi.vta.Env``).
        name: the kernel's name when lowering a schedule.
        opt_level: LLVM optimisation level 0..3.
        fp_contract: allow fusing float multiply-add into FMA (LLVM's ``contract``
            flag; off by default: strict IEEE, no fast-math). GEMM-like kernels
            want it on (``build_model`` turns it on); no other relaxation exists.
        config: ``target="vta"`` only: the accelerator (preset name, JSON path or
            ``VTAConfig``; default preset).
        kinds: ``target="vta"`` only: argument name -> "input" | "output" | "param" |
            "scratch" (default: the last argument is the output, the others inputs).

    Returns:
        A :class:`~compiler.codegen.llvm.artifact.BuiltModule`: callable with numpy
        arrays on the host (shapes and dtypes checked, errors name the
        argument); ``save_object``/``export_library``/``assembly`` for
        deployment. For ``target="vta"`` a
        :class:`~compiler.codegen.vta.kernel.VtaKernel` (program and buffer layout),
        which ``driver.run_kernel`` runs.

    Raises:
        TypeError: ``inputs`` is none of the accepted kinds, or a schedule
            comes without ``args``.
        ValueError: bad target, or IR the backend cannot emit.
        compiler.te.ScheduleError: the schedule does not lower.
        compiler.codegen.vta.CodegenError: (vta) IR the accelerator cannot run.
    """
    is_vta = isinstance(target, str) and target.split()[0] == "vta"
    if not is_vta and (config is not None or kinds is not None):
        raise TypeError(f"build(): config= and kinds= are options of target='vta', not of "
                        f"{target!r}")
    tgt = None if is_vta else parse_target(target)
    if isinstance(inputs, tir.PrimFunc):
        funcs = [inputs]
    elif isinstance(inputs, (list, tuple)) and inputs and all(isinstance(f, tir.PrimFunc) for f in inputs):
        funcs = list(inputs)
    elif type(inputs).__name__ == "Schedule":
        if args is None:
            raise TypeError("build(schedule, args): args (the te Tensors and scalar VARs, in "
                            "parameter order) is required with a schedule")
        from compiler.tir import lower
        funcs = [lower(inputs, list(args), name)]
    else:
        raise TypeError(f"build() takes a te.Schedule, a PrimFunc or a list of PrimFuncs, not "
                        f"{type(inputs).__name__}")
    if is_vta:
        if len(funcs) != 1:
            raise TypeError(f"build(target='vta') builds one kernel, not {len(funcs)} PrimFuncs")
        from compiler.codegen.vta.kernel import build_kernel
        return build_kernel(funcs[0], config, kinds)
    return BuiltModule(codegen_llvm(funcs, tgt, fp_contract), opt_level)


class _CallableModule(types.ModuleType):
    """Lets ``compiler.build(...)`` call :func:`build` although ``compiler.build`` is this module."""

    def __call__(self, *args, **kwargs):
        return build(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
