"""A pure-Python model of the FPGA SoC's UART host bridge, shared by the driver tests."""
from __future__ import annotations

import struct

from fpga import protocol as P


class ModelSoC:
    """A Python stand-in for the SoC's bridge, as a ``Transport``: decodes requests,
    answers per ``fpga.protocol``; ``corrupt`` flips a bit in the next N replies.
    ``on_start(soc)``, if given, plays the accelerator at START (it may change
    ``soc.mem`` and ``soc.regs``); without it START does nothing."""

    def __init__(self, mem_bytes=1024, on_start=None):
        self.mem = bytearray(mem_bytes)
        self.on_start = on_start
        self.regs = [0] * P.NUM_REGS
        self.out = bytearray()
        self.corrupt = 0
        self.silent = False

    def write(self, data: bytes) -> None:
        assert data[0] == P.SYNC_REQUEST and sum(data[1:]) % 256 == 0
        cmd, addr, count = struct.unpack("<BIH", data[1:8])
        payload = data[8:-1]
        if self.silent:
            return
        st, body = P.ST_OK, b""
        if cmd == P.CMD_INFO:
            body = struct.pack("<4I", P.INFO_MAGIC, P.PROTOCOL_VERSION, len(self.mem), 1_000_000)
        elif cmd in (P.CMD_WRITE_MEM, P.CMD_READ_MEM):
            if addr % 4 or addr + 4 * count > len(self.mem):
                st = P.ST_BAD_ADDRESS
            elif cmd == P.CMD_WRITE_MEM:
                self.mem[addr:addr + len(payload)] = payload
            else:
                body = bytes(self.mem[addr:addr + 4 * count])
        elif cmd in (P.CMD_WRITE_REG, P.CMD_READ_REG) and addr >= P.NUM_REGS:
            st = P.ST_BAD_ADDRESS
        elif cmd == P.CMD_WRITE_REG:
            self.regs[addr] = struct.unpack("<I", payload)[0]
        elif cmd == P.CMD_READ_REG:
            body = struct.pack("<I", self.regs[addr])
        elif cmd == P.CMD_START and self.on_start:
            self.on_start(self)
        frame = bytearray(P.reply(st, body if st == P.ST_OK else b""))
        if self.corrupt:
            self.corrupt -= 1
            frame[-1] ^= 0x10
        self.out += frame

    def read(self, n: int, timeout_s: float) -> bytes:
        got, self.out = bytes(self.out[:n]), self.out[n:]
        return got
