"""The cycle-accurate model: a program's exact cycle count, stalls and utilization.

``run(program)`` times a program on the four modules of the accelerator
(fetch, load, compute, store) with their command queues, the four token
queues, the shared memory port and its fixed-priority arbiter, and the DRAM
model of ``sim.dram``; every number comes from ``vta_hw.timing`` and the
``VTAConfig``. It is a discrete-event model: each module is a coroutine that
advances from one event (an instruction's start or retirement, a burst's
grant or its last beat, a queue becoming non-empty or non-full) to the next,
so a GEMM of a million uops costs the same wall time as one of ten.

Values are not computed here: after the timing pass the instructions are
replayed, in the order the model started them, on ``sim.machine.Machine``
(the functional model's datapath), so the final DRAM image equals
``sim.functional.run``'s for every race-free program.

The timing rules, cycle by cycle, as the RTL (``vta_hw/rtl``) does them
(``docs/cycle-model-notes.md`` lists each reading of ``vta_hw.timing`` and
where the two disagreed). Cycle 0 is the cycle ``start`` is high; a value a
module writes in cycle ``t`` is seen by another from cycle ``t + 1``.

- **fetch** enters REQ in cycle 1 and requests a burst of the instruction
  stream (``16 * n`` bytes at ``insn_base``, split by ``DramTiming.bursts``)
  only while its staging queue is empty. An instruction is staged in the
  cycle of its last beat and dispatched from the next cycle, one per
  ``FETCH_CYCLES_PER_INSN``, into its module's command queue when that holds
  fewer than ``CMD_QUEUE_DEPTH`` entries (the config's,
  ``VTAConfig.CMD_QUEUE_DEPTH``); the module sees it a cycle later. Depth 0
  is the rendezvous: dispatched in a cycle its module is IDLE, which takes
  it in that cycle; modelled as a one-entry queue of latency 0 whose slot
  the module frees at RETIRE rather than at the dequeue.
- **load / compute / store**: IDLE dequeues an instruction in cycle ``d``;
  TOKENS, from ``d + INSN_DECODE_CYCLES``, pops every token the instruction
  needs in one cycle ``s`` once all are visible (``TOKEN_LATENCY`` after their
  push); the work starts in ``s``; RETIRE, in cycle ``r``, pushes its tokens
  once every target queue holds fewer than ``TOKEN_QUEUE_DEPTH``; IDLE again
  at ``r + 1``.
- **GEMM / ALU** issue ``N = iter_out * iter_in * (uop_end - uop_bgn)`` uop
  iterations, one per ``*_CYCLES_PER_UOP`` from ``s + 1``; RETIRE comes
  ``*_PIPELINE_DEPTH`` cycles after the last issue. ALU MUL issues one per
  ``ALU_MUL_CYCLES_PER_UOP`` (M) and each iteration occupies M cycles: RETIRE
  at ``s + N*M + ALU_PIPELINE_DEPTH``. ``N == 0`` and FINISH retire at
  ``s + 1``; FINISH's RETIRE cycle ends the run.
- **LOAD / STORE** (the DMA engines): ``x_size == 0`` (or no rows) retires at
  ``s + 2``. Otherwise, from ``s + 1``, each row costs one cycle, a LOAD's pad
  row then one cycle per element, a data row ``x_pad_0`` cycles, its bursts
  one after another (each requested the cycle after the previous one's last
  read beat or write completion), ``x_pad_1`` cycles; then one FIN cycle and
  RETIRE.
- the **memory port** accepts, in any cycle no burst is in flight, the
  request of the highest ``ARBITER_PRIORITY`` module requesting in that
  cycle. A read accepted in cycle ``q`` delivers beat ``k`` at
  ``q + latency + k * interval``; a write sends beat ``k`` at
  ``q + 1 + k * interval`` and completes ``latency`` after its last beat. The
  port is free from the cycle after the last beat (read) or completion (write).

The run's cycle count is ``r_FINISH + 1`` (cycles 0 .. r_FINISH), as the
RTL's CYCLES register. Per module, ``busy + sum(stalls)`` equals the RTL's
BUSY counter (cycles not in IDLE).

Errors: the program checks of ``sim.prologue`` (``BadProgramError``
subclasses), and ``CycleDeadlockError`` when no module can make progress.
"""
from __future__ import annotations

import bisect
import dataclasses
import heapq
from typing import TYPE_CHECKING

import numpy as np

from sim.dram import DramModel
from sim.errors import CycleLimitError, DeadlockError
from sim.functional import warn_unwritten
from sim.prologue import prepare
from vta_hw import isa
from vta_hw import timing as T
from vta_hw.isa import Alu, AluOp, Finish, Gemm, Store
from vta_hw.program import Program
from vta_hw.timing import DramTiming

if TYPE_CHECKING:
    from sim.counters import Counters
    from sim.trace import Trace

MODULES = ("fetch",) + isa.MODULES
QUEUES = isa.QUEUES
#: Stall reasons counted per module (cycles).
STALLS = ("token", "memory", "queue_full")


@dataclasses.dataclass(frozen=True, slots=True)
class TimingParams:
    """The per-unit costs of ``vta_hw.timing``, gathered (cycles, entries).

    ``from_contract()`` reads them from ``vta_hw.timing``, ``for_config(cfg)``
    as well but with the command-queue depth of ``cfg`` (what ``run`` uses by
    default); tests build others to check that every parameter reaches the model.
    """
    fetch_cycles_per_insn: int = T.FETCH_CYCLES_PER_INSN
    cmd_queue_depth: int = T.CMD_QUEUE_DEPTH
    token_latency: int = T.TOKEN_LATENCY
    token_queue_depth: int = T.TOKEN_QUEUE_DEPTH
    insn_decode_cycles: int = T.INSN_DECODE_CYCLES
    gemm_cycles_per_uop: int = T.GEMM_CYCLES_PER_UOP
    gemm_pipeline_depth: int = T.GEMM_PIPELINE_DEPTH
    alu_cycles_per_uop: int = T.ALU_CYCLES_PER_UOP
    alu_pipeline_depth: int = T.ALU_PIPELINE_DEPTH
    arbiter_priority: tuple[str, ...] = T.ARBITER_PRIORITY
    alu_mul_cycles_per_uop: int = T.ALU_MUL_CYCLES_PER_UOP

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if f.name == "arbiter_priority":
                if sorted(v) != sorted(MODULES):
                    raise ValueError(f"arbiter_priority must order {MODULES}, not {v!r}")
            elif not isinstance(v, int) or v < (0 if f.name.endswith("pipeline_depth")
                                                or f.name == "cmd_queue_depth" else 1):
                raise ValueError(f"TimingParams.{f.name} must be a positive int "
                                 f"(pipeline and command-queue depths: >= 0), not {v!r}")

    @classmethod
    def from_contract(cls) -> "TimingParams":
        """The numbers currently in ``vta_hw.timing``."""
        return cls(T.FETCH_CYCLES_PER_INSN, T.CMD_QUEUE_DEPTH, T.TOKEN_LATENCY,
                   T.TOKEN_QUEUE_DEPTH, T.INSN_DECODE_CYCLES, T.GEMM_CYCLES_PER_UOP,
                   T.GEMM_PIPELINE_DEPTH, T.ALU_CYCLES_PER_UOP, T.ALU_PIPELINE_DEPTH,
                   tuple(T.ARBITER_PRIORITY), T.ALU_MUL_CYCLES_PER_UOP)

    @classmethod
    def for_config(cls, cfg) -> "TimingParams":
        """The contract for ``cfg`` (a ``VTAConfig``): its ``CMD_QUEUE_DEPTH``, the rest
        from ``vta_hw.timing``."""
        return dataclasses.replace(cls.from_contract(), cmd_queue_depth=cfg.CMD_QUEUE_DEPTH)


class CycleDeadlockError(DeadlockError):
    """No module of the cycle model can make progress.

    Attributes:
        blocked: ``(module, insn_index, what it waits on)`` per blocked module.
        states: per module, a dict: ``insn`` (index or None), ``waits`` (text),
            ``done`` (instructions retired); plus ``queues``: occupancy per
            command and token queue.
        cycle: the cycle the model stopped at.
    """

    def __init__(self, message: str, *, blocked, states: dict, cycle: int, **kw):
        self.states = states
        self.cycle = cycle
        super().__init__(message, blocked=blocked, **kw)


@dataclasses.dataclass
class ModuleStats:
    """Cycles of one module, by what it did.

    Attributes:
        busy: decoding, working (DMA beats, uop issue, pipeline drain, dispatch).
        idle: nothing to do (empty command queue, or finished).
        stalls: cycles stalled, by reason: "token" (a pop waits for a token),
            "memory" (waiting for the memory port grant), "queue_full" (a push
            into a full token queue; fetch: a full command queue, or with
            ``CMD_QUEUE_DEPTH`` 0 a module that is not idle).
        insns: instructions retired (fetch: dispatched).
    """
    busy: int = 0
    idle: int = 0
    stalls: dict[str, int] = dataclasses.field(default_factory=lambda: dict.fromkeys(STALLS, 0))
    insns: int = 0

    def to_dict(self) -> dict:
        return {"busy": self.busy, "idle": self.idle, "stalls": dict(self.stalls),
                "insns": self.insns}


@dataclasses.dataclass
class CycleResult:
    """Outcome of ``run``.

    Attributes:
        cycles: total cycles, start to FINISH retired (inclusive).
        dram: final DRAM image (uint8), or None when run with ``values=False``.
        modules: ``ModuleStats`` per module ("fetch", "load", "compute", "store").
        gemm_macs: multiply-accumulates done by GEMMs (reset GEMMs do none).
        peak_macs_per_cycle: ``BATCH * BLOCK_IN * BLOCK_OUT``.
        dram_read_bytes, dram_write_bytes: bytes moved on the bus (whole beats).
        peak_dram_bytes_per_cycle: bus bytes per beat interval.
        leftover_tokens: tokens left per queue at the end.
        counters: the functional model's event counters (``sim.counters.Counters``)
            of the value replay, its scheduler's (``steps``, ``insns_by_module``,
            ``tokens_pushed``/``tokens_popped``) taken from the timed schedule; None when
            run with ``values=False``.
        trace: a ``sim.trace.Trace`` when run with ``trace=True``, else None.
    """
    cycles: int
    dram: np.ndarray | None
    modules: dict[str, ModuleStats]
    gemm_macs: int
    peak_macs_per_cycle: int
    dram_read_bytes: int
    dram_write_bytes: int
    peak_dram_bytes_per_cycle: float
    leftover_tokens: dict[str, int]
    counters: "Counters | None" = None
    trace: "Trace | None" = None

    @property
    def gemm_utilization(self) -> float:
        """MACs done / (cycles x peak MACs per cycle), in [0, 1]."""
        return self.gemm_macs / (self.cycles * self.peak_macs_per_cycle) if self.cycles else 0.0

    @property
    def dram_bytes(self) -> int:
        return self.dram_read_bytes + self.dram_write_bytes

    @property
    def dram_bytes_per_cycle(self) -> float:
        """Achieved bandwidth over the whole run, bytes per cycle."""
        return self.dram_bytes / self.cycles if self.cycles else 0.0

    def to_dict(self) -> dict:
        """A JSON-ready dict of every figure (units in the key names)."""
        return {"cycles": self.cycles,
                "modules": {m: s.to_dict() for m, s in self.modules.items()},
                "gemm_macs": self.gemm_macs, "peak_macs_per_cycle": self.peak_macs_per_cycle,
                "gemm_utilization": self.gemm_utilization,
                "dram_read_bytes": self.dram_read_bytes,
                "dram_write_bytes": self.dram_write_bytes,
                "dram_bytes_per_cycle": self.dram_bytes_per_cycle,
                "peak_dram_bytes_per_cycle": self.peak_dram_bytes_per_cycle,
                "leftover_tokens": dict(self.leftover_tokens),
                **({"counters": self.counters.to_dict()} if self.counters is not None else {})}

    def report(self) -> str:
        """A readable multi-line summary."""
        lines = [f"cycles                 {self.cycles}",
                 f"GEMM utilization       {100 * self.gemm_utilization:.2f} % "
                 f"({self.gemm_macs} MACs, peak {self.peak_macs_per_cycle}/cycle)",
                 f"DRAM                   {self.dram_read_bytes} B read, "
                 f"{self.dram_write_bytes} B written, {self.dram_bytes_per_cycle:.3f} B/cycle "
                 f"(peak {self.peak_dram_bytes_per_cycle:g})",
                 f"{'module':<8} {'insns':>7} {'busy':>10} {'idle':>10} "
                 + " ".join(f"{'stall ' + s:>16}" for s in STALLS)]
        for m, s in self.modules.items():
            lines.append(f"{m:<8} {s.insns:>7} {s.busy:>10} {s.idle:>10} "
                         + " ".join(f"{s.stalls[r]:>16}" for r in STALLS))
        for q, n in self.leftover_tokens.items():
            if n:
                lines.append(f"warning: {n} token(s) left in queue {q}")
        return "\n".join(lines)


# ---------------------------------------------------------------------------------
# queues and the memory port


class _Fifo:
    """A queue whose pushes and pops carry their cycle; what a cycle sees is
    derived from those times, so the order events of one cycle run in never matters.

    An item pushed in cycle ``p`` can be popped from ``p + latency``; the
    producer sees a slot freed by a pop in cycle ``q`` from ``q + 1``.
    """
    __slots__ = ("name", "depth", "latency", "items", "push_t", "pop_t", "cons", "prod", "sim")

    def __init__(self, sim: "_Sim", name: str, depth: int, latency: int):
        self.sim, self.name, self.depth, self.latency = sim, name, depth, latency
        self.items: list = []
        self.push_t: list[int] = []
        self.pop_t: list[int] = []
        self.cons = None  # parked consumer coroutine
        self.prod = None  # parked producer coroutine

    def ready_at(self) -> int | None:
        """Cycle from which the head can be popped, or None if nothing is pushed yet."""
        n = len(self.pop_t)
        return self.push_t[n] + self.latency if n < len(self.push_t) else None

    def head(self):
        """The item ``pop`` would return, left in the queue."""
        return self.items[len(self.pop_t)]

    def pop(self, t: int):
        item = self.head()
        self.pop_t.append(t)
        if self.prod is not None:
            self.sim.at(t + 1, self.prod)
            self.prod = None
        return item

    def space_at(self, t: int) -> int | None:
        """First cycle >= ``t`` a push fits, from the pops known so far; None if
        only a pop not yet made can make room (the producer then parks)."""
        popped = bisect.bisect_left(self.pop_t, t)
        if bisect.bisect_left(self.push_t, t) - popped < self.depth:
            return t
        if popped < len(self.pop_t):  # a pop in cycle >= t: room from the cycle after
            return self.pop_t[popped] + 1
        return None

    def push(self, t: int, item=None) -> None:
        self.items.append(item)
        self.push_t.append(t)
        if self.cons is not None:
            self.sim.at(t + self.latency, self.cons)
            self.cons = None

    def occupancy(self, t: int) -> int:
        return bisect.bisect_right(self.push_t, t) - bisect.bisect_right(self.pop_t, t)


class _Arbiter:
    """The memory port: one burst at a time, fixed priority among same-cycle requests."""
    __slots__ = ("sim", "dram", "rank", "pending", "free_at", "decide_at",
                 "read_bytes", "write_bytes", "bursts")

    def __init__(self, sim: "_Sim", dram: DramModel, priority: tuple[str, ...]):
        self.sim, self.dram = sim, dram
        self.rank = {m: k for k, m in enumerate(priority)}
        self.pending: dict[str, tuple] = {}
        self.free_at = 0
        self.decide_at: int | None = None
        self.read_bytes = self.write_bytes = 0
        self.bursts: list | None = None  # (module, grant, end, beats, write) when tracing

    def request(self, mod: "_Mod", beats: int, write: bool, at_grant: bool = False) -> None:
        """``mod`` asks for a burst in the current cycle; it is resumed (with
        ``mod.grant`` set) in the grant cycle if ``at_grant``, else in the cycle
        after the burst's last event."""
        t = self.sim.now
        self.pending[mod.name] = (mod, t, beats, write, at_grant)
        when = max(t, self.free_at)
        if self.decide_at is None or when < self.decide_at:
            self.decide_at = when
            self.sim.at(when, self, phase=1)

    def decide(self) -> None:
        t = self.sim.now
        if t != self.decide_at:
            return  # superseded
        self.decide_at = None
        name = min(self.pending, key=self.rank.__getitem__)
        mod, _, beats, write, at_grant = self.pending.pop(name)
        end = self.dram.busy_until(t, beats, write)
        nbytes = beats * self.dram.bus_bytes
        if write:
            self.write_bytes += nbytes
        else:
            self.read_bytes += nbytes
        if self.bursts is not None:
            self.bursts.append((name, t, end, beats, write))
        mod.grant = t
        mod.enter("busy", t)
        self.free_at = end + 1
        self.sim.at(t if at_grant else end + 1, mod.proc)
        if self.pending:
            self.decide_at = self.free_at
            self.sim.at(self.free_at, self, phase=1)


# ---------------------------------------------------------------------------------
# modules


class _Mod:
    """State of one module: where it is, and its counters."""
    __slots__ = ("name", "proc", "stats", "state", "since", "insn", "waits", "grant", "spans")

    def __init__(self, name: str):
        self.name = name
        self.proc = None
        self.stats = ModuleStats()
        self.state = "idle"
        self.since = 0
        self.insn: int | None = None
        self.waits = "its command queue"
        self.grant = 0
        self.spans: list | None = None

    def enter(self, state: str, t: int) -> None:
        """Switch to ``state`` ("busy", "idle" or a stall reason) at cycle ``t``."""
        if state == self.state:
            return
        self._charge(t)
        self.state = state
        self.since = t

    def _charge(self, t: int) -> None:
        n = t - self.since
        if n > 0:
            if self.state == "busy":
                self.stats.busy += n
            elif self.state == "idle":
                self.stats.idle += n
            else:
                self.stats.stalls[self.state] += n


class _Sim:
    """The event engine and the four module coroutines."""

    def __init__(self, program: Program, insns: list, params: TimingParams,
                 dram_timing: DramTiming, trace: bool, max_cycles: int | None):
        cfg = program.config
        self.cfg, self.program, self.insns, self.p = cfg, program, insns, params
        self.max_cycles = max_cycles
        self.now = 0
        self.heap: list = []
        self.seq = 0
        self.parked: set = set()  # coroutines waiting for another module, not for a cycle
        self.dram = DramModel(dram_timing, cfg.bus_bytes)
        self.arb = _Arbiter(self, self.dram, params.arbiter_priority)
        self.mods = {m: _Mod(m) for m in MODULES}
        # depth 0, the rendezvous: one slot, taken in the dispatch cycle, freed by RETIRE
        rendezvous = params.cmd_queue_depth == 0
        self.cmdq = {m: _Fifo(self, f"{m} commands", max(params.cmd_queue_depth, 1),
                              T.CMD_RENDEZVOUS_LATENCY if rendezvous else T.CMD_QUEUE_LATENCY)
                     for m in MODULES[1:]}
        self.tokq = {q: _Fifo(self, q, params.token_queue_depth, params.token_latency)
                     for q in QUEUES}
        self.route = [isa.module_of(i) for i in insns]
        self.starts: list[tuple[int, int, int]] = []  # (pop cycle, module rank, index)
        self.finish_at: int | None = None
        self.start_cycle = 0
        self.gemm_macs = 0
        self.token_events: list | None = [] if trace else None
        self.gemm_windows: list | None = [] if trace else None
        if trace:
            self.arb.bursts = []
            for m in self.mods.values():
                m.spans = []

    def at(self, t: int, proc, phase: int = 0) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (t, phase, self.seq, proc))
        self.parked.discard(proc)

    # ---- the engine ----------------------------------------------------------------
    def run(self) -> None:
        procs = [self._fetch(self.mods["fetch"])] + [
            self._module(self.mods[m], rank) for rank, m in enumerate(MODULES[1:], 1)]
        for mod, proc in zip(self.mods.values(), procs):
            mod.proc = proc
            self.at(0, proc)
        heap, arb, limit = self.heap, self.arb, self.max_cycles
        while heap and self.finish_at is None:
            t, phase, _, proc = heapq.heappop(heap)
            if limit is not None and t > limit:
                self.now = limit
                self._out_of_cycles(limit)
            self.now = t
            if phase:
                arb.decide()
                continue
            try:
                nxt = proc.send(None)
            except StopIteration:
                continue
            if nxt is not None:
                self.at(nxt, proc)
            else:
                self.parked.add(proc)
        if self.finish_at is None:
            self._stuck("no module can make progress")
        end = self.finish_at + 1
        for m in self.mods.values():
            m._charge(end)
            m.since = end

    def _out_of_cycles(self, limit: int):
        retired = {name: m.stats.insns for name, m in self.mods.items()}
        done = ", ".join(f"{k} {v}" for k, v in retired.items())
        raise CycleLimitError(
            f"the cycle limit max_cycles={limit} was reached before FINISH retired (instructions "
            f"retired: {done}); the program was still running: raise the limit "
            "(Device(..., max_cycles=N), load_module(..., max_cycles=N)) or pass None for none",
            cycle=limit, retired=retired, field="max_cycles", value=limit, limit="FINISH retired")

    def _stuck(self, why: str):
        states, blocked = {}, []
        for name, m in self.mods.items():
            parked = m.proc in self.parked
            states[name] = {"insn": m.insn, "waits": m.waits if parked else None,
                            "state": m.state, "done": m.stats.insns}
            if parked and m.insn is not None:
                blocked.append((name, m.insn, m.waits))
        t = self.now
        states["queues"] = {q.name: q.occupancy(t) for q in
                            list(self.cmdq.values()) + list(self.tokq.values())}
        parts = [f"{m} at instruction {k} waits on {w}" for m, k, w in blocked]
        occ = ", ".join(f"{k}={v}" for k, v in states["queues"].items())
        raise CycleDeadlockError(
            f"cycle {t}: {why}: " + ("; ".join(parts) or "no module is blocked") +
            f". Queue occupancy: {occ}. Check the program's dependency flags and queue depths",
            blocked=blocked, states=states, cycle=t,
            insn_index=min((k for _, k, _ in blocked), default=None), field="tokens",
            value=", ".join(w for _, _, w in blocked), limit="progress")

    # ---- the DMA engines ---------------------------------------------------------------
    def _dma(self, mod: _Mod, insn, t: int):
        """A LOAD (``vta_hw/rtl/dma_read.py``) or STORE (``dma_write.py``) whose
        engine starts working in cycle ``t``; returns the cycle of its FIN.

        Each row costs one ROW cycle; a LOAD's pad row then writes its ``W``
        zeros, one per cycle; a data row writes ``x_pad_0`` zeros, requests
        its bursts one after the other (each in the cycle after the previous
        one's last beat, or write completion), then writes ``x_pad_1`` zeros.
        """
        write = isinstance(insn, Store)
        if write:
            nrows, top, width = insn.y_size, 0, 0
            x_pad_0 = x_pad_1 = 0
        else:
            nrows = insn.y_pad_0 + insn.y_size + insn.y_pad_1
            top, x_pad_0, x_pad_1 = insn.y_pad_0, insn.x_pad_0, insn.x_pad_1
            width = x_pad_0 + insn.x_size + x_pad_1
        if insn.x_size == 0 or nrows == 0:
            return t
        rows = self.dram.rows(self.cfg.elem_bytes(insn.mem.name.lower()), insn.dram_base,
                              insn.y_size, insn.x_size, insn.x_stride)
        arb = self.arb
        for y in range(nrows):
            t += 1  # ROW
            if not top <= y < top + insn.y_size:
                t += width
                continue
            t += x_pad_0
            for beats in rows[y - top]:
                if t > self.now:
                    yield t
                mod.waits = "the memory port"
                mod.enter("memory", t)
                arb.request(mod, beats, write)
                yield None
                t = self.now
            t += x_pad_1
        return t

    # ---- fetch ----------------------------------------------------------------------
    def _fetch(self, mod: _Mod):
        """Fetch (``vta_hw/rtl/fetch.py``): a reader that requests a burst only
        while the staging queue is empty, and a dispatcher that moves one staged
        instruction per cycle into its module's command queue."""
        n = len(self.insns)
        base = self.program.insn_base
        bus = self.cfg.bus_bytes
        fcyc = self.p.fetch_cycles_per_insn
        arb, cmdq, route, dram = self.arb, self.cmdq, self.route, self.dram
        rendezvous = self.p.cmd_queue_depth == 0
        beats_per_insn = max(1, 16 // bus)
        insns_per_beat = max(1, bus // 16)
        nxt = 0           # next instruction to dispatch
        beat_no = 0       # beats of the stream received so far
        d_last = nat_last = -1  # last dispatch cycle, and what it would be with room everywhere
        entry = self.start_cycle + 1  # the reader enters REQ
        for addr, beats in dram.bursts(base, 16 * n):
            # REQ raises cmd_valid once the staging queue is empty
            req = max(entry, d_last + 1)
            natural = max(entry, nat_last + 1)
            mod.enter("busy", entry)
            if req > natural:  # the dispatcher was held up by a full command queue
                mod.waits = "a full command queue to take staged instructions"
                mod.enter("queue_full", natural)
            if req > self.now:
                yield req
            mod.insn = nxt
            mod.waits = "the memory port"
            mod.enter("memory", req)
            arb.request(mod, beats, False, at_grant=True)
            yield None
            first, last = dram.read_beats(mod.grant, beats)
            interval = dram.beat_interval
            beat_no += beats
            got = min(n, beat_no * insns_per_beat // beats_per_insn)
            while nxt < got:
                # the beat that completes instruction nxt enters it into staging
                end_beat = (nxt + 1) * beats_per_insn // insns_per_beat - 1
                staged = first + (end_beat - (beat_no - beats)) * interval
                nat_last = max(staged + 1, nat_last + fcyc)
                t = max(staged + 1, d_last + fcyc)
                q = cmdq[route[nxt]]
                while True:
                    room = q.space_at(t)
                    if room == t:
                        break
                    if t > self.now:  # pops before t may not be known yet: catch up
                        yield t
                        continue
                    mod.insn, mod.waits = nxt, (f"{route[nxt]} to be idle (no command queue)"
                                                if rendezvous else
                                                f"room in the {q.name} queue (full)")
                    if room is None:
                        q.prod = mod.proc
                        yield None
                    else:
                        yield room
                    t = self.now
                q.push(t, nxt)
                if mod.spans is not None:
                    mod.spans.append((nxt, staged, t, t + 1))
                d_last = t
                nxt += 1
                mod.stats.insns += 1
            entry = last + 1
        # the last REQ finds no beats left: one cycle, then IDLE
        mod.insn = None
        mod.waits = "nothing (all instructions dispatched)"
        mod.enter("idle", entry + 1)

    # ---- load, compute, store ---------------------------------------------------------
    def _module(self, mod: _Mod, rank: int):
        name = mod.name
        p, cfg = self.p, self.cfg
        cmdq, insns = self.cmdq[name], self.insns
        rendezvous = p.cmd_queue_depth == 0  # the module frees the slot at RETIRE
        pops_of = {f: self.tokq[q] for (m, f), q in isa.FLAG_QUEUES.items()
                   if m == name and f in isa.POP_FLAGS}
        pushes_of = {f: self.tokq[q] for (m, f), q in isa.FLAG_QUEUES.items()
                     if m == name and f in isa.PUSH_FLAGS}
        macs_per_uop = cfg.macs_per_cycle
        tokens = self.token_events
        free = 0  # first cycle the next instruction may be taken
        while True:
            # -- IDLE: take the next instruction (the dequeue cycle is still IDLE)
            mod.insn, mod.waits = None, "its command queue"
            mod.enter("idle", max(self.now, free))
            while True:
                ready = cmdq.ready_at()
                if ready is None:
                    cmdq.cons = mod.proc
                    yield None
                    continue
                ready = max(ready, free)
                if ready > self.now:
                    yield ready
                    continue
                break
            d = self.now
            k = cmdq.head() if rendezvous else cmdq.pop(d)
            insn = insns[k]
            mod.insn = k
            # -- TOKENS: from the cycle after the dequeue, pop every token in one cycle
            mod.enter("busy", d + 1)
            s = d + p.insn_decode_cycles
            pops = [q for f, q in pops_of.items() if getattr(insn, f)]
            if pops:
                if s > self.now:
                    yield s
                while True:
                    blocked = None
                    ready = self.now
                    for q in pops:
                        r = q.ready_at()
                        if r is None:
                            blocked = q
                            break
                        ready = max(ready, r)
                    if blocked is None and ready == self.now:
                        break
                    mod.waits = f"a token in {(blocked or q).name}"
                    mod.enter("token", self.now)
                    if blocked is not None:
                        blocked.cons = mod.proc
                        yield None
                    else:
                        yield ready
                s = self.now
                mod.enter("busy", s)
                for q in pops:
                    q.pop(s)
                    if tokens is not None:
                        tokens.append((q.name, len(q.pop_t) - 1, "pop", name, s))
            self.starts.append((s, rank, k))
            # -- work, started in cycle s; r is the RETIRE cycle
            if isinstance(insn, (Gemm, Alu)):
                n = insn.iter_out * insn.iter_in * (insn.uop_end - insn.uop_bgn)
                w = s + 1
                if isinstance(insn, Gemm):
                    ii, depth = p.gemm_cycles_per_uop, p.gemm_pipeline_depth
                    if not insn.reset:
                        self.gemm_macs += n * macs_per_uop
                        if self.gemm_windows is not None and n:
                            self.gemm_windows.append((w, w + n * ii, n * macs_per_uop))
                    tail = 0
                elif insn.alu_op == AluOp.MUL:
                    # each MUL iteration occupies ii cycles, the last one's included
                    ii, depth = p.alu_mul_cycles_per_uop, p.alu_pipeline_depth
                    tail = ii - 1
                else:
                    ii, depth, tail = p.alu_cycles_per_uop, p.alu_pipeline_depth, 0
                # EXEC issues from s + 1; RETIRE *_PIPELINE_DEPTH after the last issue
                r = w + (n - 1) * ii + depth + tail if n > 0 else s + 1
            elif isinstance(insn, Finish):
                r = s + 1
            else:  # RETIRE follows the DMA engine's FIN cycle
                r = (yield from self._dma(mod, insn, s + 1)) + 1
            # -- retire: push tokens
            if r > self.now:
                yield r
            pushes = [q for f, q in pushes_of.items() if getattr(insn, f)]
            for q in pushes:
                while True:
                    room = q.space_at(self.now)
                    if room == self.now:
                        break
                    mod.waits = f"room in {q.name} (full)"
                    mod.enter("queue_full", self.now)
                    if room is None:
                        q.prod = mod.proc
                        yield None
                    else:
                        yield room
            mod.enter("busy", self.now)
            if rendezvous:
                cmdq.pop(self.now)
            for q in pushes:
                q.push(self.now)
                if tokens is not None:
                    tokens.append((q.name, len(q.push_t) - 1, "push", name, self.now))
            mod.stats.insns += 1
            if mod.spans is not None:
                mod.spans.append((k, d, s, self.now + 1))
            if isinstance(insn, Finish):
                self.finish_at = self.now
                return
            free = self.now + 1


def run(program: Program, dram: np.ndarray | None = None, *,
        dram_timing: DramTiming | None = None, params: TimingParams | None = None,
        values: bool = True, trace: bool = False,
        max_cycles: int | None = None, strict_sram: bool = False) -> CycleResult:
    """Time ``program`` cycle by cycle (rules in the module docstring).

    Args:
        program: the program; its instructions are decoded from the DRAM image.
        dram: uint8 DRAM image (default ``program.dram_image()``); never modified.
        dram_timing: the DRAM model (default ``DramTiming()``, as the RTL testbench).
        params: unit costs (default ``TimingParams.for_config(program.config)``).
        values: also compute the final DRAM image (through ``sim.machine``);
            False gives timing only, faster.
        trace: keep per-instruction spans, token events and bursts
            (``result.trace``, a ``sim.trace.Trace``).
        max_cycles: stop with ``sim.errors.CycleLimitError`` if FINISH has not retired by
            then (a bound on runaway runs; a deadlock needs none: when every
            module waits on another and no event is pending, the run stops at
            once with each module's instruction, what it waits on, and every
            queue's occupancy).
        strict_sram: with ``values``, a read of SRAM the program has not written
            raises ``UnwrittenReadError``; without it, it is reported as an
            ``UnwrittenReadWarning`` naming the instruction (``sim.functional``).

    Returns:
        CycleResult.

    Raises:
        BadProgramError subclasses (as ``sim.functional.run``) for a bad
        program; CycleDeadlockError when no module can progress; CycleLimitError when
        ``max_cycles`` passes first.
    """
    cfg = program.config
    image, machine, insns = prepare(program, dram, strict_sram=strict_sram)
    sim = _Sim(program, insns, params or TimingParams.for_config(cfg),
               dram_timing or DramTiming(), trace, max_cycles)
    sim.run()
    cycles = sim.finish_at + 1
    if values:
        order = [k for _, _, k in sorted(sim.starts)]
        started = set(order)
        # Instructions still queued when FINISH retired (a program that does not
        # wait for them) run after it, as the hardware keeps going.
        order += [k for k in range(len(insns)) if k not in started]
        for k in order:
            machine.execute(insns[k], k, image)
        warn_unwritten(machine)
        # what the functional model's scheduler counts, here from the timed schedule
        c = machine.counters
        c.steps = len(order)
        c.insns_by_module = {m: sim.mods[m].stats.insns for m in isa.MODULES
                             if sim.mods[m].stats.insns}
        c.tokens_pushed = {q: len(f.push_t) for q, f in sim.tokq.items() if f.push_t}
        c.tokens_popped = {q: len(f.pop_t) for q, f in sim.tokq.items() if f.pop_t}
    leftover = {q: len(f.push_t) - len(f.pop_t) for q, f in sim.tokq.items()}
    result = CycleResult(
        cycles=cycles, dram=image if values else None,
        modules={m: sim.mods[m].stats for m in MODULES}, gemm_macs=sim.gemm_macs,
        peak_macs_per_cycle=cfg.macs_per_cycle, dram_read_bytes=sim.arb.read_bytes,
        dram_write_bytes=sim.arb.write_bytes,
        peak_dram_bytes_per_cycle=sim.dram.peak_bytes_per_cycle(), leftover_tokens=leftover,
        counters=machine.counters if values else None)
    if trace:
        from sim.trace import Trace
        result.trace = Trace.from_sim(sim, cycles)
    return result
