"""One accelerator kernel built from a te schedule: ``compiler.build(s, args, target="vta")``.

A :class:`VtaKernel` is the program (instructions, uops, the DRAM layout of its
buffers) plus the kernel's arguments in order, each a named DRAM buffer with
its shape, dtype and kind. It holds no device: ``driver.run_kernel(kernel,
{name: array})`` runs it on one (the compiler imports neither the driver nor a
simulator).
"""
from __future__ import annotations

import dataclasses

from compiler.tir import ir
from vta_hw.config import VTAConfig, load_config
from vta_hw.program import BufferSpec, Program

from .codegen import BuildStats, build as codegen_build

#: the kinds a kernel argument may have (``vta_hw.program.BufferSpec.kind``)
KINDS = ("input", "output", "param", "scratch")


@dataclasses.dataclass
class VtaKernel:
    """An accelerator kernel: ``program`` and its arguments by name.

    Attributes:
        name: the kernel's name.
        program: the ``vta_hw.program.Program`` (``save`` it as a ``.vtaprog``).
        args: the buffer specs of the arguments, in the order given to ``build``
            (name, shape, dtype, kind in "input" | "output" | "param" | "scratch").
        stats: instruction counts by kind, uops, uop loads (``BuildStats``).
    """
    name: str
    program: Program
    args: list[BufferSpec]
    stats: BuildStats

    @property
    def config(self) -> VTAConfig:
        return self.program.config

    @property
    def inputs(self) -> list[str]:
        """Names of the arguments a run reads (kind "input" or "param")."""
        return [a.name for a in self.args if a.kind in ("input", "param")]

    @property
    def outputs(self) -> list[str]:
        return [a.name for a in self.args if a.kind == "output"]

    def describe(self) -> str:
        """One line per argument, then the instruction counts."""
        lines = [f"kernel {self.name!r} for {self.config.name}:"]
        lines += [f"  {a.kind:6} {a.name}: {a.dtype}{list(a.shape)} at byte {a.offset}"
                  for a in self.args]
        lines.append("  " + ", ".join(f"{k} {v}" for k, v in sorted(self.stats.insns.items()))
                     + f"; {self.stats.uops} uops")
        return "\n".join(lines)


def build_kernel(func: ir.PrimFunc, config: "str | VTAConfig | None" = None,
                 kinds: dict[str, str] | None = None) -> VtaKernel:
    """Generate the accelerator program of a lowered ``func`` for ``config``.

    Args:
        func: the lowered kernel (``compiler.tir.lower``); each Buffer parameter is
            a DRAM buffer.
        config: a preset name, a JSON config path or a ``VTAConfig`` (default preset).
        kinds: parameter name -> kind; by default the last parameter is the
            "output" and the others are "input"s.

    Raises:
        ValueError: a kind outside ``KINDS`` or a name that is no parameter.
        compiler.codegen.vta.CodegenError: IR the code generator cannot emit (the
            message names the buffer or loop and what to change).
    """
    cfg = config if isinstance(config, VTAConfig) else load_config(config)
    names = [p.name for p in func.params if isinstance(p, ir.Buffer)]
    given = dict(kinds or {})
    for n, k in given.items():
        if n not in names:
            raise ValueError(f"kinds names {n!r}, which is no parameter of kernel {func.name!r} "
                             f"(parameters: {', '.join(names)})")
        if k not in KINDS:
            raise ValueError(f"kind of {n!r} must be one of {', '.join(KINDS)}, not {k!r}")
    full = {n: given.get(n, "output" if i == len(names) - 1 else "input")
            for i, n in enumerate(names)}
    stats = BuildStats()
    program = codegen_build(func, cfg, full, stats=stats)
    return VtaKernel(func.name, program, [program.buffer(n) for n in names], stats)
