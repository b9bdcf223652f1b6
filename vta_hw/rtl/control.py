"""Control and status registers, the cycle counter and the per-module busy counters.

Register map (32-bit words, ``csr_addr`` counts words; reads are combinational):

====  ============  =====================================================
addr  name          meaning
====  ============  =====================================================
0     CTRL          write bit 0 = 1: start (ignored while running).
                    read: bit 0 running, bit 1 done, bits 2..5 fetch,
                    load, compute, store busy now.
1     INSN_BASE     byte address of the first instruction (multiple of 16
                    and of the bus width in bytes)
2     INSN_COUNT    instructions to fetch
3     CYCLES        cycles of the last run, start cycle to done, inclusive
4..7  BUSY_FETCH, BUSY_LOAD, BUSY_COMPUTE, BUSY_STORE: cycles of the run in
                    which that module was not idle
8     ERROR         bits 0..1: why the last run ended early (``ERR_*``:
                    0 it did not, 1 an undefined instruction, 2 no
                    progress); bits 4..7: fetch, load, compute, store
                    quiet now (waiting on a token, room in a queue, or
                    idle with nothing queued)
9     ERROR_INSN    ERR_UNDEFINED: the index of the undefined instruction;
                    ERR_NO_PROGRESS: instructions fetch had dispatched
====  ============  =====================================================

A start write in cycle w makes ``start`` high in cycle w+1 (cycle 0 of the
run) and clears done and all counters. ``finish`` in cycle f ends the run:
``done`` and ``irq`` are high from f+1 until the next start, and
CYCLES = f - w (the cycles 0..f of the run).

Two errors also end a run (``done`` as for ``finish``, ERROR says which):
fetch's ``error`` (an undefined instruction reached the head of its staging
queue; nothing after it is dispatched), and no progress: every module quiet
for ``NO_PROGRESS_CYCLES`` cycles in a row while running. Quiet modules can
only be woken by a token or a queue entry in flight, which arrives within a
few cycles, so a run that stays quiet that long is deadlocked (the cycle
model, ``sim.cycle``, names each module's instruction and what it waits on).
After an error the modules keep their state: reset the accelerator before
the next program.
"""
from __future__ import annotations

from amaranth import C, Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

REG_CTRL, REG_INSN_BASE, REG_INSN_COUNT, REG_CYCLES = 0, 1, 2, 3
REG_BUSY = {"fetch": 4, "load": 5, "compute": 6, "store": 7}
REG_ERROR, REG_ERROR_INSN = 8, 9
#: ERROR codes (bits 0..1).
ERR_NONE, ERR_UNDEFINED, ERR_NO_PROGRESS = 0, 1, 2
#: Bit of the first quiet flag in ERROR (fetch, load, compute, store follow).
ERROR_QUIET_BIT = 4
#: Cycles with every module quiet after which a run is deadlocked and ends.
NO_PROGRESS_CYCLES = 1024
#: Width of the register address.
ADDR_BITS = 4
MODULES = ("fetch", "load", "compute", "store")
#: Width of every register.
REG_BITS = 32


def csr_signature() -> wiring.Signature:
    """The host's end of the register port."""
    return wiring.Signature({"addr": Out(ADDR_BITS), "wdata": Out(32), "we": Out(1),
                             "rdata": In(32)})


class Control(wiring.Component):
    """The register file; ``busy_<module>`` inputs feed the busy counters."""

    def __init__(self):
        members = {"csr": In(csr_signature()), "start": Out(1), "finish": In(1),
                   "insn_base": Out(REG_BITS), "insn_count": Out(REG_BITS),
                   "irq": Out(1), "running": Out(1),
                   "error": In(1), "error_insn": In(REG_BITS)}
        members |= {f"busy_{name}": In(1) for name in MODULES}
        members |= {f"quiet_{name}": In(1) for name in MODULES}
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        done = Signal()
        cycles = Signal(32)
        busy = {name: Signal(32, name=f"busy_count_{name}") for name in MODULES}
        csr = self.csr
        m.d.comb += self.irq.eq(done)
        m.d.sync += self.start.eq(0)
        with m.If(csr.we):
            with m.Switch(csr.addr):
                with m.Case(REG_CTRL):
                    with m.If(csr.wdata[0] & ~self.running):
                        m.d.sync += [self.start.eq(1), self.running.eq(1), done.eq(0),
                                     cycles.eq(0)]
                        m.d.sync += [c.eq(0) for c in busy.values()]
                with m.Case(REG_INSN_BASE):
                    m.d.sync += self.insn_base.eq(csr.wdata)
                with m.Case(REG_INSN_COUNT):
                    m.d.sync += self.insn_count.eq(csr.wdata)
        code = Signal(2)
        err_insn = Signal(REG_BITS)
        still = Signal(range(NO_PROGRESS_CYCLES))     # quiet cycles in a row
        quiet = Cat(*(getattr(self, f"quiet_{n}") for n in MODULES))
        with m.If(self.start):
            m.d.sync += [code.eq(ERR_NONE), still.eq(0)]
        with m.If(self.running):
            m.d.sync += cycles.eq(cycles + 1)
            for name, c in busy.items():
                m.d.sync += c.eq(c + getattr(self, f"busy_{name}"))
            m.d.sync += still.eq(Mux(quiet.all(), still + 1, 0))
            with m.If(self.finish):
                m.d.sync += [self.running.eq(0), done.eq(1)]
            with m.Elif(self.error):
                m.d.sync += [self.running.eq(0), done.eq(1), code.eq(ERR_UNDEFINED),
                             err_insn.eq(self.error_insn)]
            with m.Elif(quiet.all() & (still == NO_PROGRESS_CYCLES - 1)):
                m.d.sync += [self.running.eq(0), done.eq(1), code.eq(ERR_NO_PROGRESS),
                             err_insn.eq(self.error_insn)]
        with m.Switch(csr.addr):
            with m.Case(REG_CTRL):
                m.d.comb += csr.rdata.eq(Cat(self.running, done, *(getattr(self, f"busy_{n}")
                                                                  for n in MODULES)))
            with m.Case(REG_INSN_BASE):
                m.d.comb += csr.rdata.eq(self.insn_base)
            with m.Case(REG_INSN_COUNT):
                m.d.comb += csr.rdata.eq(self.insn_count)
            with m.Case(REG_CYCLES):
                m.d.comb += csr.rdata.eq(cycles)
            for name, addr in REG_BUSY.items():
                with m.Case(addr):
                    m.d.comb += csr.rdata.eq(busy[name])
            with m.Case(REG_ERROR):
                m.d.comb += csr.rdata.eq(Cat(code, C(0, ERROR_QUIET_BIT - 2), quiet))
            with m.Case(REG_ERROR_INSN):
                m.d.comb += csr.rdata.eq(err_insn)
        return m
