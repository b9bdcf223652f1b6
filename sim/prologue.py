"""The run prologue both simulators share: the DRAM image, the static checks, decoding.

``prepare(program, dram, counters)`` is the first step of ``sim.functional.run``
and ``sim.cycle.run`` (and ``sim.races``): it takes the DRAM image (the
program's own, or a given uint8 image, copied), decodes ``len(program.insns)``
instructions from it at ``program.insn_base`` and checks the static rules
before anything runs (``check_structure``): field widths (``check_fields``, for
records), known opcodes/memory ids/ALU ops (``decode_word``), dependency flags
per module (``vta_hw.isa.FLAG_QUEUES``), LOAD never of OUT, STORE only of OUT,
no pads on UOP loads and STOREs (these encoding rules hold even when
``x_size == 0``), SRAM and DRAM bounds of every LOAD/STORE with ``x_size > 0``,
and uop ranges. GEMM/ALU indices depend on the uop SRAM and are checked when
the instruction runs (``sim.machine``), for every loop iteration, before it
writes anything. Errors: ``sim.errors``.
"""
from __future__ import annotations

import numpy as np

from sim.counters import Counters
from sim.errors import (DependencyFlagError, DramBoundsError, FieldRangeError,
                        ProgramStructureError, UnknownOpcodeError)
from sim.machine import Machine
from vta_hw import isa
from vta_hw.config import OPCODE_BITS, VTAConfig
from vta_hw.isa import DEP_FLAGS, FLAG_QUEUES, Finish, Opcode, module_of
from vta_hw.program import Program


def prepare(program: Program, dram: np.ndarray | None = None,
            counters: Counters | None = None,
            machine: Machine | None = None,
            strict_sram: bool = False) -> tuple[np.ndarray, Machine, list]:
    """``(image, machine, insns)`` for a run of ``program``: a fresh copy of the DRAM image,
    a ``Machine`` counting into ``counters`` (five empty SRAMs, or ``machine`` itself, whose
    SRAMs the run then starts from and updates) and the decoded, checked instructions.

    ``strict_sram``: a read of SRAM the program has not written raises
    ``UnwrittenReadError`` (else the machine records it: ``sim.written``).

    ``dram`` None takes ``program.dram_image()`` after checking the records' field widths
    (the encoder would refuse them less helpfully); a given image is a 1-D uint8 array,
    never modified.

    Raises:
        ValueError: ``dram`` is not a 1-D uint8 array.
        BadProgramError subclasses (``sim.errors``): a static rule is broken.
    """
    cfg = program.config
    if dram is None:
        for k, insn in enumerate(program.insns):
            check_fields(insn, k, cfg)
        check_uop_fields(program.uops, cfg)
        image = program.dram_image()
    else:
        given = np.asarray(dram)
        if given.dtype != np.uint8 or given.ndim != 1:
            raise ValueError(f"dram must be a 1-D uint8 array, not {given.dtype} "
                             f"of shape {given.shape}")
        image = given.copy()
    if machine is None:
        machine = Machine(cfg, counters, strict_sram)
    else:
        machine.counters = counters if counters is not None else Counters()
        machine.written.clear()
        machine.written.strict = strict_sram
    insns = read_insns(image, program)
    check_structure(insns, machine, image.size)
    return image, machine, insns


def check_fields(insn, index: int, cfg: VTAConfig) -> None:
    """Raise ``FieldRangeError`` if a field of record ``insn`` does not fit its width on ``cfg``.

    The message names the field, its width, the value and the range.
    """
    for f in isa.layout(insn.opcode, cfg):
        if f.name == "opcode":
            continue
        v = int(getattr(insn, f.name))
        lo, hi = ((-(1 << (f.width - 1)), (1 << (f.width - 1)) - 1) if f.name == "imm"
                  else (0, (1 << f.width) - 1))
        if not lo <= v <= hi:
            raise FieldRangeError(
                f"{type(insn).__name__}.{f.name}={v} does not fit its {f.width}-bit field "
                f"({lo}..{hi}) on config {cfg.name}", insn_index=index, field=f.name,
                value=v, limit=hi)


def check_uop_fields(uops, cfg: VTAConfig) -> None:
    """Raise ``FieldRangeError`` (insn_index None, field ``uops[k].name``) for a uop
    field wider than its width on ``cfg``."""
    for k, u in enumerate(uops):
        for f in isa.uop_layout(cfg):
            v = int(getattr(u, f.name))
            if not 0 <= v < (1 << f.width):
                raise FieldRangeError(
                    f"uop {k}: {f.name}={v} does not fit its {f.width}-bit field "
                    f"(0..{(1 << f.width) - 1}) on config {cfg.name}",
                    field=f"uops[{k}].{f.name}", value=v, limit=(1 << f.width) - 1)


def decode_word(word: int, index: int, cfg: VTAConfig):
    """Decode one 128-bit word; ``UnknownOpcodeError`` names the bad field."""
    raw = word & ((1 << OPCODE_BITS) - 1)
    if raw not in Opcode._value2member_map_:
        raise UnknownOpcodeError(
            f"opcode {raw} is unknown (known: {', '.join(f'{o.name}={o.value}' for o in Opcode)})",
            insn_index=index, field="opcode", value=raw, limit=max(Opcode))
    for f in isa.layout(Opcode(raw), cfg):
        enum_t = isa.ENUM_FIELDS.get(f.name)
        v = (word >> f.lsb) & ((1 << f.width) - 1)
        if enum_t is not None and v not in enum_t._value2member_map_:
            raise UnknownOpcodeError(
                f"{Opcode(raw).name} {f.name} {v} is unknown (known: "
                f"{', '.join(f'{e.name}={e.value}' for e in enum_t)})",
                insn_index=index, field=f.name, value=v, limit=max(enum_t))
    return isa.decode(word, cfg)


def read_insns(dram: np.ndarray, program: Program) -> list:
    """Decode ``len(program.insns)`` instructions from ``dram`` at ``program.insn_base``.

    Raises:
        DramBoundsError: the stream reaches past the image.
        UnknownOpcodeError: a word does not decode.
    """
    n, base = len(program.insns), program.insn_base
    if base < 0 or base + 16 * n > dram.size:
        raise DramBoundsError(
            f"the instruction stream (insn_base={base}, {n} x 16 bytes) reaches past the "
            f"{dram.size}-byte DRAM image; pass the program's own image",
            field="insn_base", value=base + 16 * n, limit=dram.size)
    raw = dram[base:base + 16 * n].tobytes()
    return [decode_word(isa.insn_from_bytes(raw[16 * k:16 * k + 16]), k, program.config)
            for k in range(n)]


def check_structure(insns: list, machine: Machine, dram_bytes: int) -> None:
    """Static checks of a decoded program: FINISH last and only once, dependency
    flags per module, and every instruction's ``Machine.check_static``."""
    if not insns:
        raise ProgramStructureError(
            "the program has no instructions; it must end with a FINISH (opcode 3)",
            field="opcode", value=None, limit="FINISH")
    if not isinstance(insns[-1], Finish):
        last = insns[-1].opcode.name
        raise ProgramStructureError(
            f"the program must end with FINISH, but its last instruction has opcode {last}; "
            "append a Finish()", insn_index=len(insns) - 1, field="opcode", value=last,
            limit="FINISH")
    for k, insn in enumerate(insns):
        if isinstance(insn, Finish) and k != len(insns) - 1:
            raise ProgramStructureError(
                f"FINISH (opcode 3) at {k} is followed by {len(insns) - 1 - k} "
                "instruction(s); FINISH must be the last and only one; remove it or what "
                "follows", insn_index=k, field="opcode", value="FINISH", limit=len(insns) - 1)
        mod = module_of(insn)
        for flag in DEP_FLAGS:
            if getattr(insn, flag) and (mod, flag) not in FLAG_QUEUES:
                raise DependencyFlagError(
                    f"{insn.opcode.name} runs on the {mod} module, which has no {flag} "
                    f"queue; clear {flag} (the {mod} module uses "
                    f"{', '.join(f for (m, f) in FLAG_QUEUES if m == mod)})",
                    insn_index=k, field=flag, value=True, limit=mod)
        machine.check_static(insn, k, dram_bytes)
