"""Which SRAM entries the running program has written: the SRAM contract's bookkeeping.

The contract (``vta_hw.isa``, "SRAM contract"): a program reads only the
SRAM entries it has written itself (by a LOAD, pads included, or as a
GEMM/ALU destination). The simulators and the RTL start a program from
zeroed SRAMs (the RTL through the driver's clear, ``driver.rtl.clear``), so a
read of an unwritten entry gets zeros on all three; a board keeps the previous
program's contents, so such a read is still reported. ``Written`` holds one
flag per entry of each SRAM and, on a read of an entry not written since the run began,
records it (``reports``: one line per offending instruction, which the
simulators return as warnings) or, when ``strict``, raises
``UnwrittenReadError``.
"""
from __future__ import annotations

import numpy as np

from sim.errors import UnwrittenReadError

_SRAMS = ("uop", "inp", "wgt", "acc", "out")
#: Offending instructions described one by one; the rest are counted.
MAX_REPORTS = 8


class Written:
    """Per SRAM (uop, inp, wgt, acc, out), a bool flag per entry; all False at the start.

    Attributes:
        strict: raise ``UnwrittenReadError`` instead of recording.
        reports: ``(insn_index, text)`` of the first ``MAX_REPORTS`` offending reads.
        offenders: instructions that read unwritten entries (all of them, counted).
    """

    def __init__(self, cfg, strict: bool = False):
        self.flags = {m: np.zeros(cfg.depth(m), bool) for m in _SRAMS}
        self.strict = strict
        self.reports: list[tuple[int, str]] = []
        self.offenders: set[int] = set()

    def clear(self) -> None:
        """Forget every write and report (a new program begins)."""
        for f in self.flags.values():
            f[:] = False
        self.reports, self.offenders = [], set()

    def mark(self, buf: str, entries) -> None:
        """Entries (a slice or an index array) of ``buf`` now hold written values."""
        self.flags[buf][entries] = True

    def check(self, buf: str, entries: np.ndarray, what: str, insn, index: int,
              earlier: np.ndarray | None = None) -> None:
        """Record (or, ``strict``, raise ``UnwrittenReadError``) a read by ``insn`` (at
        ``index``), as ``what`` (a field or "entries"), of entries of ``buf`` this program
        has not written.

        ``earlier``: the entries iteration k writes (same length as ``entries``), for a
        read at iteration k of what an iteration before it wrote."""
        ok = self.flags[buf][entries]
        if ok.all():
            return
        if earlier is not None:
            first = np.full(self.flags[buf].size, entries.size, np.int64)
            first[earlier[::-1]] = np.arange(earlier.size - 1, -1, -1)
            ok |= first[entries] < np.arange(entries.size)
            if ok.all():
                return
        bad = np.unique(entries[~ok])
        text = (f"{insn.opcode.name} reads {bad.size} {buf.upper()} "
                f"entr{'y' if bad.size == 1 else 'ies'} ({what}; first: entry {int(bad[0])}) "
                "that this program has not written; they read as zeros on the simulators and "
                "the RTL (which the driver clears) but a board keeps the previous program's: "
                "load or compute them first")
        if self.strict:
            raise UnwrittenReadError(text, insn_index=index, field=what, value=int(bad[0]),
                                     limit=f"{buf} entries written by this program")
        if index not in self.offenders and len(self.reports) < MAX_REPORTS:
            self.reports.append((index, text))
        self.offenders.add(index)

    def warnings(self) -> list[str]:
        """One line per reported instruction, plus a count of the others."""
        out = [f"instruction {k}: {t}" for k, t in self.reports]
        more = len(self.offenders) - len(self.reports)
        if more > 0:
            out.append(f"{more} more instruction(s) read SRAM this program has not written")
        return out
