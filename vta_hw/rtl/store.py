"""The store module: STORE from the OUT SRAM to memory.

Instruction flow (``dma_module``, shared with load): IDLE pops its command
queue -> TOKENS waits for and pops the ``pop_prev`` token (compute->store
queue) -> DMA (``DmaWrite``) -> RETIRE pushes the ``push_prev`` token
(store->compute queue) once there is room -> IDLE.
"""
from __future__ import annotations

from amaranth import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from vta_hw.config import INSN_BITS, VTAConfig
from vta_hw.isa import Opcode
from vta_hw.rtl.decode import field, memop_fields
from vta_hw.rtl.dma_module import dma_module_fsm
from vta_hw.rtl.dma_write import DmaWrite
from vta_hw.rtl.memport import ADDR_BITS, MemPortSignature
from vta_hw.rtl.ports import cmd_read_signature, token_pop_signature, token_push_signature


class Store(wiring.Component):
    """Store module for ``cfg`` on a memory of ``addr_bits``-bit byte addresses.

    Raises:
        ValueError: an OUT element is smaller than one bus beat.
    """

    def __init__(self, cfg: VTAConfig, max_burst_beats: int, page_bytes: int,
                 addr_bits: int = ADDR_BITS):
        self.cfg = cfg
        self.max_burst_beats, self.page_bytes = max_burst_beats, page_bytes
        self._dma = DmaWrite(cfg.BUS_WIDTH, max_burst_beats, page_bytes,
                             cfg.out_elem_bytes, cfg.log_out_depth, addr_bits)
        super().__init__({
            "cmd": Out(cmd_read_signature()),
            "c2s": Out(token_pop_signature()), "s2c": Out(token_push_signature()),
            "mem": Out(MemPortSignature(cfg.BUS_WIDTH, max_burst_beats, addr_bits)),
            "out_addr": Out(max(cfg.log_out_depth, 1)), "out_data": In(8 * cfg.out_elem_bytes),
            "busy": Out(1), "stall": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.cfg
        m.submodules.dma = dma = self._dma
        insn = Signal(INSN_BITS)
        f = memop_fields(insn, cfg)
        for name in ("sram_base", "dram_base", "y_size", "x_size", "x_stride"):
            m.d.comb += getattr(dma, name).eq(f[name])
        wiring.connect(m, wiring.flipped(self.mem), dma.mem)
        m.d.comb += [self.out_addr.eq(dma.rd_addr), dma.rd_data.eq(self.out_data)]
        pop_prev = field(insn, cfg, Opcode.STORE, "pop_prev")
        push_prev = field(insn, cfg, Opcode.STORE, "push_prev")

        dma_module_fsm(m, self, insn, dma, pop=pop_prev, pop_port=self.c2s, push=push_prev,
                       push_port=self.s2c)
        return m
