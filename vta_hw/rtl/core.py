"""The GEMM/ALU core: the uop loops and a four-stage pipeline, one uop iteration per cycle.

``start`` (cycle s, with the instruction on ``insn`` and ``empty`` low) makes
the core issue the ``N = iter_out * iter_in * (uop_end - uop_bgn)`` iterations
in cycles s+1 .. s+N, then drain for ``DRAIN_CYCLES``; ``done`` is high in the
last drain cycle (so RETIRE follows ``timing.GEMM_PIPELINE_DEPTH`` cycles
after the last issue). ``insn`` must stay stable until ``done``.

- S0 (issue): loop counters give the uop index ``u`` and the loop offsets
  ``o*factor_out + i*factor_in`` (running sums, no multipliers); the UOP
  SRAM banks are read at ``u // banks``.
- S1: ``dst``/``src``/``wgt`` = uop field + offset; INP and WGT are read.
- S2: ACC is read at ``dst`` (port A) and ``src`` (port B, ALU); the GEMM
  products are registered (``MacArray``).
- S3: adder tree or ``Alu``; ``reset`` gives 0; ACC[dst] and OUT[dst] (low
  8 bits of every lane) are written.

The ACC read ports must be transparent to the ACC write port: reads happen
exactly one cycle before the write stage, so back-to-back iterations that
touch the same accumulator see each other's results in program order, with
no stall.
"""
from __future__ import annotations

from amaranth import Array, Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from vta_hw.config import INSN_BITS, LOOP_ITER_BITS, VTAConfig
from vta_hw.isa import Opcode
from vta_hw.rtl.alu import Alu
from vta_hw.rtl.decode import field, uop_field
from vta_hw.rtl.gemm import MacArray
from vta_hw.rtl.memport import SramWriteSignature

#: Cycles spent draining after the last issue (stages S1..S3).
DRAIN_CYCLES = 3


def _bits(n: int) -> int:
    return max(n, 1)


class UopCore(wiring.Component):
    """The core for ``cfg`` reading a UOP SRAM split into ``uop_banks`` banks."""

    def __init__(self, cfg: VTAConfig, uop_banks: int):
        self.cfg, self.uop_banks = cfg, uop_banks
        self.log_banks = uop_banks.bit_length() - 1
        super().__init__({
            "insn": In(INSN_BITS), "start": In(1), "empty": Out(1), "done": Out(1),
            "uop_addr": Out(_bits(cfg.log_uop_depth - self.log_banks)),
            "uop_data": In(32).array(uop_banks),
            "inp_addr": Out(_bits(cfg.log_inp_depth)), "inp_data": In(8 * cfg.inp_elem_bytes),
            "wgt_addr": Out(_bits(cfg.log_wgt_depth)), "wgt_data": In(8 * cfg.wgt_elem_bytes),
            "acc_a_addr": Out(_bits(cfg.log_acc_depth)), "acc_a_data": In(8 * cfg.acc_elem_bytes),
            "acc_b_addr": Out(_bits(cfg.log_acc_depth)), "acc_b_data": In(8 * cfg.acc_elem_bytes),
            "acc_w": Out(SramWriteSignature(cfg.log_acc_depth, 8 * cfg.acc_elem_bytes)),
            "out_w": Out(SramWriteSignature(cfg.log_out_depth, 8 * cfg.out_elem_bytes)),
        })

    def elaborate(self, platform):
        m = Module()
        cfg, insn, lR = self.cfg, self.insn, self.log_banks
        lanes = cfg.BATCH * cfg.BLOCK_OUT
        G = Opcode.GEMM
        reset = field(insn, cfg, G, "reset")
        uop_bgn, uop_end = field(insn, cfg, G, "uop_bgn"), field(insn, cfg, G, "uop_end")
        iter_out, iter_in = field(insn, cfg, G, "iter_out"), field(insn, cfg, G, "iter_in")
        # (an ALU instruction has no wgt factors: its wgt offsets are junk and unused)
        f_out = {k: field(insn, cfg, G, f"{k}_factor_out") for k in ("dst", "src", "wgt")}
        f_in = {k: field(insn, cfg, G, f"{k}_factor_in") for k in ("dst", "src", "wgt")}
        is_alu = field(insn, cfg, G, "opcode") == Opcode.ALU
        m.d.comb += self.empty.eq((iter_out == 0) | (iter_in == 0) | (uop_end <= uop_bgn))

        # ---- S0: uop loops ----------------------------------------------------------
        u = Signal(cfg.uop_end_bits)
        i, o = Signal(LOOP_ITER_BITS), Signal(LOOP_ITER_BITS)
        base = {k: Signal(32, name=f"base_{k}") for k in f_out}
        base_o = {k: Signal(32, name=f"base_o_{k}") for k in f_out}
        issue = Signal()
        drain = Signal(2)
        m.d.comb += self.uop_addr.eq(u >> lR)
        with m.FSM():
            with m.State("IDLE"):
                with m.If(self.start):
                    m.d.sync += [u.eq(uop_bgn), i.eq(0), o.eq(0)]
                    m.d.sync += [s.eq(0) for s in (*base.values(), *base_o.values())]
                    m.next = "EXEC"
            with m.State("EXEC"):
                m.d.comb += issue.eq(1)
                with m.If(u + 1 == uop_end):
                    m.d.sync += u.eq(uop_bgn)
                    with m.If(i + 1 == iter_in):
                        m.d.sync += [i.eq(0), o.eq(o + 1)]
                        m.d.sync += [base_o[k].eq(base_o[k] + f_out[k]) for k in base]
                        m.d.sync += [base[k].eq(base_o[k] + f_out[k]) for k in base]
                        with m.If(o + 1 == iter_out):
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
                    m.d.comb += self.done.eq(1)
                    m.next = "IDLE"
        s1_valid, s1_lane = Signal(), Signal(_bits(lR))
        s1_base = {k: Signal(32, name=f"s1_base_{k}") for k in base}
        m.d.sync += [s1_valid.eq(issue), s1_lane.eq(u[:lR] if lR else 0)]
        m.d.sync += [s1_base[k].eq(base[k]) for k in base]

        # ---- S1: indices, INP/WGT read ------------------------------------------------
        uop = Signal(32)
        m.d.comb += uop.eq(Array(self.uop_data)[s1_lane] if lR else self.uop_data[0])
        dst = (uop_field(uop, cfg, "dst") + s1_base["dst"])[:_bits(cfg.log_acc_depth)]
        src = (uop_field(uop, cfg, "src") + s1_base["src"])[:32]
        wgt = (uop_field(uop, cfg, "wgt") + s1_base["wgt"])[:32]
        m.d.comb += [self.inp_addr.eq(src), self.wgt_addr.eq(wgt)]
        s2_valid = Signal()
        s2_dst, s2_src = Signal(_bits(cfg.log_acc_depth)), Signal(_bits(cfg.log_acc_depth))
        m.d.sync += [s2_valid.eq(s1_valid), s2_dst.eq(dst), s2_src.eq(src)]

        # ---- S2: ACC reads, products ------------------------------------------------
        m.submodules.mac = mac = MacArray(cfg)
        m.d.comb += [self.acc_a_addr.eq(s2_dst), self.acc_b_addr.eq(s2_src),
                     mac.inp.eq(self.inp_data), mac.wgt.eq(self.wgt_data)]
        s3_valid, s3_dst = Signal(), Signal(_bits(cfg.log_acc_depth))
        m.d.sync += [s3_valid.eq(s2_valid), s3_dst.eq(s2_dst)]

        # ---- S3: adder tree / ALU, write --------------------------------------------
        m.submodules.alu = alu = Alu(lanes)
        imm32 = Signal(32)
        m.d.comb += imm32.eq(field(insn, cfg, Opcode.ALU, "imm").as_signed())
        use_imm = field(insn, cfg, Opcode.ALU, "use_imm")
        m.d.comb += [mac.acc.eq(self.acc_a_data), alu.op.eq(field(insn, cfg, Opcode.ALU, "alu_op")),
                     alu.a.eq(self.acc_a_data),
                     alu.b.eq(Mux(use_imm, Cat(*([imm32] * lanes)), self.acc_b_data))]
        result = Signal(32 * lanes)
        m.d.comb += result.eq(Mux(reset, 0, Mux(is_alu, alu.out, mac.out)))
        m.d.comb += [self.acc_w.en.eq(s3_valid), self.acc_w.addr.eq(s3_dst),
                     self.acc_w.data.eq(result),
                     self.out_w.en.eq(s3_valid), self.out_w.addr.eq(s3_dst),
                     self.out_w.data.eq(Cat(*(result.word_select(k, 32)[:8]
                                              for k in range(lanes))))]
        return m
