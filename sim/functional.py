"""The golden model: runs a ``Program`` on its DRAM image, no timing.

``run(program, dram)`` reads the instructions from the DRAM image at
``program.insn_base`` (``len(program.insns)`` 16-byte words), routes them in
program order to the three modules, and executes them in a token-respecting
order until every module is drained:

- routing: LOAD of INP/WGT -> load; LOAD of UOP/ACC, GEMM, ALU, FINISH ->
  compute; STORE -> store.
- token queues (counters, unbounded by default): ``l2c`` load->compute,
  ``c2l`` compute->load, ``c2s`` compute->store, ``s2c`` store->compute.

  ========  ==========  ==========  ===========  ===========
  module    pop_prev    pop_next    push_prev    push_next
  ========  ==========  ==========  ===========  ===========
  load      (error)     pops c2l    (error)      pushes l2c
  compute   pops l2c    pops s2c    pushes c2l   pushes c2s
  store     pops c2s    (error)     pushes s2c   (error)
  ========  ==========  ==========  ===========  ===========

  An instruction waits until all its pops can be served, pops, executes,
  then pushes.
- schedule ``"round_robin"`` (the default): turns go load, compute, store,
  each running at most one ready instruction; a round with no progress while
  instructions remain is a deadlock. ``"random"`` (seeded by ``seed``) runs
  a random ready module each step: any race-free program gives the same
  final DRAM image under every schedule.
- the program must end with exactly one FINISH. Tokens left in the queues
  at the end are reported (``leftover_tokens``, ``warnings``).

Optional hardware limits (default: none, as the contract): ``cmd_queue_depth``
bounds each module's command queue (fetch dispatches in program order and
stalls on a full queue, as ``vta_hw.timing.CMD_QUEUE_DEPTH``);
``token_queue_depth`` bounds each token queue (an instruction whose push
would overflow a queue waits, as ``vta_hw.timing.TOKEN_QUEUE_DEPTH``).
With these a program that deadlocks only in hardware is caught here.

Static rules, checked before anything runs (``check_structure``): field
widths (``check_fields``, for records), known opcodes/memory ids/ALU ops
(``decode_word``), dependency flags per module, LOAD never of OUT, STORE only
of OUT, no pads on UOP loads and STOREs (these encoding rules hold even when
``x_size == 0``), SRAM and DRAM bounds of every LOAD/STORE with
``x_size > 0``, and uop ranges. GEMM/ALU indices depend on the uop SRAM and
are checked when the instruction runs, for every loop iteration, before it
writes anything.

Instruction semantics: ``sim.machine.Machine``. Errors: ``sim.errors``.
Race detection for any program: ``sim.races``.
"""
from __future__ import annotations

import dataclasses
import random as _random

import numpy as np

from sim.counters import Counters
from sim.errors import (DeadlockError, DependencyFlagError, DramBoundsError, FieldRangeError,
                        ProgramStructureError, UnknownOpcodeError)
from sim.machine import Machine
from vta_hw import isa
from vta_hw.config import VTAConfig
from vta_hw.isa import AluOp, Finish, Load, MemId, Opcode, Store
from vta_hw.program import Program

MODULES = ("load", "compute", "store")
QUEUES = ("l2c", "c2l", "c2s", "s2c")
#: (module, flag) -> token queue; a missing pair is a DependencyFlagError.
FLAG_QUEUES = {
    ("load", "pop_next"): "c2l", ("load", "push_next"): "l2c",
    ("compute", "pop_prev"): "l2c", ("compute", "pop_next"): "s2c",
    ("compute", "push_prev"): "c2l", ("compute", "push_next"): "c2s",
    ("store", "pop_prev"): "c2s", ("store", "push_prev"): "s2c",
}
POP_FLAGS = ("pop_prev", "pop_next")
PUSH_FLAGS = ("push_prev", "push_next")


@dataclasses.dataclass
class FunctionalResult:
    """Outcome of ``run``.

    Attributes:
        dram: the final DRAM image (a new uint8 array, same size as the input).
        counters: ``sim.counters.Counters`` (``to_dict()`` for a plain dict).
        leftover_tokens: tokens left per queue ("l2c", "c2l", "c2s", "s2c").
        finished: every instruction (FINISH included) ran; False only when
            ``max_steps`` stopped the run early.
        warnings: human-readable notes (leftover tokens, early stop).
        machine: the final SRAM state (``sim.machine.Machine``).
    """
    dram: np.ndarray
    counters: Counters
    leftover_tokens: dict[str, int]
    finished: bool
    warnings: list[str]
    machine: Machine


def module_of(insn) -> str:
    """The module that executes ``insn``: "load", "compute" or "store"."""
    if isinstance(insn, Store):
        return "store"
    if isinstance(insn, Load) and insn.mem in (MemId.INP, MemId.WGT):
        return "load"
    return "compute"


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
    raw = word & 0b111
    if raw not in Opcode._value2member_map_:
        raise UnknownOpcodeError(
            f"opcode {raw} is unknown (known: {', '.join(f'{o.name}={o.value}' for o in Opcode)})",
            insn_index=index, field="opcode", value=raw, limit=max(Opcode))
    for f in isa.layout(Opcode(raw), cfg):
        enum_t = {"mem": MemId, "alu_op": AluOp}.get(f.name)
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
        for flag in POP_FLAGS + PUSH_FLAGS:
            if getattr(insn, flag) and (mod, flag) not in FLAG_QUEUES:
                raise DependencyFlagError(
                    f"{insn.opcode.name} runs on the {mod} module, which has no {flag} "
                    f"queue; clear {flag} (the {mod} module uses "
                    f"{', '.join(f for (m, f) in FLAG_QUEUES if m == mod)})",
                    insn_index=k, field=flag, value=True, limit=mod)
        machine.check_static(insn, k, dram_bytes)


class _Scheduler:
    """Fetch, command queues, token queues and the choice of who runs next."""

    def __init__(self, insns: list, cmd_depth: int | None, token_depth: int | None):
        self.insns = insns
        self.fetched = 0
        self.cmd = {m: [] for m in MODULES}  # pending instruction indices, program order
        self.head = {m: 0 for m in MODULES}
        self.tokens = {q: 0 for q in QUEUES}
        self.cmd_depth, self.token_depth = cmd_depth, token_depth
        self.done = 0

    def fetch_ready(self) -> bool:
        if self.fetched >= len(self.insns):
            return False
        m = module_of(self.insns[self.fetched])
        return self.cmd_depth is None or len(self.cmd[m]) - self.head[m] < self.cmd_depth

    def fetch(self) -> None:
        self.cmd[module_of(self.insns[self.fetched])].append(self.fetched)
        self.fetched += 1

    def next_of(self, m: str) -> int | None:
        return self.cmd[m][self.head[m]] if self.head[m] < len(self.cmd[m]) else None

    def waits_on(self, m: str) -> str | None:
        """The queue module ``m``'s next instruction waits on, "" if it is ready,
        None if ``m`` has nothing fetched."""
        k = self.next_of(m)
        if k is None:
            return None
        insn = self.insns[k]
        for flag in POP_FLAGS:
            q = FLAG_QUEUES.get((m, flag))
            if getattr(insn, flag) and self.tokens[q] == 0:
                return q
        if self.token_depth is not None:
            for flag in PUSH_FLAGS:
                q = FLAG_QUEUES.get((m, flag))
                if getattr(insn, flag) and self.tokens[q] >= self.token_depth:
                    return f"{q} (full: {self.token_depth} tokens)"
        return ""

    def ready(self) -> list[str]:
        return [m for m in MODULES if self.waits_on(m) == ""]

    def blocked(self) -> list[tuple[str, int, str]]:
        out = []
        for m in MODULES:
            q = self.waits_on(m)
            if q:
                out.append((m, self.next_of(m), q))
        if self.fetched < len(self.insns) and not self.fetch_ready():
            out.append(("fetch", self.fetched,
                        f"{module_of(self.insns[self.fetched])} command queue (full)"))
        return out


def run(program: Program, dram: np.ndarray | None = None, *, max_steps: int | None = None,
        schedule: str = "round_robin", seed: int = 0, cmd_queue_depth: int | None = None,
        token_queue_depth: int | None = None) -> FunctionalResult:
    """Run ``program`` on a copy of ``dram`` (default ``program.dram_image()``).

    Args:
        program: instruction count, ``insn_base`` and config come from it; the
            instructions themselves are decoded from the DRAM image.
        dram: uint8 DRAM image (1-D); never modified.
        max_steps: stop after this many executed instructions (``finished`` False).
        schedule: "round_robin" or "random" (seeded by ``seed``).
        cmd_queue_depth, token_queue_depth: optional hardware queue limits
            (module docstring).

    Returns:
        FunctionalResult.

    Raises:
        BadProgramError (a subclass from ``sim.errors``) for any contract
        violation, DeadlockError when no module can proceed; ValueError for a
        bad argument.
    """
    if schedule not in ("round_robin", "random"):
        raise ValueError(f"schedule must be 'round_robin' or 'random', not {schedule!r}")
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
    counters = Counters()
    machine = Machine(cfg, counters)
    insns = read_insns(image, program)
    check_structure(insns, machine, image.size)

    sched = _Scheduler(insns, cmd_queue_depth, token_queue_depth)
    rng = _random.Random(seed)
    total, finished = len(insns), True

    def step(m: str) -> None:
        k = sched.next_of(m)
        insn = insns[k]
        for flag in POP_FLAGS:
            if getattr(insn, flag):
                q = FLAG_QUEUES[(m, flag)]
                sched.tokens[q] -= 1
                counters.tokens_popped[q] = counters.tokens_popped.get(q, 0) + 1
        machine.execute(insn, k, image)
        for flag in PUSH_FLAGS:
            if getattr(insn, flag):
                q = FLAG_QUEUES[(m, flag)]
                sched.tokens[q] += 1
                counters.tokens_pushed[q] = counters.tokens_pushed.get(q, 0) + 1
        sched.head[m] += 1
        sched.done += 1
        counters.steps += 1
        counters.insns_by_module[m] = counters.insns_by_module.get(m, 0) + 1

    while sched.done < total:
        if max_steps is not None and counters.steps >= max_steps:
            finished = False
            break
        if schedule == "random":
            agents = (["fetch"] if sched.fetch_ready() else []) + sched.ready()
            if not agents:
                _deadlock(sched)
            a = rng.choice(agents)
            sched.fetch() if a == "fetch" else step(a)
            continue
        progress = False
        while sched.fetch_ready():
            sched.fetch()
            progress = True
        for m in MODULES:
            if max_steps is not None and counters.steps >= max_steps:
                break
            if sched.waits_on(m) == "":
                step(m)
                progress = True
        if not progress:
            _deadlock(sched)

    warnings = []
    leftover = dict(sched.tokens)
    for q, n in leftover.items():
        if n:
            warnings.append(f"{n} token(s) left in queue {q} at the end; the pushes and "
                            "pops of the program do not balance")
    if not finished:
        warnings.append(f"stopped after max_steps={max_steps} with "
                        f"{total - sched.done} instruction(s) left")
    return FunctionalResult(image, counters, leftover, finished, warnings, machine)


def _deadlock(sched: _Scheduler) -> None:
    blocked = sched.blocked()
    parts = [f"{m} at instruction {k} waits on {q}" for m, k, q in blocked]
    first = min((k for _, k, _ in blocked), default=None)
    raise DeadlockError(
        "deadlock: " + "; ".join(parts) + ". No push can ever serve these pops; check the "
        "program's dependency flags", blocked=blocked, insn_index=first, field="tokens",
        value=", ".join(q for _, _, q in blocked), limit="a token to pop")
