"""The compute module: LOAD UOP/ACC, GEMM, ALU, FINISH, and the SRAMs it reads.

It owns the UOP (banked when a bus beat holds several uops), INP, WGT, ACC
and OUT SRAMs (``amaranth.lib.memory``); the load module writes INP/WGT
through ``w_inp``/``w_wgt`` and the store module reads OUT through
``out_addr``/``out_data``.

Instruction flow: IDLE pops the command queue -> TOKENS waits for and pops
the ``pop_prev`` (load->compute) and ``pop_next`` (store->compute) tokens ->
the work -> RETIRE pushes ``push_prev`` (compute->load) and ``push_next``
(compute->store) once both have room -> IDLE. FINISH pulses ``finish`` in its
RETIRE cycle.

GEMM and ALU run on ``core.UopCore`` (one uop iteration per cycle, ALU MUL
one per ``timing.ALU_MUL_CYCLES_PER_UOP``; no stalls).
"""
from __future__ import annotations

from amaranth import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from vta_hw.config import INSN_BITS, VTAConfig
from vta_hw.isa import MemId, Opcode
from vta_hw.rtl.core import UopCore
from vta_hw.rtl.decode import field, memop_fields
from vta_hw.rtl.dma_read import DmaRead, DmaTarget
from vta_hw.rtl.memport import ADDR_BITS, MemPortSignature, SramWriteSignature
from vta_hw.rtl.ports import cmd_read_signature, token_pop_signature, token_push_signature



class Compute(wiring.Component):
    """Compute module for ``cfg`` on a memory of ``addr_bits``-bit byte addresses.

    Raises:
        ValueError: an ACC element is smaller than one bus beat.
    """

    def __init__(self, cfg: VTAConfig, max_burst_beats: int, page_bytes: int,
                 addr_bits: int = ADDR_BITS):
        self.cfg = cfg
        bb = cfg.bus_bytes
        self.targets = [DmaTarget("uop", cfg.uop_elem_bytes, cfg.log_uop_depth, bb),
                        DmaTarget("acc", cfg.acc_elem_bytes, cfg.log_acc_depth, bb)]
        if self.targets[1].banks != 1:
            raise ValueError(f"an ACC element ({cfg.acc_elem_bytes} bytes) must be at least one "
                             f"bus beat ({bb} bytes); narrow BUS_WIDTH or widen BLOCK")
        self.max_burst_beats, self.page_bytes = max_burst_beats, page_bytes
        self.addr_bits = addr_bits
        super().__init__({
            "cmd": Out(cmd_read_signature()),
            "l2c": Out(token_pop_signature()), "s2c": Out(token_pop_signature()),
            "c2l": Out(token_push_signature()), "c2s": Out(token_push_signature()),
            "mem": Out(MemPortSignature(cfg.BUS_WIDTH, max_burst_beats, addr_bits)),
            "w_inp": In(SramWriteSignature(cfg.log_inp_depth, 8 * cfg.inp_elem_bytes)),
            "w_wgt": In(SramWriteSignature(cfg.log_wgt_depth, 8 * cfg.wgt_elem_bytes)),
            "out_addr": In(max(cfg.log_out_depth, 1)), "out_data": Out(8 * cfg.out_elem_bytes),
            "busy": Out(1), "stall": Out(1), "finish": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.cfg
        uop_t = self.targets[0]
        R = uop_t.banks

        # ---- SRAMs ---------------------------------------------------------------
        uop_rd, uop_wr = [], []
        for b in range(R):
            mem = Memory(shape=32, depth=cfg.uop_depth // R, init=[])
            m.submodules[f"uop_bank{b}"] = mem
            wp, rp = mem.write_port(), mem.read_port()
            uop_rd.append(rp)
            uop_wr.append(wp)
        m.submodules.inp_sram = inp_mem = Memory(shape=8 * cfg.inp_elem_bytes,
                                                 depth=cfg.inp_depth, init=[])
        m.submodules.wgt_sram = wgt_mem = Memory(shape=8 * cfg.wgt_elem_bytes,
                                                 depth=cfg.wgt_depth, init=[])
        m.submodules.acc_sram = acc_mem = Memory(shape=8 * cfg.acc_elem_bytes,
                                                 depth=cfg.acc_depth, init=[])
        m.submodules.out_sram = out_mem = Memory(shape=8 * cfg.out_elem_bytes,
                                                 depth=cfg.out_depth, init=[])
        inp_wp, inp_rp = inp_mem.write_port(), inp_mem.read_port()
        wgt_wp, wgt_rp = wgt_mem.write_port(), wgt_mem.read_port()
        acc_wp = acc_mem.write_port()
        acc_a = acc_mem.read_port()         # not transparent: the core forwards its writes
        acc_b = acc_mem.read_port()
        out_wp, out_rp = out_mem.write_port(), out_mem.read_port()
        m.d.comb += [inp_wp.en.eq(self.w_inp.en), inp_wp.addr.eq(self.w_inp.addr),
                     inp_wp.data.eq(self.w_inp.data),
                     wgt_wp.en.eq(self.w_wgt.en), wgt_wp.addr.eq(self.w_wgt.addr),
                     wgt_wp.data.eq(self.w_wgt.data),
                     out_rp.addr.eq(self.out_addr), self.out_data.eq(out_rp.data)]

        # ---- DMA for LOAD UOP / LOAD ACC --------------------------------------
        m.submodules.dma = dma = DmaRead(cfg.BUS_WIDTH, self.max_burst_beats, self.page_bytes,
                                         self.targets, self.addr_bits)
        insn = Signal(INSN_BITS)
        f = memop_fields(insn, cfg)
        for name in ("sram_base", "dram_base", "y_size", "x_size", "x_stride",
                     "y_pad_0", "y_pad_1", "x_pad_0", "x_pad_1"):
            m.d.comb += getattr(dma, name).eq(f[name])
        m.d.comb += dma.sel.eq(f["mem"] == MemId.ACC)
        wiring.connect(m, wiring.flipped(self.mem), dma.mem)
        for b in range(R):
            src, wp = dma.w_uop[b], uop_wr[b]
            m.d.comb += [wp.en.eq(src.en), wp.addr.eq(src.addr), wp.data.eq(src.data)]

        # ---- the GEMM/ALU core ------------------------------------------------------
        m.submodules.core = core = UopCore(cfg, R)
        m.d.comb += [core.insn.eq(insn), inp_rp.addr.eq(core.inp_addr),
                     core.inp_data.eq(inp_rp.data), wgt_rp.addr.eq(core.wgt_addr),
                     core.wgt_data.eq(wgt_rp.data), acc_a.addr.eq(core.acc_a_addr),
                     core.acc_a_data.eq(acc_a.data), acc_b.addr.eq(core.acc_b_addr),
                     core.acc_b_data.eq(acc_b.data),
                     out_wp.en.eq(core.out_w.en), out_wp.addr.eq(core.out_w.addr),
                     out_wp.data.eq(core.out_w.data)]
        for b, rp in enumerate(uop_rd):
            m.d.comb += [rp.addr.eq(core.uop_addr), core.uop_data[b].eq(rp.data)]
        with m.If(core.acc_w.en):               # the core and ACC loads never overlap
            m.d.comb += [acc_wp.en.eq(1), acc_wp.addr.eq(core.acc_w.addr),
                         acc_wp.data.eq(core.acc_w.data)]
        with m.Elif(dma.w_acc[0].en):
            m.d.comb += [acc_wp.en.eq(1), acc_wp.addr.eq(dma.w_acc[0].addr),
                         acc_wp.data.eq(dma.w_acc[0].data)]

        # ---- control -----------------------------------------------------------------
        G = Opcode.GEMM
        opcode = field(insn, cfg, G, "opcode")
        pop_prev, pop_next = field(insn, cfg, G, "pop_prev"), field(insn, cfg, G, "pop_next")
        push_prev, push_next = field(insn, cfg, G, "push_prev"), field(insn, cfg, G, "push_next")
        tokens_ok = (~pop_prev | self.l2c.pop_valid) & (~pop_next | self.s2c.pop_valid)
        push_ok = (~push_prev | self.c2l.push_ready) & (~push_next | self.c2s.push_ready)
        m.d.comb += self.busy.eq(1)
        with m.FSM():
            with m.State("IDLE"):
                m.d.comb += [self.busy.eq(0), self.cmd.r_ready.eq(1)]
                with m.If(self.cmd.r_valid):
                    m.d.sync += insn.eq(self.cmd.r_data)
                    m.next = "TOKENS"
            with m.State("TOKENS"):
                m.d.comb += self.stall.eq(~tokens_ok)
                with m.If(tokens_ok):
                    m.d.comb += [self.l2c.pop_ready.eq(pop_prev), self.s2c.pop_ready.eq(pop_next)]
                    m.next = "RETIRE"
                    with m.If((opcode == Opcode.LOAD) & ((f["mem"] == MemId.UOP)
                                                         | (f["mem"] == MemId.ACC))):
                        m.d.comb += dma.start.eq(1)
                        m.next = "DMA"
                    with m.If(((opcode == Opcode.GEMM) | (opcode == Opcode.ALU)) & ~core.empty):
                        m.d.comb += core.start.eq(1)
                        m.next = "CORE"
            with m.State("DMA"):
                with m.If(dma.done):
                    m.next = "RETIRE"
            with m.State("CORE"):
                with m.If(core.done):
                    m.next = "RETIRE"
            with m.State("RETIRE"):
                m.d.comb += self.stall.eq(~push_ok)
                with m.If(push_ok):
                    m.d.comb += [self.c2l.push_valid.eq(push_prev), self.c2s.push_valid.eq(push_next),
                                 self.finish.eq(opcode == Opcode.FINISH)]
                    m.next = "IDLE"
        return m
