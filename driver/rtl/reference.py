"""Mismatch reports for RTL runs held to ``sim.functional``.

Every program on the RTL starts from zeroed SRAMs (``driver.rtl.clear``), so
its reference is ``sim.functional.run`` of that program alone.
``mismatch_report`` names the first differing byte, the STORE that last wrote
it and the waveform.
"""
from __future__ import annotations

import numpy as np

from vta_hw import isa
from vta_hw.program import Program


def last_writer(program: Program, byte: int) -> tuple[int, str] | None:
    """``(index, text)`` of the last STORE in program order that writes DRAM byte ``byte``."""
    cfg = program.config
    eb = cfg.out_elem_bytes
    found = None
    for k, insn in enumerate(program.insns):
        if isinstance(insn, isa.Store) and insn.x_size:
            for y in range(insn.y_size):
                lo = (insn.dram_base + y * insn.x_stride) * eb
                if lo <= byte < lo + insn.x_size * eb:
                    found = (k, isa.describe(insn))
    return found


def mismatch_report(program: Program, got: np.ndarray, want: np.ndarray, vcd=None,
                    label: str = "") -> str | None:
    """None if the images are equal, else a readable report of the first difference."""
    if got.shape == want.shape and np.array_equal(got, want):
        return None
    if got.shape != want.shape:
        return f"{label}: DRAM image sizes differ: RTL {got.shape}, functional {want.shape}"
    diff = np.nonzero(got != want)[0]
    a = int(diff[0])
    w = last_writer(program, a)
    who = f"instruction {w[0]}: {w[1]}" if w else "no STORE writes it (input or instruction area)"
    return (f"{label}: {len(diff)} bytes differ; first at DRAM byte {a}: RTL {got[a]}, "
            f"functional {want[a]}; last written by {who}; waveform: {vcd or 'rerun with vcd=True'}")
