"""What an RTL run that ended on an error status means, as the simulators say it.

The accelerator ends a run early with an ERROR code (``vta_hw.rtl.control``):
an undefined instruction reached fetch's dispatcher, or no module made
progress for ``NO_PROGRESS_CYCLES`` cycles. ``raise_fault`` turns the code
into the error the simulators raise for the same program: the decoder's
``UnknownOpcodeError`` for the instruction at the index the RTL reports, and
for no progress the cycle model's ``CycleDeadlockError`` (the two are
cycle-equal, so the cycle model names each module's instruction and the
queue it waits on). If the cycle model does not deadlock, the RTL and the
model disagree: an ``RtlError`` that says so.
"""
from __future__ import annotations

import numpy as np

from vta_hw import isa
from vta_hw.program import Program
from vta_hw.rtl.control import (ERR_NO_PROGRESS, ERR_UNDEFINED, ERROR_QUIET_BIT, MODULES,
                                NO_PROGRESS_CYCLES)


def fault_record(error: int, error_insn: int, ctrl: int) -> dict | None:
    """The record ``raise_fault`` reads, from the ERROR, ERROR_INSN and CTRL register
    values (``vta_hw.rtl.control``) read after done; None when the run ended at FINISH."""
    if error & 3 == 0:
        return None
    return {"code": error & 3, "insn": error_insn,
            "quiet": {m: bool(error >> (ERROR_QUIET_BIT + k) & 1) for k, m in enumerate(MODULES)},
            "busy": {m: bool(ctrl >> (2 + k) & 1) for k, m in enumerate(MODULES)}}


def raise_fault(fault: dict, program: Program, image: np.ndarray, label: str, error_cls) -> None:
    """Raise the error of an RTL run that ended with ``fault`` (the testbench's record:
    ``code``, ``insn``, per-module ``quiet`` and ``busy`` flags).

    Raises:
        sim.errors.UnknownOpcodeError: ERR_UNDEFINED, at the instruction the RTL names.
        sim.cycle.CycleDeadlockError: ERR_NO_PROGRESS, with the cycle model's states.
        error_cls (``RtlError``): the simulators disagree with the RTL, or an unknown code.
    """
    from sim import cycle
    from sim.errors import SimError
    from sim.prologue import decode_word
    k, code = fault["insn"], fault["code"]
    state = ", ".join(f"{m} {'quiet' if fault['quiet'][m] else 'active'}"
                      f"{' busy' if fault['busy'][m] else ''}" for m in fault["quiet"])
    if code == ERR_UNDEFINED:
        raw = image[program.insn_base + 16 * k:program.insn_base + 16 * k + 16].tobytes()
        try:
            decode_word(isa.insn_from_bytes(raw), k, program.config)
        except SimError as e:
            e.args = (f"{label}: the RTL stopped at an undefined instruction: {e.args[0]}",)
            raise
        raise error_cls(f"{label}: the RTL stopped at instruction {k} as undefined, but it "
                        "decodes; an RTL bug")
    if code == ERR_NO_PROGRESS:
        why = (f"{label}: the RTL made no progress for {NO_PROGRESS_CYCLES} cycles after "
               f"dispatching {k} instruction(s) ({state})")
        try:
            cycle.run(program, image, values=False)
        except cycle.CycleDeadlockError as e:
            e.args = (f"{why}; the cycle model: {e.args[0]}",)
            raise
        raise error_cls(f"{why}, but the cycle model finishes the program; an RTL bug")
    raise error_cls(f"{label}: the RTL ended with unknown error code {code}")
