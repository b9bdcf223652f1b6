"""The host bridge's UART protocol: frame layout, commands, status codes (pure Python).

Shared by the SoC's RTL (``fpga.bridge``) and the host driver
(``driver.backends.fpga``); nothing here imports Amaranth.

Serial format: 8 data bits, no parity, 1 stop bit (8N1), least significant
bit first; the baud rate is the SoC clock divided by ``divisor``
(``DEFAULT_BAUD`` on the boards). Every multi-byte field is little-endian.

Request (host -> SoC)::

    byte  0      SYNC_REQUEST (0xA5)
    byte  1      command (CMD_*)
    bytes 2..5   addr: a byte address (memory), a register index, or a
                 timeout in clock cycles (WAIT)
    bytes 6..7   count: 32-bit words of payload (WRITE_MEM) or to read (READ_MEM)
    payload      WRITE_MEM: count words; WRITE_REG: one word; others: none
    last byte    checksum: the bytes from ``command`` through the checksum
                 sum to 0 modulo 256

Reply (SoC -> host), exactly one per request::

    byte 0       SYNC_REPLY (0x5A)
    byte 1       status (ST_*)
    payload      only when status is ST_OK: INFO 4 words, READ_MEM count
                 words, READ_REG one word, others none
    last byte    checksum over status..payload, as above

Commands:

=========  ====  ==========================================================
INFO       0x00  reply: INFO_MAGIC, PROTOCOL_VERSION, memory bytes, clock Hz
WRITE_MEM  0x01  write count words at byte address addr (multiple of 4);
                 words are written as they arrive, so after ST_BAD_CHECKSUM
                 the host resends the block
READ_MEM   0x02  read count words from byte address addr
WRITE_REG  0x03  write accelerator register addr (``vta_hw.rtl.control``)
READ_REG   0x04  read accelerator register addr
START      0x05  write 1 to CTRL: start the accelerator
WAIT       0x06  wait until the accelerator raises done, or addr clock
                 cycles pass (ST_TIMEOUT); 0 waits at most 2**32-1 cycles
=========  ====  ==========================================================

A frame that stops arriving for ``IDLE_BYTES`` byte times is dropped (no
reply); bytes before a SYNC_REQUEST are skipped.
"""
from __future__ import annotations

import struct

SYNC_REQUEST = 0xA5
SYNC_REPLY = 0x5A
PROTOCOL_VERSION = 1
INFO_MAGIC = 0x31415456  # b"VTA1" little-endian

CMD_INFO, CMD_WRITE_MEM, CMD_READ_MEM, CMD_WRITE_REG, CMD_READ_REG, CMD_START, CMD_WAIT = range(7)
COMMANDS = {"INFO": CMD_INFO, "WRITE_MEM": CMD_WRITE_MEM, "READ_MEM": CMD_READ_MEM,
            "WRITE_REG": CMD_WRITE_REG, "READ_REG": CMD_READ_REG, "START": CMD_START,
            "WAIT": CMD_WAIT}

ST_OK, ST_BAD_CHECKSUM, ST_BAD_COMMAND, ST_BAD_ADDRESS, ST_TIMEOUT = range(5)
STATUS_NAMES = {ST_OK: "ok", ST_BAD_CHECKSUM: "bad checksum", ST_BAD_COMMAND: "bad command",
                ST_BAD_ADDRESS: "bad address (unaligned or beyond the memory)",
                ST_TIMEOUT: "timeout (the accelerator did not raise done)"}

#: Header bytes after SYNC_REQUEST: command, addr (4), count (2).
HEADER_BYTES = 7
#: Largest ``count`` of one WRITE_MEM / READ_MEM frame, words.
MAX_WORDS = 0xFFFF
#: The accelerator's registers (``vta_hw.rtl.control``; a test pins them equal).
REG_CTRL, REG_INSN_BASE, REG_INSN_COUNT, REG_CYCLES = 0, 1, 2, 3
REG_BUSY = {"fetch": 4, "load": 5, "compute": 6, "store": 7}
REG_ERROR, REG_ERROR_INSN = 8, 9
#: Register addresses the bridge accepts (the register port's 4 address bits).
NUM_REGS = 16
#: A partly received frame is dropped after this many byte times without a byte.
IDLE_BYTES = 64
#: Baud rate of the board builds.
DEFAULT_BAUD = 115_200


def checksum(data: bytes) -> int:
    """The byte that makes ``sum(data) + checksum`` a multiple of 256."""
    return -sum(data) & 0xFF


def request(cmd: int, addr: int = 0, count: int = 0, payload: bytes = b"") -> bytes:
    """Encode one request frame.

    Raises:
        ValueError: a field is out of range, or the payload is not whole words.
    """
    if cmd not in COMMANDS.values():
        raise ValueError(f"cmd must be one of {sorted(COMMANDS.values())}, not {cmd!r}")
    if not 0 <= addr < 1 << 32:
        raise ValueError(f"addr must fit 32 bits, not {addr!r}")
    if not 0 <= count <= MAX_WORDS:
        raise ValueError(f"count must be in [0, {MAX_WORDS}], not {count!r}")
    if len(payload) % 4:
        raise ValueError(f"payload must be whole 32-bit words, not {len(payload)} bytes")
    body = struct.pack("<BIH", cmd, addr, count) + payload
    return bytes([SYNC_REQUEST]) + body + bytes([checksum(body)])


def reply(status: int, payload: bytes = b"") -> bytes:
    """Encode one reply frame (what the SoC sends; used by tests and models)."""
    body = bytes([status]) + payload
    return bytes([SYNC_REPLY]) + body + bytes([checksum(body)])


def reply_words(cmd: int, count: int) -> int:
    """Payload words of an ST_OK reply to ``cmd`` with ``count``."""
    return {CMD_INFO: 4, CMD_READ_MEM: count, CMD_READ_REG: 1}.get(cmd, 0)


def divisor_for(clock_hz: float, baud: int = DEFAULT_BAUD) -> int:
    """Clock cycles per bit for ``baud`` at ``clock_hz`` (rounded; error under 2 % required).

    Raises:
        ValueError: the clock is too slow for the baud rate, or the rounding
            error is 2 % or more.
    """
    div = round(clock_hz / baud)
    if div < 4:
        raise ValueError(f"a {clock_hz / 1e6:g} MHz clock is too slow for {baud} baud "
                         f"(needs at least 4 cycles per bit)")
    err = abs(clock_hz / div - baud) / baud
    if err >= 0.02:
        raise ValueError(f"{baud} baud at {clock_hz / 1e6:g} MHz is off by {err:.1%}; "
                         "pick another clock or baud rate")
    return div
