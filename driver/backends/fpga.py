"""The ``fpga`` backend: runs programs on a board's SoC through its UART host bridge.

The wire protocol is ``fpga.protocol`` (one reply per request, checksums,
timeouts). ``FpgaDevice`` speaks it over any ``Transport`` (``write(bytes)``
and ``read(n, timeout_s)``): ``SerialTransport`` for a USB-serial port
(pyserial), and a cocotb UART model in the tests, so the same code drives the
board and the SoC's RTL in simulation.

    dev = open_serial("/dev/ttyUSB0")        # 115200 baud, 8N1
    res = dev.run(program)                   # FpgaResult: dram, cycles, busy

As a device backend (registered as "fpga"): ``Device("fpga", config=cfg,
port="/dev/ttyUSB0")``.
"""
from __future__ import annotations

import dataclasses
import struct
from typing import Protocol

import numpy as np

from fpga import protocol as P

from .base import BackendError, BackendResult
from vta_hw.errors import VtaError

#: Words per WRITE_MEM / READ_MEM frame (a resend costs at most this much).
CHUNK_WORDS = 256


class FpgaError(VtaError, RuntimeError):
    """The board did not answer, answered garbage, or reported an error status."""


class Transport(Protocol):
    def write(self, data: bytes) -> None: ...

    def read(self, n: int, timeout_s: float) -> bytes:
        """Up to ``n`` bytes; fewer if ``timeout_s`` seconds pass first."""


class SerialTransport:
    """A pyserial port. Raises FpgaError if pyserial is missing or the port cannot open."""

    def __init__(self, port: str, baud: int = P.DEFAULT_BAUD):
        try:
            import serial
        except ImportError:
            raise FpgaError("the fpga backend needs pyserial: pip install pyserial "
                            "(or pip install -e '.[fpga]')") from None
        try:
            self.port = serial.Serial(port, baud, timeout=0.1)
        except serial.SerialException as e:
            raise FpgaError(f"cannot open serial port {port!r} ({e}); check that the board is "
                            "connected and powered, the port's name (ls /dev/ttyUSB* "
                            "/dev/ttyACM*) and that you may open it (group dialout)") from None

    def write(self, data: bytes) -> None:
        self.port.write(data)

    def read(self, n: int, timeout_s: float) -> bytes:
        self.port.timeout = timeout_s
        return self.port.read(n)

    def close(self) -> None:
        self.port.close()


@dataclasses.dataclass(frozen=True)
class BoardInfo:
    """What INFO reports: protocol version, memory size (bytes), clock (Hz)."""
    version: int
    mem_bytes: int
    clk_hz: int


@dataclasses.dataclass
class FpgaResult:
    """A program's outcome on the board: final DRAM image (uint8, the program's
    ``dram_bytes``), the CYCLES register, and per-module busy cycles."""
    dram: np.ndarray
    cycles: int
    busy: dict[str, int]


class FpgaDevice:
    """The host end of the bridge over ``transport`` at ``baud`` bits per second.

    ``timeout_s`` is added to each reply's transfer time when waiting for it;
    a failed transfer is retried ``retries`` times (never START).
    """

    def __init__(self, transport: Transport, *, baud: int = P.DEFAULT_BAUD,
                 timeout_s: float = 1.0, retries: int = 2):
        self.t, self.baud, self.timeout_s, self.retries = transport, baud, timeout_s, retries
        self._info: BoardInfo | None = None

    # ---- one request, one reply ---------------------------------------------------
    def _wire_s(self, nbytes: int) -> float:
        return nbytes * 10 / self.baud

    def _once(self, cmd: int, addr: int, count: int, payload: bytes, extra_s: float) -> bytes:
        frame = P.request(cmd, addr, count, payload)
        self.t.write(frame)
        words = P.reply_words(cmd, count)
        wait = self.timeout_s + extra_s + 2 * self._wire_s(len(frame))
        head = self.t.read(2, wait)
        if len(head) < 2:
            raise FpgaError(f"no reply to {_cmd_name(cmd)} within {wait:.3g} s "
                            "(board not programmed, wrong port or baud rate?)")
        if head[0] != P.SYNC_REPLY:
            raise FpgaError(f"reply to {_cmd_name(cmd)} starts with 0x{head[0]:02x}, "
                            f"not 0x{P.SYNC_REPLY:02x}")
        status = head[1]
        n = 4 * words + 1 if status == P.ST_OK else 1
        rest = self.t.read(n, self.timeout_s + 2 * self._wire_s(n))
        if len(rest) < n:
            raise FpgaError(f"reply to {_cmd_name(cmd)} cut short: {len(rest)} of {n} bytes")
        if (status + sum(rest)) & 0xFF:
            raise FpgaError(f"reply to {_cmd_name(cmd)} has a bad checksum")
        if status != P.ST_OK:
            raise FpgaError(f"{_cmd_name(cmd)} at 0x{addr:x}: board says "
                            f"{P.STATUS_NAMES.get(status, f'status {status}')}")
        return rest[:-1]

    def request(self, cmd: int, addr: int = 0, count: int = 0, payload: bytes = b"",
                extra_s: float = 0.0) -> bytes:
        """Send one request and return the reply's payload, retrying transfer errors.

        Raises:
            FpgaError: no valid reply after the retries, or an error status
                other than a bad checksum (bad address, bad command, timeout).
        """
        tries = 1 if cmd == P.CMD_START else 1 + self.retries
        for k in range(tries):
            try:
                return self._once(cmd, addr, count, payload, extra_s)
            except FpgaError as e:
                retry = "bad checksum" in str(e) or "cut short" in str(e) or "starts with" in str(e)
                if not retry or k == tries - 1:
                    raise
                self.t.read(1 << 16, self._wire_s(64))  # drain what is left of the bad reply

    # ---- commands -------------------------------------------------------------------
    def info(self) -> BoardInfo:
        if self._info is None:
            magic, version, mem, clk = struct.unpack("<4I", self.request(P.CMD_INFO))
            if magic != P.INFO_MAGIC:
                raise FpgaError(f"INFO magic is 0x{magic:08x}, not 0x{P.INFO_MAGIC:08x}: "
                                "this is not a VTA SoC")
            if version != P.PROTOCOL_VERSION:
                raise FpgaError(f"board speaks protocol version {version}, this driver "
                                f"{P.PROTOCOL_VERSION}; rebuild the bitstream")
            self._info = BoardInfo(version, mem, clk)
        return self._info

    def write_mem(self, addr: int, data: bytes) -> None:
        """Write ``data`` (length a multiple of 4) at byte ``addr`` (a multiple of 4)."""
        if len(data) % 4 or addr % 4:
            raise ValueError(f"write_mem needs whole words: addr {addr}, {len(data)} bytes")
        step = 4 * CHUNK_WORDS
        for off in range(0, len(data), step):
            chunk = data[off:off + step]
            self.request(P.CMD_WRITE_MEM, addr + off, len(chunk) // 4, chunk)

    def read_mem(self, addr: int, nbytes: int) -> bytes:
        """Read ``nbytes`` (a multiple of 4) from byte ``addr`` (a multiple of 4)."""
        if nbytes % 4 or addr % 4:
            raise ValueError(f"read_mem needs whole words: addr {addr}, {nbytes} bytes")
        out = bytearray()
        step = 4 * CHUNK_WORDS
        for off in range(0, nbytes, step):
            n = min(step, nbytes - off) // 4
            out += self.request(P.CMD_READ_MEM, addr + off, n,
                                extra_s=2 * self._wire_s(4 * n))
        return bytes(out)

    def write_reg(self, reg: int, value: int) -> None:
        self.request(P.CMD_WRITE_REG, reg, 0, struct.pack("<I", value & 0xFFFFFFFF))

    def read_reg(self, reg: int) -> int:
        return struct.unpack("<I", self.request(P.CMD_READ_REG, reg))[0]

    def start(self) -> None:
        self.request(P.CMD_START)

    def wait(self, timeout_s: float) -> None:
        """Wait for done; raises FpgaError after ``timeout_s`` (board clock)."""
        cycles = min(max(1, int(timeout_s * self.info().clk_hz)), (1 << 32) - 1)
        self.request(P.CMD_WAIT, cycles, extra_s=cycles / self.info().clk_hz)

    # ---- programs ---------------------------------------------------------------------
    def run(self, program, dram: np.ndarray | None = None, *, timeout_s: float = 10.0
            ) -> FpgaResult:
        """Load ``dram`` (default ``program.dram_image()``) at byte 0, run, read it back.

        Raises:
            FpgaError: the image is larger than the board's memory, the run
                timed out, or the link failed.
            sim.errors.UnknownOpcodeError, sim.cycle.CycleDeadlockError: the run ended
                on an error status (ERROR register), reported as the simulators
                report that program (``driver.rtl.faults.raise_fault``).
        """
        img = program.dram_image() if dram is None else np.asarray(dram, np.uint8)
        mem = self.info().mem_bytes
        padded = np.zeros(-(-img.size // 4) * 4, np.uint8)
        padded[:img.size] = img
        if padded.size > mem:
            raise FpgaError(f"the program's DRAM image is {img.size} bytes but the board has "
                            f"{mem}; use a bigger board or a smaller program")
        self.write_mem(0, padded.tobytes())
        self.write_reg(P.REG_INSN_BASE, program.insn_base)
        self.write_reg(P.REG_INSN_COUNT, len(program.insns))
        self.start()
        self.wait(timeout_s)
        self._raise_fault(program, img)
        for _ in range(100):  # done comes at FINISH; let late stores drain
            if self.read_reg(P.REG_CTRL) >> 2 == 0:
                break
        else:
            raise FpgaError("accelerator modules still busy after done")
        out = np.frombuffer(self.read_mem(0, padded.size), np.uint8)[:img.size].copy()
        return FpgaResult(out, self.read_reg(P.REG_CYCLES),
                          {m: self.read_reg(r) for m, r in P.REG_BUSY.items()})

    def _raise_fault(self, program, img: np.ndarray) -> None:
        """Raise the located error of a run that ended on an error status; nothing if
        it ended at FINISH."""
        from driver.rtl.faults import fault_record, raise_fault
        fault = fault_record(self.read_reg(P.REG_ERROR), self.read_reg(P.REG_ERROR_INSN),
                             self.read_reg(P.REG_CTRL))
        if fault is not None:
            raise_fault(fault, program, img, "fpga", FpgaError)


class FpgaBackend:
    """``Backend`` (``driver.backends.base``) on a board: ``run(program, image, max_cycles)``
    -> ``BackendResult`` (cycles from the CYCLES register, GEMM MACs counted from the
    program, per-module busy cycles in ``extra["busy"]``; DRAM bytes unknown).

    Options: ``port`` (the board's serial port; opened on construction, which is
    when pyserial is imported) and ``baud``, or ``device``, an open ``FpgaDevice``
    over any ``Transport``. ``max_cycles`` becomes the WAIT timeout at the board's
    clock (default 10 s). ``dram_timing`` is not used: the board's memory has its
    own. The SoC's bitstream must be built for ``cfg``.

    Raises:
        BackendError: neither ``port`` nor ``device`` given.
        FpgaError: pyserial missing, the port cannot open, or the board does not answer.
    """
    name = "fpga"
    timed = True
    description = "a board's SoC over its UART host bridge (option port): values and cycles"
    options = {"port": "the board's serial port, e.g. /dev/ttyUSB0 (needs pyserial)",
               "baud": f"the bridge's bits per second (default {P.DEFAULT_BAUD})",
               "device": "an open FpgaDevice (any Transport) instead of port"}

    def __init__(self, cfg, dram_timing=None, *, port: str | None = None,
                 baud: int = P.DEFAULT_BAUD, device: FpgaDevice | None = None):
        if device is None and port is None:
            raise BackendError("the fpga backend needs a serial port: give option port, e.g. "
                               "Device('fpga', config=..., port='/dev/ttyUSB0') (or device=, "
                               "an open FpgaDevice)")
        self.cfg = cfg
        self.device = device or open_serial(port, baud)

    def run(self, program, image, max_cycles=None) -> BackendResult:
        from sim.counters import program_gemm_macs
        if program.config != self.cfg:
            raise ValueError(f"program is for config {program.config.name}, the board's "
                             f"backend for {self.cfg.name}")
        timeout_s = max_cycles / self.device.info().clk_hz if max_cycles else 10.0
        r = self.device.run(program, image, timeout_s=timeout_s)
        return BackendResult(r.dram, r.cycles, program_gemm_macs(program), None, None,
                             {"busy": dict(r.busy)})


def _cmd_name(cmd: int) -> str:
    return {v: k for k, v in P.COMMANDS.items()}.get(cmd, f"command {cmd}")


def open_serial(port: str, baud: int = P.DEFAULT_BAUD, **kw) -> FpgaDevice:
    """An ``FpgaDevice`` on serial ``port``; checks the board answers INFO."""
    dev = FpgaDevice(SerialTransport(port, baud), baud=baud, **kw)
    dev.info()
    return dev
