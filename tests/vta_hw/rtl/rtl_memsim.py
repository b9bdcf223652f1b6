"""A cycle-by-cycle memory responder for Amaranth testbenches (DramTiming semantics).

``step(ctx, cycle)`` is called once per cycle before reading outputs: it
drives ``rd_valid``/``rd_data``/``wr_ready``/``wr_done`` for that cycle and
accepts a request when ``cmd_valid`` is high (``cmd_ready`` is tied high).
Write beats are taken in ``wr_ready`` cycles. Same timing as
``driver.rtl.memory.MemoryModel`` and ``sim.dram.DramModel``.
"""
import numpy as np

from vta_hw.timing import DramTiming


class MemSim:
    def __init__(self, port, dram: np.ndarray, timing: DramTiming, bus_bytes: int):
        self.p, self.dram, self.t, self.bb = port, dram, timing, bus_bytes
        self.I = timing.beat_interval(bus_bytes)
        self.events = {}       # cycle -> list of (kind, value)
        self.busy_until = -1
        self.bursts = []       # (cycle, addr, beats, write)

    def _at(self, cycle, ev):
        self.events.setdefault(cycle, []).append(ev)

    def step(self, ctx, cycle):
        p = self.p
        ctx.set(p.cmd_ready, 1)
        rd, wr, done = None, None, 0
        for kind, val in self.events.pop(cycle, []):
            if kind == "rd":
                rd = val
            elif kind == "wr":
                wr = val
            else:
                done = 1
        ctx.set(p.rd_valid, rd is not None)
        if rd is not None:
            ctx.set(p.rd_data, int.from_bytes(self.dram[rd:rd + self.bb].tobytes(), "little"))
        ctx.set(p.wr_ready, wr is not None)
        ctx.set(p.wr_done, done)
        if wr is not None:
            assert ctx.get(p.wr_valid), f"wr_valid low in cycle {cycle}"
            v = ctx.get(p.wr_data)
            self.dram[wr:wr + self.bb] = np.frombuffer(v.to_bytes(self.bb, "little"), np.uint8)
        if cycle > self.busy_until and ctx.get(p.cmd_valid):
            addr, n, w = ctx.get(p.cmd_addr), ctx.get(p.cmd_len), ctx.get(p.cmd_write)
            assert addr % self.bb == 0 and n >= 1
            self.bursts.append((cycle, addr, n, bool(w)))
            L, I = self.t.latency, self.I
            if w:
                for k in range(n):
                    self._at(cycle + 1 + k * I, ("wr", addr + k * self.bb))
                last = cycle + 1 + (n - 1) * I
                self._at(last + L, ("done", None))
                self.busy_until = last + L
            else:
                for k in range(n):
                    self._at(cycle + L + k * I, ("rd", addr + k * self.bb))
                self.busy_until = cycle + L + (n - 1) * I
