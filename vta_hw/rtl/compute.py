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

GEMM/ALU pipeline (one uop iteration issued per cycle, no stalls):

- S0 (issue): loop counters give uop index ``u`` and the loop offsets
  ``o*factor_out + i*factor_in``; the UOP SRAM is read.
- S1: ``dst``/``src``/``wgt`` = uop field + offset; INP and WGT are read.
- S2: ACC is read at ``dst`` (and at ``src`` for the ALU); GEMM products
  are registered.
- S3: adder tree or ALU; ACC[dst] and OUT[dst] (low 8 bits of each lane)
  are written.

The ACC read ports are transparent to its write port, and reads happen
exactly one cycle before the write stage, so back-to-back uops that touch
the same accumulator see each other's results in program order.
"""
from __future__ import annotations

from amaranth import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from vta_hw.config import ALU_IMM_BITS, INSN_BITS, LOOP_ITER_BITS, VTAConfig
from vta_hw.isa import MemId, Opcode
from vta_hw.rtl.alu import Alu
from vta_hw.rtl.decode import field, memop_fields, uop_field
from vta_hw.rtl.dma_read import DmaRead, DmaTarget
from vta_hw.rtl.gemm import MacArray
from vta_hw.rtl.memport import MemPortSignature, SramWriteSignature
from vta_hw.rtl.ports import cmd_read_signature, token_pop_signature, token_push_signature

#: Cycles spent in DRAIN after the last issue (pipeline stages S1..S3); RETIRE follows,
#: so RETIRE comes ``timing.GEMM_PIPELINE_DEPTH`` cycles after the last issue.
DRAIN_CYCLES = 3


class Compute(wiring.Component):
    """Compute module for ``cfg``.

    Raises:
        ValueError: an ACC element is smaller than one bus beat.
    """

    def __init__(self, cfg: VTAConfig, max_burst_beats: int, page_bytes: int):
        self.cfg = cfg
        bb = cfg.bus_bytes
        self.targets = [DmaTarget("uop", cfg.uop_elem_bytes, cfg.log_uop_depth, bb),
                        DmaTarget("acc", cfg.acc_elem_bytes, cfg.log_acc_depth, bb)]
        if self.targets[1].banks != 1:
            raise ValueError(f"an ACC element ({cfg.acc_elem_bytes} bytes) must be at least one "
                             f"bus beat ({bb} bytes); narrow BUS_WIDTH or widen BLOCK")
        self.max_burst_beats, self.page_bytes = max_burst_beats, page_bytes
        super().__init__({
            "cmd": Out(cmd_read_signature()),
            "l2c": Out(token_pop_signature()), "s2c": Out(token_pop_signature()),
            "c2l": Out(token_push_signature()), "c2s": Out(token_push_signature()),
            "mem": Out(MemPortSignature(cfg.BUS_WIDTH, max_burst_beats)),
            "w_inp": In(SramWriteSignature(cfg.log_inp_depth, 8 * cfg.inp_elem_bytes)),
            "w_wgt": In(SramWriteSignature(cfg.log_wgt_depth, 8 * cfg.wgt_elem_bytes)),
            "out_addr": In(max(cfg.log_out_depth, 1)), "out_data": Out(8 * cfg.out_elem_bytes),
            "busy": Out(1), "finish": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.cfg
        lanes = cfg.BATCH * cfg.BLOCK_OUT
        uop_t = self.targets[0]
        R, lR = uop_t.banks, uop_t.log_banks

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
        acc_a = acc_mem.read_port(transparent_for=(acc_wp,))
        acc_b = acc_mem.read_port(transparent_for=(acc_wp,))
        out_wp, out_rp = out_mem.write_port(), out_mem.read_port()
        m.d.comb += [inp_wp.en.eq(self.w_inp.en), inp_wp.addr.eq(self.w_inp.addr),
                     inp_wp.data.eq(self.w_inp.data),
                     wgt_wp.en.eq(self.w_wgt.en), wgt_wp.addr.eq(self.w_wgt.addr),
                     wgt_wp.data.eq(self.w_wgt.data),
                     out_rp.addr.eq(self.out_addr), self.out_data.eq(out_rp.data)]

        # ---- DMA for LOAD UOP / LOAD ACC --------------------------------------
        m.submodules.dma = dma = DmaRead(cfg.BUS_WIDTH, self.max_burst_beats, self.page_bytes,
                                         self.targets)
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

        # ---- instruction fields ---------------------------------------------------
        G = Opcode.GEMM
        opcode = insn[0:3]
        pop_prev, pop_next = field(insn, cfg, G, "pop_prev"), field(insn, cfg, G, "pop_next")
        push_prev, push_next = field(insn, cfg, G, "push_prev"), field(insn, cfg, G, "push_next")
        reset = field(insn, cfg, G, "reset")
        uop_bgn, uop_end = field(insn, cfg, G, "uop_bgn"), field(insn, cfg, G, "uop_end")
        iter_out, iter_in = field(insn, cfg, G, "iter_out"), field(insn, cfg, G, "iter_in")
        f_out = {k: field(insn, cfg, G, f"{k}_factor_out") for k in ("dst", "src", "wgt")}
        f_in = {k: field(insn, cfg, G, f"{k}_factor_in") for k in ("dst", "src", "wgt")}
        alu_op = field(insn, cfg, Opcode.ALU, "alu_op")
        use_imm = field(insn, cfg, Opcode.ALU, "use_imm")
        imm = field(insn, cfg, Opcode.ALU, "imm")
        is_alu = opcode == Opcode.ALU

        # ---- uop loop (S0) ---------------------------------------------------------
        u = Signal(cfg.uop_end_bits)
        i = Signal(LOOP_ITER_BITS)
        o = Signal(LOOP_ITER_BITS)
        base = {k: Signal(32, name=f"base_{k}") for k in ("dst", "src", "wgt")}
        base_o = {k: Signal(32, name=f"base_o_{k}") for k in ("dst", "src", "wgt")}
        issue = Signal()
        last_u, last_i, last_o = u + 1 == uop_end, i + 1 == iter_in, o + 1 == iter_out
        empty = (iter_out == 0) | (iter_in == 0) | (uop_end <= uop_bgn)
        for rp in uop_rd:
            m.d.comb += rp.addr.eq(u >> lR)

        s1_valid, s1_lane = Signal(), Signal(max(lR, 1))
        s1_base = {k: Signal(32, name=f"s1_base_{k}") for k in base}
        m.d.sync += [s1_valid.eq(issue), s1_lane.eq(u[:lR] if lR else 0)]
        m.d.sync += [s1_base[k].eq(base[k]) for k in base]

        # ---- S1: indices, INP/WGT read -------------------------------------------
        uop = Signal(32)
        if R > 1:
            m.d.comb += uop.eq(Array(rp.data for rp in uop_rd)[s1_lane])
        else:
            m.d.comb += uop.eq(uop_rd[0].data)
        dst = (uop_field(uop, cfg, "dst") + s1_base["dst"])[:max(cfg.log_acc_depth, 1)]
        src = (uop_field(uop, cfg, "src") + s1_base["src"])[:32]
        wgt = (uop_field(uop, cfg, "wgt") + s1_base["wgt"])[:32]
        m.d.comb += [inp_rp.addr.eq(src), wgt_rp.addr.eq(wgt)]
        s2_valid = Signal()
        s2_dst = Signal(max(cfg.log_acc_depth, 1))
        s2_src = Signal(max(cfg.log_acc_depth, 1))
        m.d.sync += [s2_valid.eq(s1_valid), s2_dst.eq(dst), s2_src.eq(src)]

        # ---- S2: ACC read, products ------------------------------------------------
        m.submodules.mac = mac = MacArray(cfg)
        m.d.comb += [acc_a.addr.eq(s2_dst), acc_b.addr.eq(s2_src),
                     mac.inp.eq(inp_rp.data), mac.wgt.eq(wgt_rp.data)]
        s3_valid = Signal()
        s3_dst = Signal(max(cfg.log_acc_depth, 1))
        m.d.sync += [s3_valid.eq(s2_valid), s3_dst.eq(s2_dst)]

        # ---- S3: adder tree / ALU, write ----------------------------------------
        m.submodules.alu = alu = Alu(lanes)
        imm32 = Signal(32)
        m.d.comb += imm32.eq(imm.as_signed())
        m.d.comb += [mac.acc.eq(acc_a.data), alu.op.eq(alu_op), alu.a.eq(acc_a.data),
                     alu.b.eq(Mux(use_imm, Cat(*([imm32] * lanes)), acc_b.data))]
        result = Signal(32 * lanes)
        m.d.comb += result.eq(Mux(reset, 0, Mux(is_alu, alu.out, mac.out)))
        with m.If(s3_valid):
            m.d.comb += [acc_wp.en.eq(1), acc_wp.addr.eq(s3_dst), acc_wp.data.eq(result),
                         out_wp.en.eq(1), out_wp.addr.eq(s3_dst),
                         out_wp.data.eq(Cat(*(result.word_select(k, 32)[:8]
                                              for k in range(lanes))))]
        with m.Elif(dma.w_acc[0].en):
            m.d.comb += [acc_wp.en.eq(1), acc_wp.addr.eq(dma.w_acc[0].addr),
                         acc_wp.data.eq(dma.w_acc[0].data)]

        # ---- control -----------------------------------------------------------------
        drain = Signal(2)
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
                with m.If(tokens_ok):
                    m.d.comb += [self.l2c.pop_ready.eq(pop_prev), self.s2c.pop_ready.eq(pop_next)]
                    m.next = "RETIRE"
                    with m.If((opcode == Opcode.LOAD) & ((f["mem"] == MemId.UOP)
                                                         | (f["mem"] == MemId.ACC))):
                        m.d.comb += dma.start.eq(1)
                        m.next = "DMA"
                    with m.If(((opcode == Opcode.GEMM) | is_alu) & ~empty):
                        m.d.sync += [u.eq(uop_bgn), i.eq(0), o.eq(0)]
                        m.d.sync += [base[k].eq(0) for k in base]
                        m.d.sync += [base_o[k].eq(0) for k in base]
                        m.next = "EXEC"
            with m.State("DMA"):
                with m.If(dma.done):
                    m.next = "RETIRE"
            with m.State("EXEC"):
                m.d.comb += issue.eq(1)
                with m.If(last_u):
                    m.d.sync += u.eq(uop_bgn)
                    with m.If(last_i):
                        m.d.sync += [i.eq(0), o.eq(o + 1)]
                        m.d.sync += [base_o[k].eq(base_o[k] + f_out[k]) for k in base]
                        m.d.sync += [base[k].eq(base_o[k] + f_out[k]) for k in base]
                        with m.If(last_o):
                            m.d.sync += drain.eq(DRAIN_CYCLES - 1)
                            m.next = "DRAIN"
                    with m.Else():
                        m.d.sync += i.eq(i + 1)
                        m.d.sync += [base[k].eq(base[k] + f_in[k]) for k in base]
                with m.Else():
                    m.d.sync += u.eq(u + 1)
            with m.State("DRAIN"):
                m.d.sync += drain.eq(drain - 1)
                with m.If(drain == 0):
                    m.next = "RETIRE"
            with m.State("RETIRE"):
                with m.If(push_ok):
                    m.d.comb += [self.c2l.push_valid.eq(push_prev), self.c2s.push_valid.eq(push_next),
                                 self.finish.eq(opcode == Opcode.FINISH)]
                    m.next = "IDLE"
        return m
