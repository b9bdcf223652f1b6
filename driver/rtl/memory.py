"""The cocotb memory model on the accelerator's memory port (``vta_hw.rtl.memport``).

It implements ``vta_hw.timing.DramTiming`` exactly as ``sim/dram.py`` does:
a read burst accepted in cycle g puts beat k on the bus in cycle
``g + latency + k*beat_interval``; a write burst accepted in cycle g raises
``wr_ready`` in cycles ``g + 1 + k*beat_interval`` and pulses ``wr_done``
``latency`` cycles after its last beat; one burst at a time, ``cmd_ready``
always high (the accelerator's arbiter keeps one burst in flight).

Signals are sampled and driven at the falling clock edge, so a value driven
there holds for the rest of that cycle and is sampled at its closing rising
edge. Out-of-range accesses are recorded in ``errors`` (reads return zeros);
``bursts`` monitors every accepted burst (cycle, address, beats, write).
"""
from __future__ import annotations

import numpy as np
from cocotb.triggers import ClockCycles, FallingEdge, RisingEdge
from cocotb.utils import get_sim_time

from vta_hw.timing import DramTiming


class MemoryModel:
    """DRAM behind the port ``<prefix>*`` of ``dut``; ``dram`` is a uint8 numpy array."""

    def __init__(self, dut, timing: DramTiming, bus_bytes: int, prefix: str = "mem__"):
        if timing.latency < 1:
            raise ValueError(f"the RTL memory model needs DramTiming.latency >= 1, "
                             f"not {timing.latency}")
        self.dut, self.clk = dut, dut.clk
        self.timing, self.bus_bytes = timing, bus_bytes
        self.interval = timing.beat_interval(bus_bytes)
        self.sig = {n: getattr(dut, prefix + n) for n in (
            "cmd_valid", "cmd_ready", "cmd_addr", "cmd_len", "cmd_write", "rd_valid",
            "rd_data", "wr_valid", "wr_ready", "wr_data", "wr_done")}
        self.dram = np.zeros(0, np.uint8)
        self.errors: list[str] = []
        #: monitor: (cycle accepted, byte address, beats, write) of every burst
        self.bursts: list[tuple[int, int, int, bool]] = []
        self.period_ns = 10

    def cycle(self) -> int:
        """Index of the current clock cycle (rising edges at multiples of the period)."""
        return int(get_sim_time("ns")) // self.period_ns

    def reset(self) -> None:
        s = self.sig
        for n in ("cmd_ready",):
            s[n].value = 1
        for n in ("rd_valid", "rd_data", "wr_ready", "wr_done"):
            s[n].value = 0

    def _read(self, addr: int) -> int:
        bb = self.bus_bytes
        if addr + bb > self.dram.size:
            self.errors.append(f"read of bytes [{addr}, {addr + bb}) beyond the "
                               f"{self.dram.size}-byte DRAM image")
            return 0
        return int.from_bytes(self.dram[addr:addr + bb].tobytes(), "little")

    def _read_burst(self, addr: int, n: int) -> list[int]:
        bb = self.bus_bytes
        if addr + n * bb > self.dram.size:
            return [self._read(addr + k * bb) for k in range(n)]
        raw = self.dram[addr:addr + n * bb].tobytes()
        return [int.from_bytes(raw[k * bb:(k + 1) * bb], "little") for k in range(n)]

    def _write(self, addr: int, value: int) -> None:
        bb = self.bus_bytes
        if addr + bb > self.dram.size:
            self.errors.append(f"write of bytes [{addr}, {addr + bb}) beyond the "
                               f"{self.dram.size}-byte DRAM image")
            return
        self.dram[addr:addr + bb] = np.frombuffer(value.to_bytes(bb, "little"), np.uint8)

    async def run(self) -> None:
        s, L, I, bb = self.sig, self.timing.latency, self.interval, self.bus_bytes
        falling = FallingEdge(self.clk)
        self.reset()
        await FallingEdge(self.clk)
        while True:
            if not int(s["cmd_valid"].value):
                await RisingEdge(s["cmd_valid"])
                await FallingEdge(self.clk)
                continue
            # accepted in this cycle (g)
            addr, n = int(s["cmd_addr"].value), int(s["cmd_len"].value)
            write = bool(int(s["cmd_write"].value))
            self.bursts.append((self.cycle(), addr, n, write))
            if not write:
                beats = self._read_burst(addr, n)
                await ClockCycles(self.clk, L, rising=False)
                rd_valid, rd_data = s["rd_valid"], s["rd_data"]
                rd_valid.value = 1
                for k in range(n):
                    rd_data.value = beats[k]
                    await falling
                    if I > 1:
                        rd_valid.value = 0
                        if k + 1 < n:
                            await ClockCycles(self.clk, I - 1, rising=False)
                            rd_valid.value = 1
                rd_valid.value = 0
            else:
                await FallingEdge(self.clk)
                for k in range(n):
                    s["wr_ready"].value = 1
                    if not int(s["wr_valid"].value):
                        self.errors.append(f"write burst at {addr}: wr_valid low at beat {k}")
                    self._write(addr + k * bb, int(s["wr_data"].value))
                    await FallingEdge(self.clk)
                    s["wr_ready"].value = 0
                    if k + 1 < n and I > 1:
                        await ClockCycles(self.clk, I - 1, rising=False)
                # now in cycle last+1; done at last + L
                if L > 1:
                    await ClockCycles(self.clk, L - 1, rising=False)
                s["wr_done"].value = 1
                await FallingEdge(self.clk)
                s["wr_done"].value = 0
