"""The GEMM/ALU core: the uop loops and a six-stage pipeline, one uop iteration per cycle.

``start`` (cycle s, with the instruction on ``insn`` and ``empty`` low) makes
the core issue the ``N = iter_out * iter_in * (uop_end - uop_bgn)`` iterations
in cycles s+1, s+1+M, ..., s+1+(N-1)*M, then drain for ``DRAIN_CYCLES + M - 1``
cycles; ``done`` is high in the last drain cycle (so RETIRE comes in cycle
s + N*M + ``timing.GEMM_PIPELINE_DEPTH``). M is 1, except for ALU MUL:
``timing.ALU_MUL_CYCLES_PER_UOP``. ``insn`` must stay stable from one cycle
before ``start`` until ``done`` (the decoded opcode flags are registered).

- S0 (issue): loop counters give the uop index ``u`` and the loop offsets
  ``o*factor_out + i*factor_in`` (running sums, no multipliers); the UOP
  SRAM banks are read at ``u // banks``.
- S1: ``dst``/``src``/``wgt`` = uop field + offset; INP and WGT are read.
- S2: the INP/WGT data are registered (``MacArray``'s input stage).
- S3: ACC is read at ``dst`` (port A) and ``src`` (port B, ALU); the GEMM
  products are registered.
- S4: the ACC data are registered; the product sums are registered.
- S5: ``acc + sums`` or ``Alu``; ``reset`` gives 0; ACC[dst] and OUT[dst]
  (low 8 bits of every lane) are written. An ALU MUL instead hands its
  operands to ``SeqMul`` and writes ACC/OUT ``MUL_LATENCY`` cycles later, in
  the next iteration's S4 (M = MUL_LATENCY + 1). An ALU REQUANT writes 0 to
  ACC[dst] in S5, and the sum ``acc + b`` (``Alu``'s, as ADD) it registers
  there, shifted and clipped by ``Requant``, to OUT[dst] in S6: the cycle after, so
  the last one's in the RETIRE cycle, before a STORE can read OUT (the
  compute module's token comes from that RETIRE). The ACC writes, hence the
  forwarding and the cycle counts, are those of every one-cycle ALU op.

Every SRAM output thus drives flip-flops only (through at most one
multiplexer), and no path runs from an SRAM through a multiplier or the ALU
into an SRAM: for Fmax on FPGAs, where block RAM and DSP outputs are slow
and far apart.

Forwarding: the ACC read ports are not transparent; the core forwards its
own writes. Data read at address x in cycle t (S3) take, in S4, the core's
write of cycle t if it wrote x, and, in S5, its write of cycle t+1 if it
wrote x (a registered copy of each cycle's write data and registered address
matches, one flag per lane so that no flag drives more than 32
multiplexers), so iterations that touch the same accumulator see each
other's results in program order, with no stall. The core's writes and the
ACC DMA never overlap, and an ACC DMA write is never read within two cycles,
so only the core's writes are forwarded.
"""
from __future__ import annotations

from amaranth import Array, Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from vta_hw.config import INSN_BITS, LOOP_ITER_BITS, VTAConfig
from vta_hw.isa import AluOp, Opcode
from vta_hw.rtl.alu import MUL_LATENCY, Alu, SeqMul, lane_flags
from vta_hw.rtl.decode import field, uop_field
from vta_hw.rtl.gemm import MacArray
from vta_hw.rtl.memport import SramWriteSignature
from vta_hw.rtl.requant import Requant

#: Cycles between uop issues (the initiation interval) of GEMM and of every ALU op
#: but MUL (``timing.GEMM_CYCLES_PER_UOP``, ``timing.ALU_CYCLES_PER_UOP``).
CYCLES_PER_UOP = 1
#: Cycles spent draining after the last issue (stages S1..S5).
DRAIN_CYCLES = 5
#: Cycles per ALU MUL iteration: the iteration after it reads ACC in the cycle
#: in which ``SeqMul``'s product is written (``timing.ALU_MUL_CYCLES_PER_UOP``).
MUL_CYCLES = MUL_LATENCY + 1
#: Cycles from the last uop issue to the compute module's RETIRE: the drain, then
#: RETIRE the cycle after ``done`` (``timing.GEMM_PIPELINE_DEPTH``, ``ALU_PIPELINE_DEPTH``).
PIPELINE_DEPTH = DRAIN_CYCLES + 1


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
        p = _Pipe()
        self._decode(m, p)
        self._issue(m, p)          # S0
        self._indices(m, p)        # S1, S2
        self._acc_read(m, p)       # S3, S4
        self._write(m, p)          # S5
        return m

    def _decode(self, m: Module, p: "_Pipe") -> None:
        """The instruction's fields, and its opcode flags registered (``insn`` is stable from
        a cycle before ``start``)."""
        cfg, insn = self.cfg, self.insn
        G, A = Opcode.GEMM, Opcode.ALU
        p.lanes = cfg.BATCH * cfg.BLOCK_OUT
        p.uop_bgn, p.uop_end = field(insn, cfg, G, "uop_bgn"), field(insn, cfg, G, "uop_end")
        p.iter_out, p.iter_in = field(insn, cfg, G, "iter_out"), field(insn, cfg, G, "iter_in")
        # (an ALU instruction has no wgt factors: its wgt offsets are junk and unused)
        p.f_out = {k: field(insn, cfg, G, f"{k}_factor_out") for k in ("dst", "src", "wgt")}
        p.f_in = {k: field(insn, cfg, G, f"{k}_factor_in") for k in ("dst", "src", "wgt")}
        m.d.comb += self.empty.eq((p.iter_out == 0) | (p.iter_in == 0) | (p.uop_end <= p.uop_bgn))
        # opcode flags, registered (here and in ``flags`` below): ``insn`` is stable from
        # a cycle before ``start``
        is_mul, use_imm = Signal(), Signal()
        p.opcode, p.reset = field(insn, cfg, G, "opcode"), field(insn, cfg, G, "reset")
        p.mul_now = (p.opcode == A) & (field(insn, cfg, A, "alu_op") == AluOp.MUL)
        alu_ctl = Signal(len(Requant(1).ctl))
        p.req_now = (p.opcode == A) & (field(insn, cfg, A, "alu_op") == AluOp.REQUANT)
        m.d.sync += [is_mul.eq(p.mul_now), use_imm.eq(field(insn, cfg, A, "use_imm")),
                     alu_ctl.eq(field(insn, cfg, A, "imm")[:len(alu_ctl)])]
        p.is_mul, p.use_imm, p.alu_ctl = is_mul, use_imm, alu_ctl
        p.alu_op = field(insn, cfg, A, "alu_op")      # ``Alu`` registers it

    def _issue(self, m: Module, p: "_Pipe") -> None:
        """S0: the uop loops (IDLE -> EXEC -> DRAIN), ``issue`` high in each issue cycle."""
        cfg, lR = self.cfg, self.log_banks
        u = Signal(cfg.uop_end_bits)
        i, o = Signal(LOOP_ITER_BITS), Signal(LOOP_ITER_BITS)
        base = {k: Signal(32, name=f"base_{k}") for k in p.f_out}
        base_o = {k: Signal(32, name=f"base_o_{k}") for k in p.f_out}
        issue = Signal()
        hold = Signal(range(MUL_CYCLES))          # cycles left before the next issue
        drain = Signal(range(DRAIN_CYCLES + MUL_CYCLES - 1))
        f_out, f_in, mul_now = p.f_out, p.f_in, p.mul_now
        m.d.comb += self.uop_addr.eq(u >> lR)
        with m.FSM():
            with m.State("IDLE"):
                with m.If(self.start):
                    m.d.sync += [u.eq(p.uop_bgn), i.eq(0), o.eq(0), hold.eq(0)]
                    m.d.sync += [s.eq(0) for s in (*base.values(), *base_o.values())]
                    m.next = "EXEC"
            with m.State("EXEC"):
                with m.If(hold != 0):
                    m.d.sync += hold.eq(hold - 1)
                with m.Else():
                    m.d.comb += issue.eq(1)
                    m.d.sync += hold.eq(Mux(mul_now, MUL_CYCLES - 1, 0))
                    with m.If(u + 1 == p.uop_end):
                        m.d.sync += u.eq(p.uop_bgn)
                        with m.If(i + 1 == p.iter_in):
                            m.d.sync += [i.eq(0), o.eq(o + 1)]
                            m.d.sync += [base_o[k].eq(base_o[k] + f_out[k]) for k in base]
                            m.d.sync += [base[k].eq(base_o[k] + f_out[k]) for k in base]
                            with m.If(o + 1 == p.iter_out):
                                m.d.sync += drain.eq(Mux(mul_now, DRAIN_CYCLES + MUL_CYCLES - 2,
                                                         DRAIN_CYCLES - 1))
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
        p.s1_valid, p.s1_lane, p.s1_base = s1_valid, s1_lane, s1_base

    def _indices(self, m: Module, p: "_Pipe") -> None:
        """S1: uop fields + loop offsets give dst/src/wgt, INP and WGT are read; S2: their
        data go into the MAC array's input registers."""
        cfg, lR = self.cfg, self.log_banks
        # ---- S1: indices, INP/WGT read ------------------------------------------------
        uop = Signal(32)
        m.d.comb += uop.eq(Array(self.uop_data)[p.s1_lane] if lR else self.uop_data[0])
        dst = (uop_field(uop, cfg, "dst") + p.s1_base["dst"])[:_bits(cfg.log_acc_depth)]
        src = (uop_field(uop, cfg, "src") + p.s1_base["src"])[:32]
        wgt = (uop_field(uop, cfg, "wgt") + p.s1_base["wgt"])[:32]
        m.d.comb += [self.inp_addr.eq(src), self.wgt_addr.eq(wgt)]
        s2_valid = Signal()
        s2_dst, s2_src = Signal(_bits(cfg.log_acc_depth)), Signal(_bits(cfg.log_acc_depth))
        m.d.sync += [s2_valid.eq(p.s1_valid), s2_dst.eq(dst), s2_src.eq(src)]

        # ---- S2: INP/WGT data into the MAC array ---------------------------------------
        m.submodules.mac = mac = MacArray(cfg)
        m.d.comb += [mac.inp.eq(self.inp_data), mac.wgt.eq(self.wgt_data)]
        s3_valid = Signal()
        s3_dst, s3_src = Signal(_bits(cfg.log_acc_depth)), Signal(_bits(cfg.log_acc_depth))
        m.d.sync += [s3_valid.eq(s2_valid), s3_dst.eq(s2_dst), s3_src.eq(s2_src)]
        p.mac, p.s3_valid, p.s3_dst, p.s3_src = mac, s3_valid, s3_dst, s3_src

    def _acc_read(self, m: Module, p: "_Pipe") -> None:
        """S3: ACC is read at dst (port A) and src (port B); S4: the data registered, each
        with the forwarding of the core's own writes (module docstring)."""
        cfg, insn, lanes = self.cfg, self.insn, p.lanes
        s3_dst, s3_src, use_imm = p.s3_dst, p.s3_src, p.use_imm
        # ---- S3: ACC reads ------------------------------------------------------------
        m.d.comb += [self.acc_a_addr.eq(s3_dst), self.acc_b_addr.eq(s3_src)]
        s4_valid = Signal()
        s4_dst, s4_src = Signal(_bits(cfg.log_acc_depth)), Signal(_bits(cfg.log_acc_depth))
        m.d.sync += [s4_valid.eq(p.s3_valid), s4_dst.eq(s3_dst), s4_src.eq(s3_src)]
        # forwarding: the core's write of each cycle (S5's or the multiplier's) ...
        last_w = Signal(8 * cfg.acc_elem_bytes)
        m.d.sync += last_w.eq(self.acc_w.data)

        def forward(addr, data, name, enable=1):
            """``data`` (read at ``addr`` one cycle earlier) with that cycle's core write."""
            hit = lane_flags(m, self.acc_w.en & (self.acc_w.addr == addr) & enable, name,
                              lanes)
            return Cat(*(Mux(hit[k], last_w.word_select(k, 32), data.word_select(k, 32))
                         for k in range(lanes)))

        # ---- S4: ACC data registered, with the write of the S3 cycle ----------------
        # (operand b is the immediate instead when ``use_imm``: no forwarding for it then)
        imm32 = Signal(32)
        m.d.comb += imm32.eq(field(insn, cfg, Opcode.ALU, "imm").as_signed())
        s4_a, s4_b = Signal(32 * lanes), Signal(32 * lanes)
        m.d.sync += [s4_a.eq(forward(s3_dst, self.acc_a_data, "fwd4a")),
                     s4_b.eq(Mux(use_imm, Cat(*([imm32] * lanes)),
                                 forward(s3_src, self.acc_b_data, "fwd4b")))]
        s5_valid, s5_dst = Signal(), Signal(_bits(cfg.log_acc_depth))
        m.d.sync += [s5_valid.eq(s4_valid), s5_dst.eq(s4_dst)]
        # ... and with the write of the S4 cycle
        acc_a, operand_b = Signal(32 * lanes), Signal(32 * lanes)
        m.d.comb += [acc_a.eq(forward(s4_dst, s4_a, "fwd5a")),
                     operand_b.eq(forward(s4_src, s4_b, "fwd5b", ~use_imm))]
        p.s5_valid, p.s5_dst, p.acc_a, p.operand_b = s5_valid, s5_dst, acc_a, operand_b

    def _write(self, m: Module, p: "_Pipe") -> None:
        """S5: the adder, the ALU or the MUL's start; the result (or 0 for ``reset`` and
        REQUANT) into ACC[dst] and its low 8 bits per lane into OUT[dst]; S6 (REQUANT):
        ``Requant``'s value of the sum registered in S5 into OUT[dst]."""
        cfg, lanes, mac = self.cfg, p.lanes, p.mac
        s5_valid, s5_dst, acc_a, operand_b = p.s5_valid, p.s5_dst, p.acc_a, p.operand_b
        is_mul, opcode, reset, mul_now, A = p.is_mul, p.opcode, p.reset, p.mul_now, Opcode.ALU
        m.submodules.alu = alu = Alu(lanes)
        m.submodules.mul = mul = SeqMul(lanes)
        m.submodules.requant = requant = Requant(lanes)
        m.d.comb += [mac.acc.eq(acc_a), alu.op.eq(p.alu_op), alu.a.eq(acc_a),
                     alu.b.eq(operand_b), mul.a.eq(acc_a), mul.b.eq(operand_b),
                     mul.start.eq(s5_valid & is_mul)]
        # the multiplier's write: MUL_LATENCY cycles after its start
        mul_v = Signal(MUL_LATENCY)
        mul_dst = Signal(_bits(cfg.log_acc_depth))
        m.d.sync += mul_v.eq(Cat(s5_valid & is_mul, mul_v[:-1]))
        with m.If(s5_valid & is_mul):
            m.d.sync += mul_dst.eq(s5_dst)
        # the result: one of the three units, or 0 (``reset``); registered one-hot selects
        sel_mac = lane_flags(m, ~reset & (opcode != A), "sel_mac", lanes)
        sel_alu = lane_flags(m, ~reset & (opcode == A) & ~mul_now & ~p.req_now, "sel_alu",
                              lanes)
        sel_mul = lane_flags(m, ~reset & mul_now, "sel_mul", lanes)
        # REQUANT: 0 to ACC in S5 (no unit selected); the ALU's sum registered, shifted
        # and clipped by Requant, to OUT in S6, which then owns the OUT port
        sel_req = lane_flags(m, ~reset & p.req_now, "sel_req", lanes)
        s6_valid, s6_dst, s6_sum = Signal(), Signal(_bits(cfg.log_acc_depth)), Signal(32 * lanes)
        m.d.sync += [s6_valid.eq(s5_valid & sel_req[0]), s6_dst.eq(s5_dst), s6_sum.eq(alu.out)]
        m.d.comb += [requant.sum.eq(s6_sum), requant.ctl.eq(p.alu_ctl)]
        result = Signal(32 * lanes)
        m.d.comb += result.eq(Cat(*(
            Mux(sel_mac[k], mac.out.word_select(k, 32), 0)
            | Mux(sel_alu[k], alu.out.word_select(k, 32), 0)
            | Mux(sel_mul[k], mul.out.word_select(k, 32), 0) for k in range(lanes))))
        w_en = Signal()
        w_addr = Signal(_bits(cfg.log_acc_depth))
        m.d.comb += [w_en.eq(Mux(is_mul, mul_v[-1], s5_valid)),
                     w_addr.eq(Mux(is_mul, mul_dst, s5_dst))]
        m.d.comb += [self.acc_w.en.eq(w_en), self.acc_w.addr.eq(w_addr),
                     self.acc_w.data.eq(result),
                     self.out_w.en.eq(Mux(sel_req[0], s6_valid, w_en)),
                     self.out_w.addr.eq(Mux(sel_req[0], s6_dst, w_addr)),
                     self.out_w.data.eq(Cat(*(Mux(sel_req[k], requant.out.word_select(k, 8),
                                                  result.word_select(k, 32)[:8])
                                              for k in range(lanes))))]


class _Pipe:
    """The signals ``UopCore``'s pipeline stages hand on (attributes set as they are made)."""
