"""Dependency tokens for VTA instruction streams: insertion and a verifier.

The three modules (load, compute, store) each run their instructions in
program order; four one-bit token queues order them across modules
(DESIGN.md): ``l2c`` load->compute, ``c2l`` compute->load, ``c2s``
compute->store, ``s2c`` store->compute. Which module runs an instruction and
which queue each flag uses are the contract's tables (``vta_hw.isa``).

``insert_tokens(entries)`` takes the instructions in program order, each with
the SRAM buffers it reads and writes (names; the virtual threads of a kernel
own separate buffers, ``name.vt<k>``), and sets the dependency flags:
instruction I of module B must start after the last earlier instruction of
module A that touches one of its buffers with at least one write. Because a
module runs in order, waiting for A's k-th instruction covers A's earlier
ones, so the required index is kept as a running maximum and a token is
spent only where it grows: A's k-th instruction pushes, I pops. Pushes and
pops of each queue then pair up first-in first-out exactly as intended. A
final FINISH pops the last load and store tokens so the run ends after every
DMA.

``verify_tokens(insns)`` rejects a stream whose tokens could deadlock or do
not balance: every pop must be served by a push earlier in program order
(then fetch, which dispatches in program order into bounded command queues,
can never wedge: the earliest unfinished instruction is always runnable),
no queue may hold more than ``TOKEN_QUEUE_DEPTH`` tokens along program
order, flags must exist on their module, and every queue must end empty.
"""
from __future__ import annotations

import dataclasses
import operator

from vta_hw.isa import (DEP_FLAGS, FLAG_QUEUES, LINKS, MODULES, POP_FLAGS, PUSH_FLAGS, QUEUES,
                        Finish, module_of)
from vta_hw.timing import TOKEN_QUEUE_DEPTH

from .eval import CodegenError


class TokenError(CodegenError):
    """A dependency-token stream that could deadlock or does not balance."""


@dataclasses.dataclass(slots=True)
class Entry:
    """One instruction and the SRAM buffers (names) it reads and writes."""
    insn: object
    reads: frozenset = frozenset()
    writes: frozenset = frozenset()


def insert_tokens(entries: list[Entry]) -> list:
    """The instructions of ``entries`` with dependency flags set, then a FINISH.

    Raises:
        TokenError: a load and a store touch the same buffer (no queue joins them).
    """
    local = {m: [] for m in MODULES}  # module -> program indices
    mod = [module_of(e.insn) for e in entries]
    last_w: dict[tuple[str, str], int] = {}  # (module, buffer) -> module-local index
    last_r: dict[tuple[str, str], int] = {}
    done = {pair: -1 for pair in LINKS}
    flags = [set() for _ in entries]

    def need(k: int, src: str, dst: str, req: int) -> None:
        if req > done[(src, dst)]:
            _, push, pop = LINKS[(src, dst)]
            flags[local[src][req]].add(push)
            flags[k].add(pop)
            done[(src, dst)] = req

    srcs = {m: [src for (src, dst) in LINKS if dst == m] for m in MODULES}
    others = {"load": "store", "store": "load"}
    for k, e in enumerate(entries):
        m = mod[k]
        touched = e.reads | e.writes
        for src in srcs[m]:
            req = -1
            for b in touched:
                req = max(req, last_w.get((src, b), -1))
            for b in e.writes:
                req = max(req, last_r.get((src, b), -1))
            need(k, src, m, req)
        other = others.get(m)
        if other:
            clash = [b for b in touched if (other, b) in last_w or (other, b) in last_r]
            if clash:
                raise TokenError(f"{m} instruction {k} and an earlier {other} instruction both "
                                 f"touch buffer {clash[0]!r}; no token queue joins load and "
                                 "store, route the dependence through compute")
        li = len(local[m])
        local[m].append(k)
        for b in e.reads:
            last_r[(m, b)] = li
        for b in e.writes:
            last_w[(m, b)] = li
    out = [with_flags(e.insn, fl) if fl else e.insn for e, fl in zip(entries, flags)]
    fin = set()
    for src in ("load", "store"):
        if local[src] and len(local[src]) - 1 > done[(src, "compute")]:
            _, push, pop = LINKS[(src, "compute")]
            k = local[src][-1]
            out[k] = with_flags(out[k], (push,))
            fin.add(pop)
    out.append(Finish(**{f: True for f in fin}))
    return out


_SLOTS: dict[type, tuple] = {}    # instruction class -> (its field names, their getter)


def with_flags(insn, flags) -> object:
    """A copy of ``insn`` (a frozen ``vta_hw.isa`` instruction) with the dependency flags
    named in ``flags`` set: ``dataclasses.replace`` without its per-call scan of the
    fields (the instructions have no ``__post_init__`` to skip), about twice as fast;
    it runs once per flagged instruction, hundreds of thousands of times per model."""
    cls = type(insn)
    slots = _SLOTS.get(cls)
    if slots is None:
        names = tuple(f.name for f in dataclasses.fields(cls))
        slots = _SLOTS[cls] = (names, operator.attrgetter(*names))
    new = object.__new__(cls)
    for name, value in zip(slots[0], slots[1](insn)):
        object.__setattr__(new, name, value)
    for flag in flags:
        object.__setattr__(new, flag, True)
    return new


def verify_tokens(insns: list) -> dict[str, int]:
    """Check the dependency flags of a stream (module docstring); returns the
    most tokens each queue holds along program order.

    Raises:
        TokenError: a flag its module does not have, a pop with no earlier
            push (could deadlock), a queue deeper than ``TOKEN_QUEUE_DEPTH``,
            or tokens left at the end (unbalanced).
    """
    count = {q: 0 for q in QUEUES}
    peak = dict(count)
    flags_of = operator.attrgetter(*DEP_FLAGS)
    for k, insn in enumerate(insns):
        if not any(flags_of(insn)):
            continue                    # no flags: nothing to check or count
        m = module_of(insn)
        for flag in DEP_FLAGS:
            if getattr(insn, flag) and (m, flag) not in FLAG_QUEUES:
                raise TokenError(f"instruction {k} ({insn.opcode.name}) runs on the {m} module, "
                                 f"which has no {flag} queue")
        for flag in POP_FLAGS:
            if getattr(insn, flag):
                q = FLAG_QUEUES[(m, flag)]
                if count[q] == 0:
                    raise TokenError(f"instruction {k} ({insn.opcode.name}, {m}) pops {q} but no "
                                     "earlier instruction pushed an unconsumed token: this "
                                     "stream can deadlock")
                count[q] -= 1
        for flag in PUSH_FLAGS:
            if getattr(insn, flag):
                q = FLAG_QUEUES[(m, flag)]
                count[q] += 1
                peak[q] = max(peak[q], count[q])
                if count[q] > TOKEN_QUEUE_DEPTH:
                    raise TokenError(f"instruction {k} pushes the {count[q]}th token into {q}, "
                                     f"deeper than the {TOKEN_QUEUE_DEPTH}-token queue")
    left = {q: n for q, n in count.items() if n}
    if left:
        raise TokenError(f"tokens do not balance: {left} left at the end of the stream")
    return peak
