"""Fixed-priority arbiter: several initiators share one memory port, one burst at a time.

Client 0 has the highest priority. While no burst is in flight the arbiter
forwards the request of the highest-priority client whose ``cmd_valid`` is
high; the client sees ``cmd_ready`` in the same cycle the memory accepts.
From the cycle after the accept until the burst completes (a read: the cycle
of its last beat; a write: the cycle of ``wr_done``) the port belongs to that
client and nobody else's request is forwarded (``mem.cmd_valid`` is low). A
new burst can be accepted in the cycle after completion.
"""
from __future__ import annotations

from amaranth import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from vta_hw.rtl.memport import ADDR_BITS, MemPortSignature, len_bits


class Arbiter(wiring.Component):
    """Shares ``mem`` (``addr_bits``-bit addresses) among ``n_clients`` initiators.

    Raises:
        ValueError: ``n_clients`` is not a positive int.
    """

    def __init__(self, bus_width: int, max_burst_beats: int, n_clients: int,
                 addr_bits: int = ADDR_BITS):
        if not isinstance(n_clients, int) or n_clients < 1:
            raise ValueError(f"n_clients must be a positive int, not {n_clients!r}")
        self.n_clients = n_clients
        self.max_burst_beats = max_burst_beats
        sig = MemPortSignature(bus_width, max_burst_beats, addr_bits)
        super().__init__({"clients": In(sig).array(n_clients), "mem": Out(sig),
                          "busy": Out(1)})

    def elaborate(self, platform):
        m = Module()
        n = self.n_clients
        owner = Signal(range(max(n, 2)))
        left = Signal(len_bits(self.max_burst_beats))
        writing = Signal()
        mem = self.mem
        for c in self.clients:
            m.d.comb += c.rd_data.eq(mem.rd_data)
        with m.If(~self.busy):
            # highest priority last so that it wins
            for i in reversed(range(n)):
                c = self.clients[i]
                with m.If(c.cmd_valid):
                    m.d.comb += [mem.cmd_valid.eq(1), mem.cmd_addr.eq(c.cmd_addr),
                                 mem.cmd_len.eq(c.cmd_len), mem.cmd_write.eq(c.cmd_write),
                                 c.cmd_ready.eq(mem.cmd_ready)]
                    # only the winner's cmd_ready stays high: clear the others
                    for j in range(i + 1, n):
                        m.d.comb += self.clients[j].cmd_ready.eq(0)
                    with m.If(mem.cmd_ready):
                        m.d.sync += [self.busy.eq(1), owner.eq(i), left.eq(c.cmd_len),
                                     writing.eq(c.cmd_write)]
        with m.Else():
            for i, c in enumerate(self.clients):
                with m.If(owner == i):
                    m.d.comb += [c.rd_valid.eq(mem.rd_valid), c.wr_ready.eq(mem.wr_ready),
                                 c.wr_done.eq(mem.wr_done), mem.wr_valid.eq(c.wr_valid),
                                 mem.wr_data.eq(c.wr_data)]
            with m.If(~writing & mem.rd_valid):
                m.d.sync += left.eq(left - 1)
                with m.If(left == 1):
                    m.d.sync += self.busy.eq(0)
            with m.If(writing & mem.wr_done):
                m.d.sync += self.busy.eq(0)
        return m
