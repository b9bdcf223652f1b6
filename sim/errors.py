"""Errors of the simulators: what a bad program can do wrong, with where and why.

Every error carries the instruction that caused it (``insn_index``, its
position in program order, or ``None`` for the program as a whole), the
instruction ``field`` at fault, the offending ``value`` and the ``limit`` it
broke, and its message names all four and says how to fix it.

Hierarchy::

    SimError
    └── BadProgramError           the program breaks the ISA contract
        ├── UnknownOpcodeError    an instruction word does not decode
        ├── FieldRangeError       a field value the config or the kind cannot hold
        ├── DependencyFlagError   a token flag the instruction's module does not have
        ├── SramIndexError        an SRAM index (any loop iteration) past the buffer
        ├── UnwrittenReadError    a read of SRAM the program has not written
        ├── DramBoundsError       a DRAM access past the image
        ├── UopRangeError         a GEMM/ALU uop range outside the uop buffer
        ├── ProgramStructureError no FINISH, or an instruction after it
        └── DeadlockError         no module can make progress
    CycleLimitError               the run reached its cycle limit (``max_cycles``)
"""
from __future__ import annotations

from vta_hw.errors import VtaError


class SimError(VtaError):
    """Base of every simulator error.

    Attributes:
        insn_index: position of the faulty instruction in program order, or None.
        field: the instruction field (or program property) at fault, or None.
        value: the offending value, or None.
        limit: the bound or rule it broke, or None.
    """

    def __init__(self, message: str, *, insn_index: int | None = None,
                 field: str | None = None, value=None, limit=None):
        self.insn_index = insn_index
        self.field = field
        self.value = value
        self.limit = limit
        self.detail = message
        where = f"instruction {insn_index}: " if insn_index is not None else ""
        super().__init__(where + message)


class BadProgramError(SimError):
    """The program breaks the ISA contract (see ``sim.functional`` for the rules)."""


class UnknownOpcodeError(BadProgramError):
    """An instruction word holds an unknown opcode, memory id or ALU opcode."""


class FieldRangeError(BadProgramError):
    """A field value the config cannot encode, or one the instruction kind forbids
    (a LOAD of OUT, a STORE of anything but OUT, pads on a UOP load or a STORE)."""


class DependencyFlagError(BadProgramError):
    """A dependency flag the instruction's module has no token queue for
    (pop_prev/push_prev on a load-module LOAD, pop_next/push_next on a STORE)."""


class SramIndexError(BadProgramError):
    """An SRAM index, in some loop iteration or DMA row, is past the buffer's depth."""


class UnwrittenReadError(BadProgramError):
    """A read of an SRAM entry the program has not written (``vta_hw.isa``'s SRAM
    contract): its contents are undefined, and differ between the simulators and the RTL."""


class UnwrittenReadWarning(UserWarning):
    """A program read SRAM it had not written (``vta_hw.isa``'s SRAM contract); the
    simulators ran it from zeroed SRAM, the RTL and a board from the previous
    program's contents, so their results may differ."""


class DramBoundsError(BadProgramError):
    """A DMA (or the instruction stream itself) reaches past the DRAM image."""


class UopRangeError(BadProgramError):
    """``[uop_bgn, uop_end)`` is reversed or reaches past the uop buffer."""


class ProgramStructureError(BadProgramError):
    """The program does not end with exactly one FINISH as its last instruction."""


class DeadlockError(BadProgramError):
    """No module can pop the tokens its next instruction needs.

    Attributes:
        blocked: one ``(module, insn_index, queue)`` per blocked module.
    """

    def __init__(self, message: str, *, blocked: list[tuple[str, int, str]], **kw):
        self.blocked = list(blocked)
        super().__init__(message, **kw)


class CycleLimitError(SimError):
    """The program had not finished when the run reached its cycle limit (``max_cycles``):
    not a fault of the program, whose modules were still making progress.

    Attributes:
        cycle: the limit, cycles.
        retired: instructions retired per module by then.
    """

    def __init__(self, message: str, *, cycle: int, retired: dict, **kw):
        self.cycle, self.retired = cycle, dict(retired)
        super().__init__(message, **kw)
