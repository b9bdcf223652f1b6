"""Race detector: finds cross-module accesses that the dependency tokens leave unordered.

A program is race-free when every pair of accesses to the same location by
two different modules, at least one of them a write, is ordered by
happens-before: module program order plus token edges (a pop happens after
the push it matches; queues are FIFO, so the k-th pop of a queue matches its
k-th push). Race-free programs give the same final DRAM image under every
token-respecting timing, so the RTL, the cycle model and ``sim.functional``
agree on them; a racy one may differ between them.

Checked locations (the only ones shared between modules):

- INP and WGT SRAM entries (written by load-module LOADs, read by GEMM),
- OUT SRAM entries (written by GEMM/ALU, read by STORE),
- DRAM bytes (written by STORE, read by LOADs of the load and compute modules,
  and by fetch: a STORE into the instruction stream is always a race, reported
  with ``first == ("fetch", -1)``).

``find_races(program)`` runs the program once (round robin, as
``sim.functional.run``) with vector clocks: each instruction's clock holds,
per module, the last instruction of that module known complete before it
starts; a token carries its pusher's clock. A pair is flagged where the later
access's clock does not cover the earlier one. ACC and UOP SRAMs are private
to compute and never race.
"""
from __future__ import annotations

import collections
import dataclasses

import numpy as np

from sim import functional as fn
from sim.loops import entries
from sim.machine import Machine
from sim.prologue import prepare
from vta_hw import isa
from vta_hw.isa import Alu, Gemm, Load, MemId, Store
from vta_hw.program import Program


@dataclasses.dataclass(frozen=True)
class Race:
    """Two unordered accesses: ``kind`` "RAW", "WAR" or "WAW" on ``resource``
    ("inp", "wgt", "out" SRAM entries, or "dram" bytes) at ``location`` (the
    lowest conflicting entry or byte), between ``first`` and ``second``
    (``(module, insn_index)``, in program order; the kind is named in that order)."""
    kind: str
    resource: str
    location: int
    first: tuple[str, int]
    second: tuple[str, int]

    def __str__(self) -> str:
        return (f"{self.kind} race on {self.resource}[{self.location}] between "
                f"{self.first[0]} instruction {self.first[1]} and {self.second[0]} instruction "
                f"{self.second[1]}: no token chain orders them")


def accesses(insn, machine: Machine, index: int) -> tuple[list, list]:
    """``(reads, writes)`` of ``insn`` (instruction ``index``) on shared locations: lists
    of ``(resource, int array of entries or DRAM bytes)``, given the machine's current
    uop SRAM (GEMM/ALU: the distinct indices, after checking the loop bounds from the
    extents, so a huge loop costs no more than its SRAM).

    Raises:
        sim.errors.SramIndexError: a GEMM/ALU iteration reaches past its SRAM."""
    cfg = machine.cfg
    if isinstance(insn, (Load, Store)):
        if insn.x_size == 0:
            return [], []
        mem = insn.mem.name.lower()
        eb = cfg.elem_bytes(mem)
        rows = np.arange(insn.y_size)[:, None] * insn.x_stride + np.arange(insn.x_size)
        dram = ((insn.dram_base + rows)[..., None] * eb + np.arange(eb)).reshape(-1)
        if isinstance(insn, Store):
            sram = np.arange(insn.sram_base, insn.sram_base + insn.y_size * insn.x_size)
            return [("out", sram)], [("dram", dram)]
        if insn.mem in (MemId.INP, MemId.WGT):
            width = insn.x_pad_0 + insn.x_size + insn.x_pad_1
            n = (insn.y_pad_0 + insn.y_size + insn.y_pad_1) * width
            return [("dram", dram)], [(mem, np.arange(insn.sram_base, insn.sram_base + n))]
        return [("dram", dram)], []
    if isinstance(insn, (Gemm, Alu)):
        if insn.iter_out * insn.iter_in * (insn.uop_end - insn.uop_bgn) == 0:
            return [], []
        machine.check_loops(insn, index)
        uops = machine.uop[insn.uop_bgn:insn.uop_end]
        writes = [("out", entries(insn, uops, "dst"))]
        if isinstance(insn, Gemm) and not insn.reset:
            return [("inp", entries(insn, uops, "src")), ("wgt", entries(insn, uops, "wgt"))], writes
        return [], writes
    return [], []


def find_races(program: Program, dram: np.ndarray | None = None) -> list[Race]:
    """All races of ``program`` (one per resource and instruction pair), in detection order.

    Raises:
        the ``sim.prologue`` errors of a bad program (it is run once).
    """
    cfg = program.config
    image, machine, insns = prepare(program, None if dram is None else np.asarray(dram, np.uint8))
    sched = fn._Scheduler(insns, None, None)
    while sched.fetch_ready():
        sched.fetch()

    mods = isa.MODULES
    clock = {m: {n: -1 for n in mods} for m in mods}  # of each module's next instruction
    seq = {m: 0 for m in mods}
    tokq = {q: collections.deque() for q in isa.QUEUES}
    sizes = {"inp": cfg.inp_depth, "wgt": cfg.wgt_depth, "out": cfg.out_depth,
             "dram": image.size}
    # per resource, per module: last write / last read (seq, insn index) per location
    last_w = {r: {m: np.full(n, -1) for m in mods} for r, n in sizes.items()}
    last_r = {r: {m: np.full(n, -1) for m in mods} for r, n in sizes.items()}
    idx_of = {m: [] for m in mods}  # seq -> insn index
    races: dict[tuple, Race] = {}
    stream = (program.insn_base, program.insn_base + 16 * len(insns))

    def check(kind, res, loc, table, m, vc, k):
        for other in mods:
            if other == m:
                continue
            seen = table[res][other][loc]
            bad = seen > vc[other]
            if bad.any():
                j = int(np.argmax(bad))
                first = idx_of[other][int(seen[j])]
                a, b = (other, first), (m, k)
                if first > k:  # report in program order: the earlier instruction first
                    a, b, kind_po = b, a, {"RAW": "WAR", "WAR": "RAW"}.get(kind, kind)
                else:
                    kind_po = kind
                key = (res, a[1], b[1])
                if key not in races:
                    races[key] = Race(kind_po, res, int(loc[j]), a, b)

    while sched.done < len(insns):
        progress = False
        for m in mods:
            if sched.waits_on(m) != "":
                continue
            k = sched.next_of(m)
            insn = insns[k]
            vc = clock[m]
            for flag in isa.POP_FLAGS:
                if getattr(insn, flag):
                    q = isa.FLAG_QUEUES[(m, flag)]
                    sched.tokens[q] -= 1
                    for n, s in tokq[q].popleft().items():
                        vc[n] = max(vc[n], s)
            reads, writes = accesses(insn, machine, k)
            for res, loc in writes:
                hit = loc[(loc >= stream[0]) & (loc < stream[1])] if res == "dram" else loc[:0]
                if hit.size:  # fetch reads the stream at a time no token orders
                    races[("fetch", k)] = Race("WAR", "dram", int(hit[0]), ("fetch", -1), (m, k))
            for res, loc in reads:
                check("RAW", res, loc, last_w, m, vc, k)
            for res, loc in writes:
                check("WAR", res, loc, last_r, m, vc, k)
                check("WAW", res, loc, last_w, m, vc, k)
            machine.execute(insn, k, image)
            s = seq[m]
            idx_of[m].append(k)
            for res, loc in reads:
                last_r[res][m][loc] = s
            for res, loc in writes:
                last_w[res][m][loc] = s
            vc[m] = s
            seq[m] += 1
            for flag in isa.PUSH_FLAGS:
                if getattr(insn, flag):
                    q = isa.FLAG_QUEUES[(m, flag)]
                    sched.tokens[q] += 1
                    tokq[q].append(dict(vc))
            sched.head[m] += 1
            sched.done += 1
            progress = True
        if not progress:
            fn._deadlock(sched)
    return list(races.values())
