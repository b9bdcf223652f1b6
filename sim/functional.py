"""The golden model: runs a ``Program`` on its DRAM image, no timing.

``run(program, dram)`` reads the instructions from the DRAM image at
``program.insn_base`` (``len(program.insns)`` 16-byte words), routes them in
program order to the three modules, and executes them in a token-respecting
order until every module is drained:

- routing and token queues: ``vta_hw.isa`` (``module_of``, ``FLAG_QUEUES``);
  the queues are counters, unbounded by default; a flag its module does not
  have is an error. An instruction waits until all its pops can be served,
  pops, executes, then pushes.
- schedule ``"round_robin"`` (the default): turns go load, compute, store,
  each running at most one ready instruction; a round with no progress while
  instructions remain is a deadlock. ``"random"`` (seeded by ``seed``) runs
  a random ready module each step: any race-free program gives the same
  final DRAM image under every schedule.
- the program must end with exactly one FINISH. Tokens left in the queues
  at the end are reported (``leftover_tokens``, ``warnings``).
- SRAM starts zeroed; a read of SRAM the program has not written (undefined
  by ``vta_hw.isa``'s SRAM contract) is reported with its instruction index
  in ``warnings`` and as an ``UnwrittenReadWarning`` (``strict_sram``: an
  ``UnwrittenReadError``).

Hardware queue limits (default: the program's, as every execution of it):
``cmd_queue_depth`` (default ``program.config.CMD_QUEUE_DEPTH``) bounds each
module's command queue: fetch dispatches in program order and stalls while
the next instruction's module holds its current instruction plus that many
queued ones (depth 0: the rendezvous, one instruction in the module), as
``vta_hw.timing`` states and ``sim.cycle`` times it. ``token_queue_depth``
(default ``vta_hw.timing.TOKEN_QUEUE_DEPTH``) bounds each token queue: an
instruction whose push would overflow a queue waits. So a program that
deadlocks in hardware deadlocks here too; ``None`` lifts a limit (a
what-if, not the hardware).

Before anything runs, ``sim.prologue.prepare`` (shared with ``sim.cycle``)
checks the program's static rules and decodes it from the DRAM image.

Instruction semantics: ``sim.machine.Machine``. Errors: ``sim.errors``.
Race detection for any program: ``sim.races``.
"""
from __future__ import annotations

import dataclasses
import random as _random
import warnings as _warnings

import numpy as np

from sim.counters import Counters
from sim.errors import DeadlockError, UnwrittenReadWarning
from sim.machine import Machine
from sim.prologue import prepare
from vta_hw import timing
from vta_hw.isa import FLAG_QUEUES, MODULES, POP_FLAGS, PUSH_FLAGS, QUEUES, module_of
from vta_hw.program import Program


@dataclasses.dataclass
class FunctionalResult:
    """Outcome of ``run``.

    Attributes:
        dram: the final DRAM image (a new uint8 array, same size as the input).
        counters: ``sim.counters.Counters`` (``to_dict()`` for a plain dict).
        leftover_tokens: tokens left per queue ("l2c", "c2l", "c2s", "s2c").
        finished: every instruction (FINISH included) ran; False only when
            ``max_steps`` stopped the run early.
        warnings: human-readable notes (leftover tokens, early stop, reads of SRAM
            the program had not written).
        machine: the final SRAM state (``sim.machine.Machine``).
    """
    dram: np.ndarray
    counters: Counters
    leftover_tokens: dict[str, int]
    finished: bool
    warnings: list[str]
    machine: Machine


class _Scheduler:
    """Fetch, command queues, token queues and the choice of who runs next."""

    def __init__(self, insns: list, cmd_depth: int | None, token_depth: int | None):
        """``cmd_depth``: the hardware's command-queue depth (the module's own instruction
        comes on top); ``token_depth``: entries per token queue; None: unbounded."""
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
        # the module's current instruction stays in ``cmd`` until it retires
        return self.cmd_depth is None or len(self.cmd[m]) - self.head[m] < self.cmd_depth + 1

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
        schedule: str = "round_robin", seed: int = 0,
        cmd_queue_depth: int | None | str = "config",
        token_queue_depth: int | None = timing.TOKEN_QUEUE_DEPTH,
        machine: Machine | None = None, strict_sram: bool = False) -> FunctionalResult:
    """Run ``program`` on a copy of ``dram`` (default ``program.dram_image()``).

    Args:
        program: instruction count, ``insn_base`` and config come from it; the
            instructions themselves are decoded from the DRAM image.
        dram: uint8 DRAM image (1-D); never modified.
        max_steps: stop after this many executed instructions (``finished`` False).
        schedule: "round_robin" or "random" (seeded by ``seed``).
        cmd_queue_depth: entries per command queue; "config" (the default):
            ``program.config.CMD_QUEUE_DEPTH``; None: unbounded (module docstring).
        token_queue_depth: entries per token queue (default the hardware's);
            None: unbounded.
        machine: start from this machine's SRAMs (the hardware keeps them between
            programs run without reset; ``driver.rtl.reference``), updated in place;
            default: five empty SRAMs.
        strict_sram: raise ``UnwrittenReadError`` on a read of SRAM the program has
            not written, instead of the warning.

    Returns:
        FunctionalResult.

    Raises:
        BadProgramError (a subclass from ``sim.errors``) for any contract
        violation, DeadlockError when no module can proceed (the message names
        each blocked module's instruction and the queue it waits on, a full
        command queue included); ValueError for a bad argument.
    """
    if schedule not in ("round_robin", "random"):
        raise ValueError(f"schedule must be 'round_robin' or 'random', not {schedule!r}")
    if cmd_queue_depth == "config":
        cmd_queue_depth = program.config.CMD_QUEUE_DEPTH
    for name, v in (("cmd_queue_depth", cmd_queue_depth), ("token_queue_depth", token_queue_depth)):
        if v is not None and (not isinstance(v, int) or v < 0):
            raise ValueError(f"{name} must be an int >= 0 or None (unbounded), not {v!r}")
    counters = Counters()
    image, machine, insns = prepare(program, dram, counters, machine, strict_sram)

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
    warnings += warn_unwritten(machine)
    return FunctionalResult(image, counters, leftover, finished, warnings, machine)


def _deadlock(sched: _Scheduler) -> None:
    blocked = sched.blocked()
    parts = [f"{m} at instruction {k} waits on {q}" for m, k, q in blocked]
    first = min((k for _, k, _ in blocked), default=None)
    raise DeadlockError(
        "deadlock: " + "; ".join(parts) + ". No push can ever serve these pops; check the "
        "program's dependency flags and the queue depths (command queues: "
        f"{_depth(sched.cmd_depth)}, token queues: {_depth(sched.token_depth)})",
        blocked=blocked, insn_index=first, field="tokens",
        value=", ".join(q for _, _, q in blocked), limit="a token to pop")


def warn_unwritten(machine: Machine) -> list[str]:
    """The run's reads of unwritten SRAM (``sim.written``), each also issued as an
    ``UnwrittenReadWarning``; returns the lines."""
    lines = machine.written.warnings()
    for line in lines:
        _warnings.warn(line, UnwrittenReadWarning, stacklevel=3)
    return lines


def _depth(d: int | None) -> str:
    return "unbounded" if d is None else f"{d} entries"
