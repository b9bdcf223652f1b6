"""Timelines of a cycle-model run: Chrome traces and utilization plots.

A ``Trace`` holds what ``sim.cycle.run(..., trace=True)`` recorded, in cycles:

- ``spans[module]``: one ``(insn_index, dequeued, started, end)`` per
  instruction; ``started`` is the cycle its tokens were popped (fetch: the
  dispatch cycle), ``end`` the cycle after it retired (exclusive);
- ``tokens``: ``(queue, n, "push"|"pop", module, cycle)``, the ``n``-th token
  of a queue pushed or popped;
- ``bursts``: ``(module, grant, last, beats, write)``, each burst on the
  memory port from its grant to its last event (inclusive);
- ``gemm``: ``(first_issue, end_issue, macs)`` per non-reset GEMM.

``write_chrome(path)`` writes the Chrome trace event format (open it in
Perfetto or chrome://tracing): one track per module plus one for the memory
port, one span per instruction (its token wait, if any, as a separate
"wait tokens" span), and each token as a flow arrow from the instruction that
pushed it to the one that popped it. Timestamps are cycles, shown as
microseconds. ``plot(path)`` draws the utilization timeline with matplotlib.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np

from vta_hw.isa import describe

TRACKS = ("fetch", "load", "compute", "store", "memory")


@dataclasses.dataclass
class Trace:
    """Recorded timeline of one run (see the module docstring for each field)."""
    cycles: int
    insns: list
    spans: dict[str, list[tuple[int, int, int, int]]]
    tokens: list[tuple[str, int, str, str, int]]
    bursts: list[tuple[str, int, int, int, bool]]
    gemm: list[tuple[int, int, int]]
    peak_macs_per_cycle: int
    bus_bytes: int

    @classmethod
    def from_sim(cls, sim, cycles: int) -> "Trace":
        """Collect the records of a finished ``sim.cycle._Sim``."""
        return cls(cycles, sim.insns, {m: mod.spans for m, mod in sim.mods.items()},
                   sim.token_events, sim.arb.bursts, sim.gemm_windows,
                   sim.cfg.macs_per_cycle, sim.cfg.bus_bytes)

    # ---- Chrome trace --------------------------------------------------------------
    def chrome_events(self) -> list[dict]:
        """The trace as a list of Chrome trace events (``ph`` X, s, f, M)."""
        tid = {m: k for k, m in enumerate(TRACKS)}
        ev: list[dict] = [{"ph": "M", "name": "process_name", "pid": 0, "tid": 0,
                           "args": {"name": "VTA accelerator (1 us = 1 cycle)"}}]
        for m, k in tid.items():
            ev.append({"ph": "M", "name": "thread_name", "pid": 0, "tid": k,
                       "args": {"name": m}})
            ev.append({"ph": "M", "name": "thread_sort_index", "pid": 0, "tid": k,
                       "args": {"sort_index": k}})
        for m, spans in self.spans.items():
            for k, deq, start, end in spans:
                insn = self.insns[k]
                if m == "fetch":
                    ev.append({"ph": "X", "pid": 0, "tid": tid[m], "ts": start,
                               "dur": end - start, "name": f"dispatch {k}",
                               "cat": "fetch", "args": {"insn": k}})
                    continue
                if start > deq:
                    ev.append({"ph": "X", "pid": 0, "tid": tid[m], "ts": deq,
                               "dur": start - deq, "name": "wait tokens", "cat": "stall",
                               "args": {"insn": k}})
                ev.append({"ph": "X", "pid": 0, "tid": tid[m], "ts": start,
                           "dur": end - start, "name": f"{k} {insn.opcode.name}",
                           "cat": insn.opcode.name,
                           "args": {"insn": k, "text": describe(insn)}})
        for mod, grant, last, beats, write in self.bursts:
            ev.append({"ph": "X", "pid": 0, "tid": tid["memory"], "ts": grant,
                       "dur": last + 1 - grant, "name": f"{mod} {'write' if write else 'read'}",
                       "cat": "dram", "args": {"beats": beats,
                                               "bytes": beats * self.bus_bytes}})
        for q, n, what, mod, t in self.tokens:
            ev.append({"ph": "s" if what == "push" else "f", "bp": "e", "pid": 0,
                       "tid": tid[mod], "ts": t, "id": f"{q}:{n}", "name": f"token {q}",
                       "cat": "token"})
        return ev

    def write_chrome(self, path: str | Path) -> None:
        """Write the Chrome trace JSON (``{"traceEvents": [...]}``) to ``path``."""
        Path(path).write_text(json.dumps({"traceEvents": self.chrome_events(),
                                          "displayTimeUnit": "ns",
                                          "otherData": {"cycles": self.cycles}}))

    # ---- utilization --------------------------------------------------------------
    def timeline(self, bins: int = 200) -> dict[str, np.ndarray]:
        """Utilization per time bin, each in [0, 1].

        Returns a dict: ``edges`` (bins + 1 cycle boundaries), one busy
        fraction per module ("fetch", "load", "compute", "store": cycles inside
        an instruction span, token waits excluded), ``memory`` (cycles the port
        is held), ``gemm`` (MACs / peak MACs).
        """
        bins = max(1, min(bins, self.cycles))
        edges = np.linspace(0, self.cycles, bins + 1)
        out = {"edges": edges}

        def cover(intervals, weights=None) -> np.ndarray:
            # exact overlap of each weighted [a, b) with each bin
            if not intervals:
                return np.zeros(bins)
            iv = np.asarray(intervals, dtype=np.float64).reshape(-1, 2)
            w = (np.ones(len(iv)) if weights is None
                 else np.asarray(weights, np.float64) / np.maximum(iv[:, 1] - iv[:, 0], 1))
            acc = _integral(edges, iv[:, 0], w) - _integral(edges, iv[:, 1], w)
            return np.diff(acc) / np.diff(edges)

        for m in ("fetch", "load", "compute", "store"):
            out[m] = cover([(s, e) for _, _, s, e in self.spans.get(m, [])])
        out["memory"] = cover([(g, last + 1) for _, g, last, _, _ in self.bursts])
        out["gemm"] = cover([(a, b) for a, b, _ in self.gemm],
                            [macs for _, _, macs in self.gemm]) / self.peak_macs_per_cycle
        return out

    def plot(self, path: str | Path, bins: int = 200, title: str | None = None) -> None:
        """Draw the utilization timeline (``timeline``) to an image file."""
        from matplotlib.figure import Figure  # no pyplot: no global backend change

        tl = self.timeline(bins)
        mid = (tl["edges"][:-1] + tl["edges"][1:]) / 2
        rows = [(m, f"{m} busy") for m in ("fetch", "load", "compute", "store")] + [
            ("memory", "memory port held"), ("gemm", "GEMM utilization")]
        fig = Figure(figsize=(10, 1.2 * len(rows) + 1))
        axes = fig.subplots(len(rows), 1, sharex=True)
        for ax, (key, label) in zip(axes, rows):
            ax.fill_between(mid, 100 * tl[key], step="mid", alpha=0.7,
                            color="tab:red" if key == "gemm" else "tab:blue")
            ax.set_ylim(0, 105)
            ax.set_ylabel("%", fontsize=8)
            ax.text(0.005, 0.8, label, transform=ax.transAxes, fontsize=8)
        axes[-1].set_xlabel("cycle")
        axes[0].set_title(title or f"{self.cycles} cycles")
        fig.tight_layout()
        fig.savefig(path, dpi=110)


def _integral(edges: np.ndarray, x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``sum_i w_i * max(0, e - x_i)`` for every edge ``e``, in O((n + bins) log n)."""
    order = np.argsort(x)
    xs, ws = x[order], w[order]
    cw = np.concatenate([[0.0], np.cumsum(ws)])
    cwx = np.concatenate([[0.0], np.cumsum(ws * xs)])
    k = np.searchsorted(xs, edges, side="right")
    return cw[k] * edges - cwx[k]
