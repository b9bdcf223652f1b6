"""Dependency-token planning for generated programs: ordered, balanced, deadlock-free.

``TokenPlanner`` builds an instruction stream in program order. Each
instruction is emitted with the *needs* it has on other modules ("module M's
instruction number s must be complete before I start"), and the planner sets
push flags on already-emitted producers and pop flags on the new instruction
(adding token-only sync instructions, LOAD/STORE with ``x_size == 0``, when
one instruction cannot pop enough) so that every need holds in *every*
token-respecting interleaving.

How: each instruction has a vector clock (per module, the last instruction
of that module known to be complete before it starts). A pop merges the clock
of the push it matches (queues are FIFO, so the k-th pop of a queue matches
its k-th push). Load and store have no queue between them, so a need of one
on the other goes through a compute sync that pops from the first and whose
push the second pops.

Why it cannot deadlock: every pop matches a push on an instruction earlier in
program order, so all waits point backwards in program order (and fetch, which
dispatches in program order, cannot starve a module of the instruction it
needs either).
"""
from __future__ import annotations

import collections
import dataclasses

from vta_hw.isa import LINKS, MODULES, Finish, Load, MemId, Store



def sync_insn(module: str, **flags):
    """A token-only instruction (``x_size == 0``) that runs on ``module``."""
    if module == "load":
        return Load(mem=MemId.INP, **flags)
    if module == "compute":
        return Load(mem=MemId.UOP, **flags)
    return Store(mem=MemId.OUT, **flags)


class TokenPlanner:
    """Program-order instruction builder that places dependency tokens.

    Attributes:
        insns: the instructions so far (records; flags get set on them later).
        modules: module of each instruction.
        seq: per instruction, its position within its module.
        max_pending: per queue, the most tokens ever pending at emission time.
        pushes: per queue, the tokens pushed in the whole program.
    """

    def __init__(self, rng=None, extra_token_prob: float = 0.0, max_extra_pending: int = 4):
        self.insns: list = []
        self.modules: list[str] = []
        self.seq: list[int] = []
        self.clock: list[dict[str, int]] = []
        self.count = {m: 0 for m in MODULES}
        self.last: dict[str, int | None] = {m: None for m in MODULES}
        self.vc = {m: {n: -1 for n in MODULES} for m in MODULES}
        self.queue = {link: collections.deque() for link in LINKS}
        self.max_pending = {link: 0 for link in LINKS}
        self.pushes = {link: 0 for link in LINKS}
        self.rng = rng
        self.extra_prob = extra_token_prob
        self.max_extra_pending = max_extra_pending

    # ---- building blocks ------------------------------------------------------------
    def _set_flag(self, g: int, flag: str) -> None:
        self.insns[g] = dataclasses.replace(self.insns[g], **{flag: True})

    def _append(self, module: str, insn) -> int:
        """Append ``insn`` (its pop flags already set); pop, record the clock, push."""
        for (p, c), (_, push_f, pop_f) in LINKS.items():
            if c == module and getattr(insn, pop_f):
                g = self.queue[(p, c)].popleft()
                for m, s in self.clock[g].items():
                    self.vc[module][m] = max(self.vc[module][m], s)
        g = len(self.insns)
        s = self.count[module]
        clock = dict(self.vc[module])
        clock[module] = s
        self.insns.append(insn)
        self.modules.append(module)
        self.seq.append(s)
        self.clock.append(clock)
        self.vc[module][module] = s
        self.count[module] += 1
        self.last[module] = g
        for (p, c), (_, push_f, _) in LINKS.items():
            if p == module and getattr(insn, push_f):
                self._push(g, (p, c))
        return g

    def _push(self, g: int, link) -> None:
        self.queue[link].append(g)
        self.pushes[link] += 1
        self.max_pending[link] = max(self.max_pending[link], len(self.queue[link]))

    def emit(self, module: str, insn, needs: dict[str, int] | None = None,
             extra: bool = True) -> int:
        """Append ``insn`` on ``module`` after every ``needs[m]``-th instruction of
        module ``m`` has completed; returns its program index.

        ``extra``: with probability ``extra_token_prob`` add a spare pop (of a
        pending token) or push, which only over-orders the program.
        """
        needs = {m: s for m, s in (needs or {}).items() if m != module and s >= 0}
        if module != "compute":
            other = "store" if module == "load" else "load"
            if needs.get(other, -1) > self.vc[module][other]:
                g = self.emit("compute", sync_insn("compute"), {other: needs[other]}, extra=False)
                needs["compute"] = max(needs.get("compute", -1), self.seq[g])
            needs.pop(other, None)
        pops: dict[str, int] = {}
        for p, s in needs.items():
            if s <= self.vc[module][p]:
                continue
            link = (p, module)
            push_f = LINKS[link][1]
            last = self.last[p]
            if not getattr(self.insns[last], push_f):
                self._set_flag(last, push_f)
                self._push(last, link)
            pops[p] = 1 + next(i for i, g in enumerate(self.queue[link]) if self.seq[g] >= s)
        while any(n > 1 for n in pops.values()):
            flags = {LINKS[(p, module)][2]: True for p, n in pops.items() if n > 1}
            self._append(module, sync_insn(module, **flags))
            pops = {p: n - 1 if n > 1 else n for p, n in pops.items()}
        flags = {LINKS[(p, module)][2]: True for p, n in pops.items() if n == 1}
        if extra and self.rng is not None and self.extra_prob:
            for (p, c), (_, _, pop_f) in LINKS.items():
                if c == module and self.queue[(p, c)] and pop_f not in flags \
                        and self.rng.random() < self.extra_prob:
                    flags[pop_f] = True
            for (p, c), (_, push_f, _) in LINKS.items():
                if p == module and len(self.queue[(p, c)]) < self.max_extra_pending \
                        and self.rng.random() < self.extra_prob:
                    flags[push_f] = True
        return self._append(module, dataclasses.replace(insn, **flags))

    def finish(self) -> list:
        """Drain every queue, append a FINISH that waits for the last load and
        store, and return the instruction list (balanced: no leftover tokens)."""
        while self.queue[("compute", "load")]:
            self._append("load", sync_insn("load", pop_next=True))
        while self.queue[("compute", "store")]:
            self._append("store", sync_insn("store", pop_prev=True))
        self.emit("compute", Finish(), {"load": self.count["load"] - 1,
                                        "store": self.count["store"] - 1}, extra=False)
        left = {f"{p}->{c}": len(q) for (p, c), q in self.queue.items() if q}
        assert not left, f"token planner left tokens pending: {left}"
        return list(self.insns)
