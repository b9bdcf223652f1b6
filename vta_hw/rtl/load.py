"""The load module: LOAD INP / LOAD WGT, 2-D strided DMA with zero padding.

Instruction flow (``dma_module``, shared with store; ``vta_hw.timing`` has the
cycle counts): IDLE pops its command queue -> TOKENS waits for and pops the ``pop_next``
token (compute->load queue) -> DMA (``DmaRead``) -> RETIRE pushes the
``push_next`` token (load->compute queue) once there is room -> IDLE.
"""
from __future__ import annotations

from amaranth import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import Out

from vta_hw.config import INSN_BITS, VTAConfig
from vta_hw.isa import MemId, Opcode
from vta_hw.rtl.decode import field, memop_fields
from vta_hw.rtl.dma_module import dma_module_fsm
from vta_hw.rtl.dma_read import DmaRead, DmaTarget
from vta_hw.rtl.memport import ADDR_BITS, MemPortSignature, SramWriteSignature
from vta_hw.rtl.ports import cmd_read_signature, token_pop_signature, token_push_signature


class Load(wiring.Component):
    """Load module for ``cfg`` with bursts of up to ``max_burst_beats`` within ``page_bytes`` pages,
    on a memory of ``addr_bits``-bit byte addresses.

    Raises:
        ValueError: an INP or WGT element is smaller than one bus beat.
    """

    def __init__(self, cfg: VTAConfig, max_burst_beats: int, page_bytes: int,
                 addr_bits: int = ADDR_BITS):
        self.cfg = cfg
        bb = cfg.bus_bytes
        self.targets = [DmaTarget("inp", cfg.inp_elem_bytes, cfg.log_inp_depth, bb),
                        DmaTarget("wgt", cfg.wgt_elem_bytes, cfg.log_wgt_depth, bb)]
        for t in self.targets:
            if t.banks != 1:
                raise ValueError(f"a {t.name.upper()} element ({t.elem_bytes} bytes) must be at "
                                 f"least one bus beat ({bb} bytes); narrow BUS_WIDTH or widen BLOCK")
        self.max_burst_beats, self.page_bytes = max_burst_beats, page_bytes
        self.addr_bits = addr_bits
        super().__init__({
            "cmd": Out(cmd_read_signature()),
            "c2l": Out(token_pop_signature()), "l2c": Out(token_push_signature()),
            "mem": Out(MemPortSignature(cfg.BUS_WIDTH, max_burst_beats, addr_bits)),
            "w_inp": Out(SramWriteSignature(cfg.log_inp_depth, 8 * cfg.inp_elem_bytes)),
            "w_wgt": Out(SramWriteSignature(cfg.log_wgt_depth, 8 * cfg.wgt_elem_bytes)),
            "busy": Out(1), "stall": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.cfg
        m.submodules.dma = dma = DmaRead(cfg.BUS_WIDTH, self.max_burst_beats, self.page_bytes,
                                         self.targets, self.addr_bits)
        insn = Signal(INSN_BITS)
        f = memop_fields(insn, cfg)
        for name in ("sram_base", "dram_base", "y_size", "x_size", "x_stride",
                     "y_pad_0", "y_pad_1", "x_pad_0", "x_pad_1"):
            m.d.comb += getattr(dma, name).eq(f[name])
        m.d.comb += dma.sel.eq(f["mem"] == MemId.WGT)
        wiring.connect(m, wiring.flipped(self.mem), dma.mem)
        for name in ("inp", "wgt"):
            src, dst = getattr(dma, f"w_{name}")[0], getattr(self, f"w_{name}")
            m.d.comb += [dst.en.eq(src.en), dst.addr.eq(src.addr), dst.data.eq(src.data)]
        pop_next = field(insn, cfg, Opcode.LOAD, "pop_next")
        push_next = field(insn, cfg, Opcode.LOAD, "push_next")

        dma_module_fsm(m, self, insn, dma, pop=pop_next, pop_port=self.c2l, push=push_next,
                       push_port=self.l2c)
        return m
