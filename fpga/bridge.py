"""The host bridge: parses request frames from the UART, runs them, sends one reply each.

The frame format and the commands are in ``fpga.protocol``. The bridge
drives the accelerator's register port (``csr``), moves words through the
memory's host port (``fpga.memory``) and watches ``irq`` for WAIT.
Requests are handled one at a time; bytes are consumed from ``rx_*`` (a
valid/ready byte stream from ``fpga.uart.UartRx``) and sent on ``tx_*``.
"""
from __future__ import annotations

from amaranth import Array, Cat, Const, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from fpga import protocol as P
from vta_hw.rtl.control import csr_signature
from vta_hw.rtl.memport import ADDR_BITS


class HostBridge(wiring.Component):
    """``mem_bytes``: the memory's size (range checks, INFO); ``clk_hz``: for INFO;
    ``idle_cycles``: a partly received frame is dropped after this many quiet cycles."""

    def __init__(self, mem_bytes: int, clk_hz: int, idle_cycles: int):
        self.mem_bytes, self.clk_hz, self.idle_cycles = mem_bytes, int(clk_hz), idle_cycles
        super().__init__({
            "rx_data": In(8), "rx_valid": In(1), "rx_ready": Out(1),
            "tx_data": Out(8), "tx_valid": Out(1), "tx_ready": In(1),
            "host_req": Out(1), "host_we": Out(1), "host_addr": Out(ADDR_BITS),
            "host_wdata": Out(32), "host_rdata": In(32), "host_ack": In(1),
            "csr": Out(csr_signature()), "irq": In(1)})

    def elaborate(self, platform):
        m = Module()
        hdr = Signal(8 * P.HEADER_BYTES)
        cmd, addr, count = hdr[0:8], hdr[8:40], hdr[40:56]
        word = Signal(32)
        total = Signal(8)         # running byte sum, for the checksum
        idx = Signal(3)           # byte index in the header or a word
        cur = Signal(ADDR_BITS)   # memory address of the next word
        left = Signal(17)         # words still to move
        info_k = Signal(2)
        status = Signal(8)
        chk_ok = Signal()
        timer = Signal(32)
        quiet = Signal(range(self.idle_cycles + 1))
        end = Signal(ADDR_BITS + 2)
        addr_ok, reg_ok, in_frame = Signal(), Signal(), Signal()
        take = self.rx_valid & self.rx_ready
        # the range checks are registered: the header is whole (and unchanged) from DECODE on,
        # and nothing reads them before the cycle after DECODE; this keeps the 34-bit add
        # and compare off the path from the header to the block RAMs' address pins
        m.d.comb += end.eq(addr + (count << 2))
        m.d.sync += [addr_ok.eq((addr[0:2] == 0) & (end <= self.mem_bytes)),
                     reg_ok.eq(addr < P.NUM_REGS)]
        m.d.comb += [self.csr.addr.eq(addr[0:3]), self.host_addr.eq(cur),
                     self.host_wdata.eq(word)]
        with m.If(take):
            m.d.sync += quiet.eq(0)
        with m.Elif(in_frame):
            m.d.sync += quiet.eq(quiet + 1)
        info = Array([Const(P.INFO_MAGIC, 32), Const(P.PROTOCOL_VERSION, 32),
                      Const(self.mem_bytes, 32), Const(self.clk_hz, 32)])

        def receive():
            """Take bytes; drop the frame after ``idle_cycles`` without one."""
            m.d.comb += [self.rx_ready.eq(1), in_frame.eq(1)]
            with m.If(quiet == self.idle_cycles):
                m.next = "IDLE"

        with m.FSM():
            with m.State("IDLE"):
                m.d.comb += self.rx_ready.eq(1)
                m.d.sync += [idx.eq(0), total.eq(0), quiet.eq(0)]
                with m.If(take & (self.rx_data == P.SYNC_REQUEST)):
                    m.next = "HEADER"
            with m.State("HEADER"):
                receive()
                with m.If(take):
                    m.d.sync += [hdr.eq(Cat(hdr[8:], self.rx_data)), total.eq(total + self.rx_data),
                                 idx.eq(idx + 1)]
                    with m.If(idx == P.HEADER_BYTES - 1):
                        m.next = "DECODE"
            with m.State("DECODE"):
                m.d.sync += [cur.eq(addr), left.eq(count), idx.eq(0)]
                with m.If((cmd == P.CMD_WRITE_MEM) & (count != 0)):
                    m.next = "PAYLOAD"
                with m.Elif(cmd == P.CMD_WRITE_REG):
                    m.d.sync += left.eq(1)
                    m.next = "PAYLOAD"
                with m.Else():
                    m.next = "CHECKSUM"
            with m.State("PAYLOAD"):
                receive()
                with m.If(take):
                    m.d.sync += [word.eq(Cat(word[8:], self.rx_data)),
                                 total.eq(total + self.rx_data), idx.eq(idx + 1)]
                    with m.If(idx == 3):
                        m.next = "STORE_WORD"
            with m.State("STORE_WORD"):
                done = Signal()
                with m.If((cmd == P.CMD_WRITE_MEM) & addr_ok):
                    m.d.comb += [self.host_req.eq(1), self.host_we.eq(1), done.eq(self.host_ack)]
                with m.Else():
                    m.d.comb += done.eq(1)
                with m.If(done):
                    m.d.sync += [cur.eq(cur + 4), left.eq(left - 1), idx.eq(0)]
                    m.next = "PAYLOAD"
                    with m.If(left == 1):
                        m.next = "CHECKSUM"
            with m.State("CHECKSUM"):
                receive()
                with m.If(take):
                    m.d.sync += chk_ok.eq((total + self.rx_data)[0:8] == 0)
                    m.next = "EXECUTE"
            with m.State("EXECUTE"):
                m.d.sync += [cur.eq(addr), info_k.eq(0), status.eq(P.ST_OK),
                             timer.eq(addr - 1), left.eq(count)]
                m.next = "REPLY_SYNC"
                with m.If(~chk_ok):
                    m.d.sync += status.eq(P.ST_BAD_CHECKSUM)
                with m.Else():
                    with m.Switch(cmd):
                        with m.Case(P.CMD_INFO):
                            m.d.sync += left.eq(4)
                        with m.Case(P.CMD_WRITE_MEM, P.CMD_READ_MEM):
                            with m.If(~addr_ok):
                                m.d.sync += status.eq(P.ST_BAD_ADDRESS)
                        with m.Case(P.CMD_WRITE_REG):
                            with m.If(reg_ok):
                                m.d.comb += [self.csr.we.eq(1), self.csr.wdata.eq(word)]
                            with m.Else():
                                m.d.sync += status.eq(P.ST_BAD_ADDRESS)
                        with m.Case(P.CMD_READ_REG):
                            m.d.sync += left.eq(1)
                            with m.If(~reg_ok):
                                m.d.sync += status.eq(P.ST_BAD_ADDRESS)
                        with m.Case(P.CMD_START):
                            m.d.comb += [self.csr.we.eq(1), self.csr.addr.eq(0),
                                         self.csr.wdata.eq(1)]
                        with m.Case(P.CMD_WAIT):
                            m.next = "WAIT_DONE"
                        with m.Default():
                            m.d.sync += status.eq(P.ST_BAD_COMMAND)
            with m.State("WAIT_DONE"):
                m.d.sync += timer.eq(timer - 1)
                with m.If(self.irq):
                    m.next = "REPLY_SYNC"
                with m.Elif(timer == 0):
                    m.d.sync += status.eq(P.ST_TIMEOUT)
                    m.next = "REPLY_SYNC"
            with m.State("REPLY_SYNC"):
                m.d.comb += [self.tx_valid.eq(1), self.tx_data.eq(P.SYNC_REPLY)]
                with m.If(self.tx_ready):
                    m.next = "REPLY_STATUS"
            with m.State("REPLY_STATUS"):
                m.d.comb += [self.tx_valid.eq(1), self.tx_data.eq(status)]
                with m.If(self.tx_ready):
                    m.d.sync += total.eq(status)
                    has_words = ((status == P.ST_OK) & (left != 0) &
                                 ((cmd == P.CMD_INFO) | (cmd == P.CMD_READ_MEM) |
                                  (cmd == P.CMD_READ_REG)))
                    m.next = "REPLY_CHECKSUM"
                    with m.If(has_words):
                        m.next = "FETCH_WORD"
            with m.State("FETCH_WORD"):
                m.d.sync += idx.eq(0)
                with m.Switch(cmd):
                    with m.Case(P.CMD_READ_MEM):
                        m.d.comb += self.host_req.eq(1)
                        with m.If(self.host_ack):
                            m.d.sync += [word.eq(self.host_rdata), cur.eq(cur + 4)]
                            m.next = "REPLY_WORD"
                    with m.Case(P.CMD_READ_REG):
                        m.d.sync += word.eq(self.csr.rdata)
                        m.next = "REPLY_WORD"
                    with m.Default():
                        m.d.sync += [word.eq(info[info_k]), info_k.eq(info_k + 1)]
                        m.next = "REPLY_WORD"
            with m.State("REPLY_WORD"):
                m.d.comb += [self.tx_valid.eq(1), self.tx_data.eq(word[0:8])]
                with m.If(self.tx_ready):
                    m.d.sync += [word.eq(word >> 8), total.eq(total + word[0:8]), idx.eq(idx + 1)]
                    with m.If(idx == 3):
                        m.d.sync += left.eq(left - 1)
                        m.next = "FETCH_WORD"
                        with m.If(left == 1):
                            m.next = "REPLY_CHECKSUM"
            with m.State("REPLY_CHECKSUM"):
                m.d.comb += [self.tx_valid.eq(1), self.tx_data.eq(-total)]
                with m.If(self.tx_ready):
                    m.next = "IDLE"
        return m
