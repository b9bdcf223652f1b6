"""The host bridge: parses request frames from the UART, runs them, sends one reply each.

The frame format and the commands are in ``fpga.protocol``. The bridge
drives the accelerator's register port (``csr``), moves words through the
memory's host port (``fpga.memory``) and watches ``irq`` for WAIT.
Requests are handled one at a time; bytes are consumed from ``rx_*`` (a
valid/ready byte stream from ``fpga.uart.UartRx``) and sent on ``tx_*``.

It is sized for a small FPGA: the header's ``addr`` and ``count`` fields are
the working counters (``addr`` is the memory address of the next word and the
WAIT timer, ``count`` the words left to move), one 32-bit ``word`` register
carries payload and reply words, the INFO words come from a 16-byte table,
and the range checks and command decode leave one 3-bit status.
"""
from __future__ import annotations

from amaranth import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from fpga import protocol as P
from vta_hw.rtl.control import ADDR_BITS as REG_ADDR_BITS, csr_signature
from vta_hw.rtl.memport import ADDR_BITS

#: The command code of a command byte above CMD_WAIT (the commands are 0..6).
_CMD_BAD = 7


class HostBridge(wiring.Component):
    """``mem_bytes``: the memory's size, a power of two (range checks, INFO); ``clk_hz``: for
    INFO; ``idle_cycles``: a partly received frame is dropped after this many quiet cycles.

    Raises ValueError: ``mem_bytes`` is not a power of two of at least 4."""

    def __init__(self, mem_bytes: int, clk_hz: int, idle_cycles: int):
        if mem_bytes < 4 or mem_bytes & (mem_bytes - 1):
            raise ValueError(f"mem_bytes must be a power of two of at least 4, not {mem_bytes!r}")
        self.mem_bytes, self.clk_hz, self.idle_cycles = mem_bytes, int(clk_hz), idle_cycles
        super().__init__({
            "rx_data": In(8), "rx_valid": In(1), "rx_ready": Out(1),
            "tx_data": Out(8), "tx_valid": Out(1), "tx_ready": In(1),
            "host_req": Out(1), "host_we": Out(1), "host_addr": Out(ADDR_BITS),
            "host_wdata": Out(32), "host_rdata": In(32), "host_ack": In(1),
            "csr": Out(csr_signature()), "irq": In(1)})

    def elaborate(self, platform):
        m = Module()
        # reg_ok and cmd below rely on these
        assert P.NUM_REGS == 1 << REG_ADDR_BITS and P.CMD_WAIT == _CMD_BAD - 1
        b = self._registers(m)
        self._range_check(m, b)
        self._counters(m, b)
        self._checksum(m, b)
        with m.FSM():
            self._request_states(m, b)
            self._reply_states(m, b)
        return m

    def _registers(self, m: Module) -> "_Regs":
        """The header (whose ``addr`` and ``count`` become the working counters), the
        command, the word, the checksum sum, the byte index, the status and the idle timer."""
        hdr = Signal(8 * P.HEADER_BYTES)    # shifted in; addr and count change later
        cmd_byte, addr, count = hdr[0:8], hdr[8:40], hdr[40:56]
        # addr: then the next word's address, or the WAIT timer; count: then words to move
        cmd = Signal(3)           # the command, or _CMD_BAD for a byte above CMD_WAIT
        m.d.comb += cmd.eq(cmd_byte[0:3] | (cmd_byte[3:] != 0).replicate(3))
        word = Signal(32)
        total = Signal(8)         # running byte sum, for the checksums
        idx = Signal(4)           # byte index in the header, or in the words (INFO: 0..15)
        status = Signal(3)        # from DECODE: ST_OK or the status the frame will get
        quiet = Signal(range(self.idle_cycles + 1))
        in_frame = Signal()
        b = _Regs()
        b.hdr, b.addr, b.count, b.cmd, b.word, b.total = hdr, addr, count, cmd, word, total
        b.idx, b.status, b.quiet, b.in_frame = idx, status, quiet, in_frame
        b.take = self.rx_valid & self.rx_ready
        b.sent = self.tx_valid & self.tx_ready
        return b

    def _range_check(self, m: Module, b: "_Regs") -> None:
        """``b.decoded``: the frame's status from its header, latched into ``status`` in
        DECODE (the header is whole then, and addr and count change only after it);
        registering it keeps the add and compares off the path from the header to the
        memory's address pins (``host_addr`` is ``addr``).

        mem_bytes = 2**lg: addr + 4*count <= mem_bytes holds iff addr is below 2**(lg+1)
        and, in words, addr[2:lg+1] + count <= 2**(lg-2); that sum has max(lg-1, 16) + 1
        bits, so it cannot overflow."""
        addr, count, cmd = b.addr, b.count, b.cmd
        lg = self.mem_bytes.bit_length() - 1
        end = Signal(max(lg - 1, 16) + 1)
        m.d.comb += end.eq(addr[2:lg + 1] + count)
        end_ok = (end[lg - 1:] == 0) & (~end[lg - 2] | (end[:lg - 2] == 0))
        mem_ok = (addr[0:2] == 0) & (addr[lg + 1:] == 0) & end_ok
        reg_ok = addr[REG_ADDR_BITS:] == 0    # addr < NUM_REGS
        b.decoded = Mux(cmd == _CMD_BAD, P.ST_BAD_COMMAND,
                        Mux((_is_cmd(cmd, P.CMD_WRITE_MEM, P.CMD_READ_MEM) & ~mem_ok) |
                            (_is_cmd(cmd, P.CMD_WRITE_REG, P.CMD_READ_REG) & ~reg_ok),
                            P.ST_BAD_ADDRESS, P.ST_OK))

    def _counters(self, m: Module, b: "_Regs") -> None:
        """``addr`` steps by 4 after each memory word and counts down by 1 for WAIT;
        counting down, the sum's carry out is addr != 0. ``count`` counts down; the same
        for it (``b.more``: count != 0). The register and memory ports read them."""
        addr, count, word = b.addr, b.count, b.word
        addr_step, addr_down = Signal(), Signal()
        addr_next = Signal(33)
        m.d.comb += addr_next.eq(addr + Mux(addr_down, 0xFFFF_FFFF, 4))
        with m.If(addr_step):
            m.d.sync += addr.eq(addr_next[:32])
        count_next = Signal(17)
        m.d.comb += count_next.eq(count + 0xFFFF)
        more = count_next[16]     # count != 0
        m.d.comb += [self.csr.addr.eq(addr[0:REG_ADDR_BITS]), self.csr.wdata.eq(word), self.host_addr.eq(addr),
                     self.host_wdata.eq(word), addr_step.eq(self.host_req & self.host_ack)]
        b.addr_step, b.addr_down, b.addr_next = addr_step, addr_down, addr_next
        b.count_next, b.more = count_next, more

    def _checksum(self, m: Module, b: "_Regs") -> None:
        """One adder for both checksums; each sum starts at -1 (0xFF; IDLE and REPLY_SYNC
        set it). Received bytes are summed from HEADER on: the frame is good if the sum
        with the checksum byte is 0xFF again. Sent bytes are summed from REPLY_STATUS on:
        the reply's checksum byte, minus the sum of its bytes, is then ~total. Also the
        idle timer of a partly received frame."""
        byte_sum = Signal(8)
        m.d.comb += byte_sum.eq(b.total + Mux(self.tx_valid, self.tx_data, self.rx_data))
        with m.If(b.take | b.sent):
            m.d.sync += b.total.eq(byte_sum)
        b.byte_sum = byte_sum

        with m.If(b.take):
            m.d.sync += b.quiet.eq(0)
        with m.Elif(b.in_frame):
            m.d.sync += b.quiet.eq(b.quiet + 1)

    def _receive(self, m: Module, b: "_Regs") -> None:
        """Take bytes; drop the frame after ``idle_cycles`` without one."""
        m.d.comb += [self.rx_ready.eq(1), b.in_frame.eq(1)]
        with m.If(b.quiet == self.idle_cycles):
            m.next = "IDLE"

    def _request_states(self, m: Module, b: "_Regs") -> None:
        """IDLE -> HEADER -> DECODE -> (PAYLOAD <-> STORE_WORD) -> CHECKSUM -> EXECUTE
        (-> WAIT_DONE) -> the reply."""
        cmd, count, count_next, more = b.cmd, b.count, b.count_next, b.more
        hdr, idx, word, status, take = b.hdr, b.idx, b.word, b.status, b.take
        with m.State("IDLE"):
            m.d.comb += self.rx_ready.eq(1)
            m.d.sync += [idx.eq(0), b.total.eq(0xFF), b.quiet.eq(0)]
            with m.If(take & (self.rx_data == P.SYNC_REQUEST)):
                m.next = "HEADER"
        with m.State("HEADER"):
            self._receive(m, b)
            with m.If(take):
                m.d.sync += [hdr.eq(Cat(hdr[8:], self.rx_data)), idx.eq(idx + 1)]
                with m.If(idx == P.HEADER_BYTES - 1):
                    m.next = "DECODE"
        with m.State("DECODE"):
            # from here on `count` counts the words after the one being moved
            m.d.sync += [status.eq(b.decoded), idx.eq(0)]
            with m.If(((cmd == P.CMD_WRITE_MEM) & more) | (cmd == P.CMD_WRITE_REG)):
                m.d.sync += count.eq(count_next)
                m.next = "PAYLOAD"
            with m.Else():
                m.next = "CHECKSUM"
        with m.State("PAYLOAD"):
            self._receive(m, b)
            with m.If(take):
                m.d.sync += [word.eq(Cat(word[8:], self.rx_data)), idx.eq(idx + 1)]
                with m.If(idx[0:2] == 3):
                    m.next = "STORE_WORD"
        with m.State("STORE_WORD"):
            done = Signal()
            with m.If((cmd == P.CMD_WRITE_MEM) & (status == P.ST_OK)):
                m.d.comb += [self.host_req.eq(1), self.host_we.eq(1), done.eq(self.host_ack)]
            with m.Else():
                m.d.comb += done.eq(1)
            with m.If(done):
                m.next = "CHECKSUM"
                with m.If((cmd == P.CMD_WRITE_MEM) & more):
                    m.d.sync += count.eq(count_next)
                    m.next = "PAYLOAD"
        with m.State("CHECKSUM"):
            self._receive(m, b)
            with m.If(take):
                with m.If(b.byte_sum != 0xFF):
                    m.d.sync += status.eq(P.ST_BAD_CHECKSUM)
                m.next = "EXECUTE"
        with m.State("EXECUTE"):
            m.d.sync += idx.eq(0)
            m.next = "REPLY_SYNC"
            with m.If(status == P.ST_OK):
                with m.Switch(cmd):
                    with m.Case(P.CMD_WRITE_REG):
                        m.d.comb += self.csr.we.eq(1)
                    with m.Case(P.CMD_START):   # CTRL reads only bit 0 of a write
                        m.d.comb += [self.csr.we.eq(1), self.csr.addr.eq(0),
                                     self.csr.wdata[0].eq(1)]
                    with m.Case(P.CMD_WAIT):
                        m.d.comb += [b.addr_step.eq(1), b.addr_down.eq(1)]
                        m.next = "WAIT_DONE"
        with m.State("WAIT_DONE"):
            # addr counts the cycles down from EXECUTE on: the wait times out in its
            # addr-th cycle (addr = 0: the 2**32-th), where addr reaches 0
            m.d.comb += [b.addr_step.eq(1), b.addr_down.eq(1)]
            with m.If(self.irq):
                m.next = "REPLY_SYNC"
            with m.Elif(~b.addr_next[32]):
                m.d.sync += status.eq(P.ST_TIMEOUT)
                m.next = "REPLY_SYNC"

    def _reply_states(self, m: Module, b: "_Regs") -> None:
        """REPLY_SYNC -> REPLY_STATUS -> (FETCH_WORD <-> REPLY_WORD) -> REPLY_CHECKSUM -> IDLE;
        the INFO words come from a 16-byte table."""
        cmd, count, count_next, more = b.cmd, b.count, b.count_next, b.more
        idx, word, status = b.idx, b.word, b.status
        info = sum(v << (32 * k) for k, v in enumerate(
            [P.INFO_MAGIC, P.PROTOCOL_VERSION, self.mem_bytes, self.clk_hz]))
        info_bytes = Array([Const((info >> (8 * k)) & 0xFF, 8) for k in range(16)])

        def send(data):
            m.d.comb += [self.tx_valid.eq(1), self.tx_data.eq(data)]

        with m.State("REPLY_SYNC"):
            send(P.SYNC_REPLY)
            m.d.sync += b.total.eq(0xFF)
            with m.If(self.tx_ready):
                m.next = "REPLY_STATUS"
        with m.State("REPLY_STATUS"):
            send(status)
            with m.If(self.tx_ready):
                m.next = "REPLY_CHECKSUM"
                with m.If((status == P.ST_OK) &
                          (_is_cmd(cmd, P.CMD_INFO, P.CMD_READ_REG) |
                           ((cmd == P.CMD_READ_MEM) & more))):
                    m.d.sync += count.eq(count_next)
                    m.next = "FETCH_WORD"
        with m.State("FETCH_WORD"):
            with m.Switch(cmd):
                with m.Case(P.CMD_READ_MEM):
                    m.d.comb += self.host_req.eq(1)
                    with m.If(self.host_ack):
                        m.d.sync += word.eq(self.host_rdata)
                        m.next = "REPLY_WORD"
                with m.Case(P.CMD_READ_REG):
                    m.d.sync += word.eq(self.csr.rdata)
                    m.next = "REPLY_WORD"
                with m.Default():     # INFO: its bytes come from info_bytes
                    m.next = "REPLY_WORD"
        with m.State("REPLY_WORD"):
            send(Mux(cmd == P.CMD_INFO, info_bytes[idx], word[0:8]))
            with m.If(self.tx_ready):
                # shifts in rx_data, as PAYLOAD does: the top byte is never sent
                m.d.sync += [word.eq(Cat(word[8:], self.rx_data)), idx.eq(idx + 1)]
                with m.If(idx[0:2] == 3):
                    m.next = "REPLY_CHECKSUM"
                    more_words = (cmd == P.CMD_READ_MEM) & more
                    with m.If(Mux(cmd == P.CMD_INFO, idx != 15, more_words)):
                        m.d.sync += count.eq(count_next)
                        m.next = "FETCH_WORD"
        with m.State("REPLY_CHECKSUM"):
            send(~b.total)
            with m.If(self.tx_ready):
                m.next = "IDLE"


def _is_cmd(cmd, *cmds):
    """``cmd`` is one of ``cmds``."""
    return Cat(*(cmd == c for c in cmds)).any()


class _Regs:
    """The signals ``HostBridge``'s elaboration steps share (attributes set as they are made)."""
