"""The driver's side of placement by cost: the accelerator's clock and cycle counts.

``compiler.quant.placement`` weighs each accelerator-able node's accelerator time against
its CPU time; the compiler imports neither the boards nor the simulators, so the driver
hands in what it knows: the clock of the preset's board (``fpga.boards.preset_clock``)
unless the user states one, and the cycle model (``sim.cycle``, timing only) as the
cycle runner unless the user asks for the compiler's own estimate.
"""
from __future__ import annotations

from typing import Mapping

from compiler.quant.placement import Placement, PlacementError
from vta_hw.config import VTAConfig, load_config

#: cycle sources: the cycle model, or the compiler's serial estimate (``placement.program_cycles``)
CYCLE_SOURCES = ("model", "estimate")


def cycle_model_cycles(prog) -> int:
    """Cycles of ``prog`` on the cycle model (``sim.cycle.run``, timing only)."""
    from sim import cycle
    return cycle.run(prog, values=False).cycles


def cost_placement(config: "VTAConfig | str | None" = None, *, kind: str = "cost",
                   clock_mhz: "float | None" = None, cycles: str = "model",
                   cpu_gmacs: "float | None" = None, force: "Mapping[str, str] | None" = None,
                   cpu_target: str = "llvm") -> tuple[Placement, str]:
    """A ``Placement`` with the driver's defaults, and a line saying where the clock came from.

    Args:
        config: the accelerator (preset name, VTAConfig, or None: the default preset).
        kind: "cost" or "supported" (then only ``force`` acts).
        clock_mhz: accelerator clock, MHz; None: the preset's board clock.
        cycles: "model" (the cycle model) or "estimate" (the compiler's bound).
        cpu_gmacs: a stated host's int8 throughput (1e9 MACs/s); None: measured here.
        force: op type -> "cpu" | "vta".

    Raises:
        PlacementError: a bad cycle source, clock, throughput or force entry.
    """
    from fpga.boards import preset_clock
    cfg = config if isinstance(config, VTAConfig) else load_config(config)
    if cycles not in CYCLE_SOURCES:
        raise PlacementError(f"cycles must be one of {', '.join(CYCLE_SOURCES)}, not {cycles!r}")
    if clock_mhz is None:
        clock_mhz, board = preset_clock(cfg.name)
        where = f"{clock_mhz:g} MHz ({board}'s clock)"
    else:
        where = f"{clock_mhz:g} MHz (stated)"
    p = Placement(kind=kind, clock_mhz=clock_mhz,
                  cycles=cycle_model_cycles if cycles == "model" else None,
                  cpu_gmacs=cpu_gmacs, force=dict(force or {}), cpu_target=cpu_target)
    host = f"{cpu_gmacs:g} GMAC/s (stated host)" if cpu_gmacs else "CPU kernels timed on this machine"
    return p, (f"placement {kind}: accelerator at {where}, cycles from the "
               f"{'cycle model' if cycles == 'model' else 'compiler estimate'}, {host}")
