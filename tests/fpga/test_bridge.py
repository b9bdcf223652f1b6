"""The host bridge (``fpga.bridge``) alone in Amaranth's simulator, at the edges of its checks.

A byte source and sink stand in for the UART, a dict for the memory's host port
(it acks in a request's second cycle) and a register list for the accelerator's register
port. Covered here rather than in the SoC simulation: the memory range check at
the exact end of memory and for addresses that wrap, the WAIT timeout's cycle
count, and the frame drop after ``idle_cycles`` quiet cycles, to the cycle.
"""
import struct

import pytest
from amaranth.sim import Simulator

from fpga import protocol as P
from fpga.bridge import HostBridge

MEM = 256
IDLE = 40


def run(stream, irq_from=None, tail=400):
    """Feed ``stream`` (``(byte, quiet cycles before it)``) to a bridge; return the bytes it
    sent with their cycles, the memory (byte address: word), the register writes and the
    cycle its last byte was taken."""
    dut = HostBridge(MEM, 1_000_000, IDLE)
    out = {"tx": [], "mem": {}, "csr": [], "last_rx": None}

    async def bench(ctx):
        regs = list(range(100, 100 + P.NUM_REGS))
        pos, wait, cyc, waited = 0, 0, 0, False
        ctx.set(dut.tx_ready, 1)
        while pos < len(stream) or wait < tail:
            ctx.set(dut.irq, irq_from is not None and cyc >= irq_from)
            valid = pos < len(stream) and wait >= stream[pos][1]
            ctx.set(dut.rx_valid, valid)
            ctx.set(dut.rx_data, stream[pos][0] if valid else 0)
            req = ctx.get(dut.host_req)
            ack = req and waited      # a host access takes two cycles
            waited = req and not waited
            a = ctx.get(dut.host_addr) % MEM
            ctx.set(dut.host_ack, ack)
            ctx.set(dut.host_rdata, out["mem"].get(a, 0xC0DE0000 + a))
            ctx.set(dut.csr.rdata, regs[ctx.get(dut.csr.addr)])
            if ack and ctx.get(dut.host_we):
                out["mem"][a] = ctx.get(dut.host_wdata)
            if ctx.get(dut.csr.we):
                out["csr"].append((ctx.get(dut.csr.addr), ctx.get(dut.csr.wdata)))
            if ctx.get(dut.tx_valid):
                out["tx"].append((cyc, ctx.get(dut.tx_data)))
            wait += 1
            if valid and ctx.get(dut.rx_ready):
                pos, wait, out["last_rx"] = pos + 1, 0, cyc
            await ctx.tick()
            cyc += 1

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    return out


def frames(*reqs):
    """The requests' bytes back to back."""
    return [(b, 0) for r in reqs for b in r]


def sent(out):
    """All the bytes the bridge sent."""
    return bytes(b for _, b in out["tx"])


@pytest.mark.parametrize("addr, count, ok", [
    (MEM - 8, 2, True),            # ends at the last byte of memory
    (MEM - 4, 2, False),           # one word beyond
    (MEM, 0, True),                # empty, at the end
    (MEM + 4, 0, False),
    (2 * MEM - 8, 2, False),       # beyond by a whole memory: no wrap-around
    (2**32 - 4, 2, False),         # addr + 4 * count wraps 32 bits
    (2**31, 1, False),             # high address bits set, the low ones in range
    (2**20 + 8, 1, False),
    (2, 1, False),                 # unaligned
    (0, MEM // 4, True),
    (0, MEM // 4 + 1, False),
    (4, 0xFFFF, False),            # count far beyond the memory
])
def test_memory_range_check_at_the_edges(addr, count, ok):
    # WRITE_MEM then READ_MEM of the same words (READ_MEM alone for the huge count)
    payload = bytes((7 + k) % 256 for k in range(4 * count))
    write = count < 0x1000
    reqs = [P.request(P.CMD_WRITE_MEM, addr, count, payload)] * write + [
        P.request(P.CMD_READ_MEM, addr, count), P.request(P.CMD_READ_REG, 7)]
    out = run(frames(*reqs))
    want = P.reply(P.ST_OK if ok else P.ST_BAD_ADDRESS) * write
    want += P.reply(P.ST_OK, payload) if ok else P.reply(P.ST_BAD_ADDRESS)
    # a rejected WRITE_MEM's payload is consumed too: the next requests are answered
    assert sent(out) == want + P.reply(P.ST_OK, struct.pack("<I", 107))
    assert len(out["mem"]) == (count if ok else 0)


@pytest.mark.parametrize("reg, ok", [(0, True), (P.REG_ERROR, True), (P.REG_ERROR_INSN, True),
                                     (15, True), (16, False), (2**31 + 1, False)])
def test_register_range_check(reg, ok):
    out = run(frames(P.request(P.CMD_WRITE_REG, reg, 0, struct.pack("<I", 0xDEADBEEF)),
                     P.request(P.CMD_READ_REG, reg)))
    st = P.ST_OK if ok else P.ST_BAD_ADDRESS
    assert sent(out) == P.reply(st) + P.reply(st, struct.pack("<I", 100 + reg) if ok else b"")
    assert out["csr"] == ([(reg, 0xDEADBEEF)] if ok else [])


def test_start_writes_ctrl_bit_0_and_info_words():
    out = run(frames(P.request(P.CMD_START, 5), P.request(P.CMD_INFO)))
    assert [(a, d & 1) for a, d in out["csr"]] == [(P.REG_CTRL, 1)]
    info = struct.pack("<4I", P.INFO_MAGIC, P.PROTOCOL_VERSION, MEM, 1_000_000)
    assert sent(out) == P.reply(P.ST_OK) + P.reply(P.ST_OK, info)


def test_wait_times_out_after_addr_cycles_or_ends_at_irq():
    def reply_cycle(n, irq_from=None):
        """The reply and its first cycle, counted from the cycle the request's checksum
        byte was taken."""
        out = run(frames(P.request(P.CMD_WAIT, n)), irq_from=irq_from)
        return out["tx"][0][0] - out["last_rx"], sent(out)

    # the checksum is taken in cycle 0, EXECUTE is cycle 1, the wait's cycles 2..n+1
    for n in (1, 2, 50):
        assert reply_cycle(n) == (n + 2, P.reply(P.ST_TIMEOUT)), n
    # irq raised in the wait's 10th cycle: the reply starts in the next one
    first = run(frames(P.request(P.CMD_WAIT, 1)))["last_rx"]
    assert reply_cycle(50, irq_from=first + 11) == (12, P.reply(P.ST_OK))


def test_frame_dropped_after_idle_cycles_to_the_cycle():
    req = P.request(P.CMD_READ_REG, 2)

    def with_gap(g):
        # a gap of g quiet cycles before the 5th byte, then a whole request
        stream = [(b, g if k == 4 else 0) for k, b in enumerate(req)] + frames(req)
        return sent(run(stream))

    ok = P.reply(P.ST_OK, struct.pack("<I", 102))
    assert with_gap(IDLE - 1) == ok + ok       # the first frame survives its gap
    # dropped: its tail is skipped up to the next SYNC_REQUEST, which starts a new frame
    assert with_gap(IDLE) == ok
