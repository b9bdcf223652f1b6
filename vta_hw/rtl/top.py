"""The whole accelerator: registers, fetch, load, compute, store, queues, arbiter.

Ports: ``csr`` (register port, see ``control``), ``irq`` (done), ``mem``
(the memory port, see ``memport``). Its cycle behaviour is ``vta_hw.timing``.
"""
from __future__ import annotations

import dataclasses

from amaranth import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from vta_hw import timing
from vta_hw.config import INSN_BITS, VTAConfig
from vta_hw.rtl.arbiter import Arbiter
from vta_hw.rtl.compute import Compute
from vta_hw.rtl.control import Control, csr_signature
from vta_hw.rtl.core import CYCLES_PER_UOP, MUL_CYCLES, PIPELINE_DEPTH
from vta_hw.rtl.dma_module import DECODE_CYCLES
from vta_hw.rtl.fetch import DISPATCH_CYCLES_PER_INSN, Fetch
from vta_hw.rtl.load import Load
from vta_hw.rtl.memport import ADDR_BITS, MemPortSignature, check_addr_bits
from vta_hw.rtl.queue import LATENCY as CMD_QUEUE_LATENCY
from vta_hw.rtl.queue import SyncQueue
from vta_hw.rtl.store import Store
from vta_hw.rtl.token_queue import LATENCY as TOKEN_LATENCY
from vta_hw.rtl.token_queue import TokenQueue


@dataclasses.dataclass(frozen=True)
class RtlParams:
    """Elaboration parameters beyond ``VTAConfig``: the burst rules and size of the memory.

    The burst rules must equal the ``DramTiming`` of the memory the design runs
    against (``RtlParams.from_timing``); latency and bandwidth are the memory's
    own. ``addr_bits`` is the width of the memory port's byte address: the
    accelerator reaches ``2**addr_bits`` bytes and takes every address modulo
    that (``vta_hw.rtl.memport`` has the rule); 32 (``ADDR_BITS``) by default,
    the SoC (``fpga.soc``) gives the log2 of its block RAM's size.

    Raises:
        ValueError: non-positive burst length, a page size that is not a
            power of two, or ``addr_bits`` not from log2(``page_bytes``) to 32.
    """
    max_burst_beats: int = timing.DramTiming().max_burst_beats
    page_bytes: int = timing.DramTiming().page_bytes
    addr_bits: int = ADDR_BITS

    def __post_init__(self):
        if not isinstance(self.max_burst_beats, int) or self.max_burst_beats < 1:
            raise ValueError(f"max_burst_beats must be a positive int, not {self.max_burst_beats!r}")
        if (not isinstance(self.page_bytes, int) or self.page_bytes < 1
                or self.page_bytes & (self.page_bytes - 1)):
            raise ValueError(f"page_bytes must be a power of two, not {self.page_bytes!r}")
        check_addr_bits(self.addr_bits, self.page_bytes)

    @classmethod
    def from_timing(cls, t: timing.DramTiming, addr_bits: int = ADDR_BITS) -> "RtlParams":
        return cls(t.max_burst_beats, t.page_bytes, addr_bits)


#: Cycles from fetch's dispatch to the module taking the instruction with no command
#: queues (depth 0): the same cycle, wired below.
RENDEZVOUS_LATENCY = 0
#: The arbiter's clients, highest priority first.
ARBITER_ORDER = ("fetch", "load", "compute", "store")

#: The contract values this RTL implements (``vta_hw.timing``), each read from the unit
#: that implements it; a different value there needs an RTL change first.
IMPLEMENTED = {"FETCH_CYCLES_PER_INSN": DISPATCH_CYCLES_PER_INSN,
               "TOKEN_LATENCY": TOKEN_LATENCY,
               "INSN_DECODE_CYCLES": DECODE_CYCLES,
               "GEMM_CYCLES_PER_UOP": CYCLES_PER_UOP, "ALU_CYCLES_PER_UOP": CYCLES_PER_UOP,
               "ALU_MUL_CYCLES_PER_UOP": MUL_CYCLES,
               "GEMM_PIPELINE_DEPTH": PIPELINE_DEPTH, "ALU_PIPELINE_DEPTH": PIPELINE_DEPTH,
               "CMD_QUEUE_LATENCY": CMD_QUEUE_LATENCY,
               "CMD_RENDEZVOUS_LATENCY": RENDEZVOUS_LATENCY,
               "ARBITER_PRIORITY": ARBITER_ORDER}


def check_contract() -> None:
    """Raise ValueError if ``vta_hw.timing`` asks for something this RTL does not do."""
    for name, value in IMPLEMENTED.items():
        if getattr(timing, name) != value:
            raise ValueError(f"vta_hw.timing.{name} is {getattr(timing, name)!r} but the RTL "
                             f"implements {value!r}; change vta_hw/rtl first")


class VTA(wiring.Component):
    """The accelerator for ``cfg`` (``params``: burst rules and address width, default
    ``RtlParams()``).

    Raises:
        ValueError: the config needs something this RTL does not build (a bus
            wider than 128 bits; INP/WGT/ACC/OUT elements narrower than a bus
            beat; pages smaller than a beat); the message names it.
    """

    def __init__(self, cfg: VTAConfig, params: RtlParams | None = None):
        check_contract()
        self.cfg = cfg
        self.params = params or RtlParams()
        p = self.params
        if p.page_bytes < cfg.bus_bytes:
            raise ValueError(f"page_bytes must be at least one bus beat ({cfg.bus_bytes} bytes), "
                             f"not {p.page_bytes}")
        # build the units now so that parameter errors surface at construction
        self._units = {
            "fetch": Fetch(cfg.BUS_WIDTH, p.max_burst_beats, p.page_bytes, p.addr_bits, cfg=cfg),
            "load": Load(cfg, p.max_burst_beats, p.page_bytes, p.addr_bits),
            "compute": Compute(cfg, p.max_burst_beats, p.page_bytes, p.addr_bits),
            "store": Store(cfg, p.max_burst_beats, p.page_bytes, p.addr_bits),
        }
        super().__init__({"csr": In(csr_signature()), "irq": Out(1),
                          "mem": Out(MemPortSignature(cfg.BUS_WIDTH, p.max_burst_beats,
                                                      p.addr_bits))})

    def elaborate(self, platform):
        m = Module()
        cfg, p = self.cfg, self.params
        u = self._units
        m.submodules.control = ctl = Control()
        for name, unit in u.items():
            m.submodules[name] = unit
            m.d.comb += getattr(ctl, f"busy_{name}").eq(unit.busy)
        fetch, load, compute, store = u["fetch"], u["load"], u["compute"], u["store"]
        wiring.connect(m, wiring.flipped(self.csr), ctl.csr)
        m.d.comb += [self.irq.eq(ctl.irq), fetch.start.eq(ctl.start),
                     fetch.insn_base.eq(ctl.insn_base), fetch.insn_count.eq(ctl.insn_count),
                     ctl.finish.eq(compute.finish), ctl.error.eq(fetch.error),
                     ctl.error_insn.eq(fetch.dispatched), ctl.quiet_fetch.eq(fetch.quiet)]
        # a module is quiet while it waits on a token or room, or idles with nothing queued
        for name, unit in (("load", load), ("compute", compute), ("store", store)):
            m.d.comb += getattr(ctl, f"quiet_{name}").eq(
                unit.stall | (~unit.busy & ~unit.cmd.r_valid))

        for name, unit in (("load", load), ("compute", compute), ("store", store)):
            src = getattr(fetch, f"to_{name}")
            if cfg.CMD_QUEUE_DEPTH == 0:
                # the rendezvous: fetch's head goes straight to the module, taken in a
                # cycle its IDLE state raises r_ready. r_ready depends on the module's
                # state alone and w_valid on fetch's staging registers: no loop.
                m.d.comb += [unit.cmd.r_valid.eq(src.w_valid), unit.cmd.r_data.eq(src.w_data),
                             src.w_ready.eq(unit.cmd.r_ready)]
                continue
            q = SyncQueue(INSN_BITS, cfg.CMD_QUEUE_DEPTH)
            m.submodules[f"{name}_cmdq"] = q
            m.d.comb += [q.w_valid.eq(src.w_valid), q.w_data.eq(src.w_data),
                         src.w_ready.eq(q.w_ready),
                         unit.cmd.r_valid.eq(q.r_valid), unit.cmd.r_data.eq(q.r_data),
                         q.r_ready.eq(unit.cmd.r_ready)]

        tokens = {}
        for name in ("l2c", "c2l", "c2s", "s2c"):
            tokens[name] = m.submodules[f"tok_{name}"] = TokenQueue(timing.TOKEN_QUEUE_DEPTH)
        for prod, cons, name in ((load, compute, "l2c"), (compute, load, "c2l"),
                                 (compute, store, "c2s"), (store, compute, "s2c")):
            t = tokens[name]
            m.d.comb += [t.push_valid.eq(getattr(prod, name).push_valid),
                         getattr(prod, name).push_ready.eq(t.push_ready),
                         getattr(cons, name).pop_valid.eq(t.pop_valid),
                         t.pop_ready.eq(getattr(cons, name).pop_ready)]

        wiring.connect(m, load.w_inp, compute.w_inp)
        wiring.connect(m, load.w_wgt, compute.w_wgt)
        m.d.comb += [compute.out_addr.eq(store.out_addr), store.out_data.eq(compute.out_data)]

        order = ARBITER_ORDER
        m.submodules.arbiter = arb = Arbiter(cfg.BUS_WIDTH, p.max_burst_beats, len(order),
                                             p.addr_bits)
        for k, name in enumerate(order):
            wiring.connect(m, u[name].mem, arb.clients[k])
        wiring.connect(m, wiring.flipped(self.mem), arb.mem)
        return m
