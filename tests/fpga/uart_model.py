"""A UART on the SoC's pins for cocotb, and the driver ``Transport`` over it.

``UartModel(dut, bit_ns)`` drives ``dut.rx`` and decodes ``dut.tx`` (8N1,
``bit_ns`` nanoseconds a bit) with simulator timers, not per-cycle
callbacks. ``CocotbTransport`` lets ``driver.backends.fpga.FpgaDevice``
(blocking code, run through ``cocotb.task.bridge``) use it: its timeouts are
in simulated seconds.
"""
from __future__ import annotations

from collections import deque

from cocotb.task import resume
from cocotb.triggers import Event, FallingEdge, First, Timer
from cocotb.utils import get_sim_time


class UartModel:
    def __init__(self, dut, bit_ns: int):
        self.dut, self.bit_ns = dut, bit_ns
        self.received: deque[int] = deque()
        self.framing_errors = 0
        self._event = Event()
        dut.rx.value = 1

    async def send(self, data: bytes) -> None:
        for byte in data:
            for bit in [0] + [(byte >> k) & 1 for k in range(8)] + [1]:
                self.dut.rx.value = bit
                await Timer(self.bit_ns, unit="ns")

    async def monitor(self) -> None:
        """Decode bytes from ``dut.tx`` forever (start as a background task)."""
        tx = self.dut.tx
        while True:
            await FallingEdge(tx)
            await Timer(self.bit_ns * 3 // 2, unit="ns")
            byte = 0
            for k in range(8):
                byte |= int(tx.value) << k
                await Timer(self.bit_ns, unit="ns")
            if not int(tx.value):
                self.framing_errors += 1
            self.received.append(byte)
            self._event.set()

    async def recv(self, n: int, timeout_s: float) -> bytes:
        """Up to ``n`` bytes; fewer if ``timeout_s`` simulated seconds pass."""
        end = round(get_sim_time("ns")) + max(1, round(timeout_s * 1e9))
        while len(self.received) < n:
            left = end - round(get_sim_time("ns"))
            if left <= 0:
                break
            self._event.clear()
            await First(self._event.wait(), Timer(left, unit="ns"))
        return bytes(self.received.popleft() for _ in range(min(n, len(self.received))))


class CocotbTransport:
    """``Transport`` for ``FpgaDevice`` on a ``UartModel``; call only from a bridge thread."""

    def __init__(self, uart: UartModel):
        self.uart = uart

    def write(self, data: bytes) -> None:
        resume(self.uart.send)(bytes(data))

    def read(self, n: int, timeout_s: float) -> bytes:
        return resume(self.uart.recv)(n, timeout_s)
