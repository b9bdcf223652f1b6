"""The cycle model on hand-built programs with hand-computed cycle counts.

Every expected count is derived in the comments from the rules in
``sim/cycle.py``'s docstring (which follow ``vta_hw/timing.py`` and the RTL),
on the default preset with ``DramTiming()``: 8-byte beats, one per cycle,
read data 32 cycles after the accept, bursts of up to 256 beats. ``D_G`` / ``D_A`` are
``GEMM_PIPELINE_DEPTH`` / ``ALU_PIPELINE_DEPTH``. Notation: ``q`` accept,
``d`` dequeue (IDLE), ``s`` token pop (TOKENS), ``r`` RETIRE.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from cycle_helpers import DEFAULT, gemm, program
from hand_conv2d import hand_conv2d_program
from sim import cycle, functional
from sim.cycle import CycleDeadlockError, TimingParams
from sim.errors import CycleLimitError, DeadlockError
from sim.random_program import random_program
from vta_hw import timing as T
from vta_hw.config import load_config
from vta_hw.isa import Alu, AluOp, Finish, Gemm, Load, MemId, Store
from vta_hw.timing import DramTiming

D_G, D_A = T.GEMM_PIPELINE_DEPTH, T.ALU_PIPELINE_DEPTH


def cycles(insns, **kw) -> cycle.CycleResult:
    return cycle.run(program(insns), values=False, **kw)


def test_finish_only():
    # fetch: REQ in cycle 1, accepted (q=1); 16 B = 2 beats at 33, 34; staged 34,
    # dispatched 35; compute d=36, s=37, FINISH r=38: cycles 0..38
    r = cycles([Finish()])
    assert r.cycles == 39
    assert r.modules["fetch"].busy + sum(r.modules["fetch"].stalls.values()) == 35  # 1..35
    assert r.modules["compute"].busy == 2  # TOKENS, RETIRE


@pytest.mark.parametrize("n", [1, 7, 1000])
def test_gemm_and_alu_loops(n):
    # 4 beats 33..36: GEMM staged 34 -> visible 36, FINISH visible 38.
    # GEMM d=36 s=37, issues 38 .. 37+n, r = 37+n+D; FINISH d, s, r: +1 +2 +3
    assert cycles([gemm(n), Finish()]).cycles == 41 + n + D_G
    alu = Alu(alu_op=AluOp.ADD, use_imm=True, imm=1, uop_bgn=0, uop_end=1, iter_out=n, iter_in=1)
    assert cycles([alu, Finish()]).cycles == 41 + n + D_A
    # the three loop extents multiply
    g = Gemm(uop_bgn=0, uop_end=3, iter_out=2, iter_in=5)
    assert cycles([g, Finish()]).cycles == 41 + 30 + D_G


@pytest.mark.parametrize("n", [1, 2, 7, 300])
@pytest.mark.parametrize("reset", [False, True])
def test_alu_mul_occupies_m_cycles_per_uop(n, reset):
    # M = ALU_MUL_CYCLES_PER_UOP: d=36 s=37, issues 38, 38+M, .., 38+(n-1)M; each
    # occupies M cycles, r = 37 + n*M + D_A; FINISH +1 +2 +3
    m = T.ALU_MUL_CYCLES_PER_UOP
    assert m > 1
    mul = Alu(alu_op=AluOp.MUL, reset=reset, use_imm=True, imm=-3, uop_bgn=0, uop_end=1,
              iter_out=n, iter_in=1)
    assert cycles([mul, Finish()]).cycles == 41 + n * m + D_A
    # iter_in and the uop range count the same way
    mul2 = Alu(alu_op=AluOp.MUL, uop_bgn=0, uop_end=1, iter_out=1, iter_in=n)
    assert cycles([mul2, Finish()]).cycles == 41 + n * m + D_A
    # the other ops keep one cycle per uop; a MUL between them costs its own n*M only
    add = Alu(alu_op=AluOp.ADD, use_imm=True, imm=1, uop_bgn=0, uop_end=1, iter_out=n, iter_in=1)
    one = cycles([add, Finish()]).cycles
    both = cycles([add, mul, add, Finish()]).cycles
    assert one == 41 + n + D_A
    # ADD d=36 s=37 r=37+n+D_A; MUL (visible from 38) d=r+1, s=r+2, r'=s+n*M+D_A;
    # ADD d=r'+1, s=r'+2, r''=s+n+D_A; FINISH d s r: +1 +2 +3; cycles r_FINISH + 1
    assert both == 37 + (n + D_A) + 2 + (n * m + D_A) + 2 + (n + D_A) + 4


def test_alu_mul_cycles_per_uop_reaches_the_model():
    mul = Alu(alu_op=AluOp.MUL, uop_bgn=0, uop_end=1, iter_out=10, iter_in=1)
    for m in (1, 3, 8):
        r = cycles([mul, Finish()], params=TimingParams(alu_mul_cycles_per_uop=m))
        assert r.cycles == 41 + 10 * m + D_A
    assert TimingParams.from_contract().alu_mul_cycles_per_uop == T.ALU_MUL_CYCLES_PER_UOP


def test_empty_gemm_goes_straight_to_retire():
    # s=37, r=38; FINISH d=39 s=40 r=41
    assert cycles([gemm(0), Finish()]).cycles == 42


def test_load_then_gemm_through_a_token():
    # 6 beats 33..38. LOAD: d=36 s=37 ROW 38, REQ 39 = q (the port is free from 39),
    # 32 B = 4 beats 71..74, FIN 75, r=76 pushes l2c (visible 77).
    # GEMM: d=38, s=77, r=78+D_G; FINISH +1 +2 +3.
    insns = [Load(mem=MemId.INP, y_size=1, x_size=2, x_stride=2, push_next=True),
             gemm(1, pop_prev=True), Finish()]
    r = cycles(insns)
    assert r.cycles == 82 + D_G
    assert r.modules["compute"].stalls["token"] == 77 - 39  # TOKENS 39..76
    assert r.dram_read_bytes == 48 + 32


def _race(prio=None):
    # GEMM(1) d=36 s=37 r=38+D_G; LOAD ACC d=39+D_G s=40+D_G ROW, REQ at 42+D_G.
    # LOAD INP d=38 s=39 ROW 40, x_pad_0 = P zeros, REQ at 41+P: same cycle T.
    pad = 1 + D_G
    insns = [gemm(1), Load(mem=MemId.INP, y_size=1, x_size=1, x_stride=1, x_pad_0=pad),
             Load(mem=MemId.ACC, y_size=1, x_size=1, x_stride=1), Finish()]
    return cycles(insns, **({"params": TimingParams(arbiter_priority=prio)} if prio else {})), \
        41 + pad


def test_arbiter_fixed_priority():
    r, t = _race()
    # load wins: INP beats T+32, T+33; compute accepted T+34, 8 beats T+66..T+73,
    # FIN T+74, r T+75; FINISH r = T+78
    assert r.cycles == t + 79
    assert r.modules["compute"].stalls["memory"] == 34
    assert r.modules["load"].stalls["memory"] == 0
    # compute first: its 8 beats T+32..T+39, FIN T+40, r T+41, FINISH r T+44
    r, t = _race(("fetch", "compute", "load", "store"))
    assert r.cycles == t + 45
    assert r.modules["load"].stalls["memory"] == 40


def test_full_command_queue_holds_fetch():
    # depth 1: GEMM0 dispatched 35, dequeued 36; GEMM1 dispatched 37 (room from 37);
    # FINISH (staged 38) waits until GEMM1 is dequeued at r0+1 = 48+D_G: dispatched 49+D_G.
    # GEMM1 s=49+D_G r=59+2D_G; FINISH d, s, r: +1 +2 +3
    r = cycles([gemm(10), gemm(10), Finish()], params=TimingParams(cmd_queue_depth=1))
    assert r.cycles == 63 + 2 * D_G


def test_cmd_queue_depth_comes_from_the_config():
    # the same program on a config with CMD_QUEUE_DEPTH=1 times as TimingParams(depth 1)
    shallow = dataclasses.replace(DEFAULT, CMD_QUEUE_DEPTH=1)
    insns = [gemm(10), gemm(10), Finish()]
    r = cycle.run(program(insns, shallow), values=False)
    assert r.cycles == 63 + 2 * D_G == cycles(insns, params=TimingParams(cmd_queue_depth=1)).cycles
    assert TimingParams.for_config(shallow).cmd_queue_depth == 1
    assert TimingParams.for_config(DEFAULT) == TimingParams.from_contract()
    none = dataclasses.replace(DEFAULT, CMD_QUEUE_DEPTH=0)  # the rendezvous, see below
    assert cycle.run(program(insns, none), values=False).cycles == 62 + 2 * D_G


def test_rendezvous_hands_over_in_the_dispatch_cycle():
    # CMD_QUEUE_DEPTH = 0: GEMM0 staged 34, dispatched and dequeued 35 (through a queue: 36),
    # s=36, r0=46+D_G. GEMM1 (staged 36) waits for compute's IDLE at r0+1: d=47+D_G,
    # s=48+D_G, r1=58+2D_G; FINISH d=59+2D_G, s, r=61+2D_G: a cycle less than depth 1
    insns = [gemm(10), gemm(10), Finish()]
    assert cycles(insns, params=TimingParams(cmd_queue_depth=0)).cycles == 62 + 2 * D_G
    assert cycles(insns, params=TimingParams(cmd_queue_depth=1)).cycles == 63 + 2 * D_G
    # FINISH staged 34, d=35, s=36, r=37
    assert cycles([Finish()], params=TimingParams(cmd_queue_depth=0)).cycles == 38


def test_rendezvous_holds_fetch_until_the_module_is_idle():
    # the LOAD (staged 38) is behind GEMM1, dispatched at 47+D_G (above): the LOAD is
    # dispatched to the idle load module, and dequeued, at 48+D_G. With a one-entry queue
    # GEMM1 waits in it from 37, and the LOAD is dispatched at 39 and dequeued at 40.
    insns = [gemm(10), gemm(10), Load(mem=MemId.INP, y_size=1, x_size=1, x_stride=1,
                                      push_next=True), Finish(pop_prev=True)]
    for depth, d in ((0, 48 + D_G), (1, 40)):
        r = cycles(insns, params=TimingParams(cmd_queue_depth=depth), trace=True)
        assert r.trace.spans["load"][0][:2] == (2, d), depth


def test_full_token_queue_holds_the_producer():
    # depth 1: L0 (sync) d=38 s=39 FIN 40 r=41 pushes; L1 r=45 finds the queue full
    # until GEMMa pops it at s=59+D_G: pushes at 60+D_G.
    # GEMMa r=60+2D_G; GEMMb d=61+2D_G s=62+2D_G r=63+3D_G; FINISH r=66+3D_G.
    insns = [gemm(20), Load(mem=MemId.INP, push_next=True), Load(mem=MemId.INP, push_next=True),
             gemm(1, pop_prev=True), gemm(1, pop_prev=True), Finish()]
    r = cycles(insns, params=TimingParams(token_queue_depth=1))
    assert r.cycles == 67 + 3 * D_G
    assert r.modules["load"].stalls["queue_full"] == 15 + D_G


def test_store_waits_for_write_completion():
    # STORE d=36 s=37 ROW 38 REQ 39 = q; 2 beats at 40, 41 (q+1+k); wr_done 73;
    # FIN 74, r=75 pushes s2c (visible 76). FINISH d=38 s=76 r=77.
    r = cycles([Store(y_size=1, x_size=1, x_stride=1, push_prev=True), Finish(pop_next=True)])
    assert r.cycles == 78
    assert r.dram_write_bytes == 16


def test_padding_costs_a_cycle_per_element():
    # LOAD d=36 s=37; pad row: ROW 38, 3 zeros 39..41; data row: ROW 42, x_pad_0 43,
    # REQ 44 = q, beats 76, 77, x_pad_1 78; FIN 79, r=80 (visible 81). FINISH s=81 r=82.
    insns = [Load(mem=MemId.INP, y_size=1, x_size=1, x_stride=1, y_pad_0=1, x_pad_0=1,
                  x_pad_1=1, push_next=True), Finish(pop_prev=True)]
    assert cycles(insns).cycles == 83


def test_bursts_split_at_max_burst_beats():
    # a WGT element is 256 B = 32 beats. Default (256-beat bursts): one burst accepted
    # at 39, beats 71..102; FIN 103, r=104; FINISH s=105 r=106
    insns = [Load(mem=MemId.WGT, y_size=1, x_size=1, x_stride=1, push_next=True),
             Finish(pop_prev=True)]
    assert cycles(insns).cycles == 107
    # 16-beat bursts: accepted at 39 (beats 71..86) and 87 (beats 119..134); FIN 135,
    # r=136; FINISH s=137 r=138
    assert cycles(insns, dram_timing=DramTiming(max_burst_beats=16)).cycles == 139
    # a shorter max burst: 4 bursts of 8 beats, each 32 + 8 cycles after its REQ
    r = cycles(insns, dram_timing=DramTiming(max_burst_beats=8))
    assert r.cycles == 203  # q=39, 79, 119, 159; last beat 198; FIN 199, r=200; FINISH r=202


def test_fetch_bursts_and_staging():
    # 16-beat bursts. 17 instructions = 34 beats: bursts of 16, 16, 2. Burst 1: q=1, beats 33..48;
    # staging empty at 50 -> q=50, beats 82..97; last dispatch 98 -> q=99, beats 131, 132.
    # Compute: GEMM k dequeued at 36 + k*(3+D_G); GEMM15 r = 83+16D_G; FINISH r = 86+16D_G.
    r = cycles([gemm(1)] * 16 + [Finish()], dram_timing=DramTiming(max_burst_beats=16))
    assert r.cycles == 87 + 16 * D_G
    f = r.modules["fetch"]
    assert f.busy + sum(f.stalls.values()) == 133  # REQ/BEATS from 1 to 133
    assert f.insns == 17


def test_dram_timing_parameters_reach_the_model():
    base = cycles([Finish()]).cycles
    assert cycles([Finish()], dram_timing=DramTiming(latency=10)).cycles == base - 22
    # 2 beats of 8 B at 4 B/cycle: one every 2 cycles
    assert cycles([Finish()], dram_timing=DramTiming(bytes_per_cycle=4)).cycles == base + 1


def test_counters_add_up_and_values_match_functional():
    small = load_config("1x4_i8w8a32_10_10_10_11_bus32")
    for cfg in (small, dataclasses.replace(small, CMD_QUEUE_DEPTH=0),
                load_config("1x8_i8w8a32_11_12_13_14"), DEFAULT,
                load_config("2x16_i8w8a32_15_15_18_18")):
        for seed in range(12):
            prog, _ = random_program(cfg, seed)
            r = cycle.run(prog)
            f = functional.run(prog)
            assert np.array_equal(r.dram, f.dram), (cfg.name, seed)
            for m, st in r.modules.items():
                assert st.busy + st.idle + sum(st.stalls.values()) == r.cycles, (cfg.name, seed, m)
            assert r.leftover_tokens == f.leftover_tokens
            # every event counter, the scheduler's (steps, tokens, insns per module) included
            assert r.counters.to_dict() == f.counters.to_dict(), (cfg.name, seed)
            gemm_macs = sum(i.iter_out * i.iter_in * (i.uop_end - i.uop_bgn)
                            for i in prog.insns if i.opcode.name == "GEMM" and not i.reset)
            assert r.gemm_macs == gemm_macs * cfg.macs_per_cycle


def test_conv_workload_is_correct_and_busy():
    cfg = load_config("1x4_i8w8a32_10_10_10_11_bus32")
    prog, expected = hand_conv2d_program(cfg, h=6, w=6, cin=8, cout=8, rows=2, shift=4)
    r = cycle.run(prog)
    assert np.array_equal(prog.read(r.dram, "out"), expected)
    assert 0 < r.gemm_utilization < 1
    assert r.dram_bytes_per_cycle <= r.peak_dram_bytes_per_cycle


def test_long_gemm_costs_one_event():
    # 16383 x 16383 x 4 uop iterations (over a billion cycles) in well under a second
    g = Gemm(uop_bgn=0, uop_end=4, iter_out=16383, iter_in=16383)
    r = cycles([g, Finish()])
    assert r.cycles == 41 + 16383 * 16383 * 4 + D_G
    assert r.gemm_utilization > 0.99


def test_deadlock_reports_each_module():
    with pytest.raises(CycleDeadlockError) as e:
        cycles([gemm(1, pop_prev=True), Finish()])
    err = e.value
    assert err.blocked == [("compute", 0, "a token in l2c")]
    assert err.states["compute"]["insn"] == 0
    assert err.states["queues"]["compute commands"] == 1  # FINISH still queued
    assert "compute at instruction 0 waits on a token in l2c" in str(err)


def test_deadlock_of_a_full_command_queue():
    # 18 GEMMs wait for tokens that LOADs after them in program order would push:
    # compute holds the first in TOKENS and 16 in its queue, so fetch cannot dispatch
    # the 18th nor reach the LOADs (fine with unbounded queues, a what-if of the
    # functional model; under the hardware's depths it deadlocks there too)
    n = T.CMD_QUEUE_DEPTH + 2
    insns = [gemm(1, pop_prev=True)] * n + [Load(mem=MemId.INP, push_next=True)] * n + [Finish()]
    functional.run(program(insns), cmd_queue_depth=None)
    with pytest.raises(DeadlockError, match="fetch at instruction 17 waits on compute command"):
        functional.run(program(insns))
    with pytest.raises(CycleDeadlockError) as e:
        cycles(insns)
    st = e.value.states
    assert st["fetch"]["insn"] == n - 1 and st["fetch"]["waits"] == "room in the compute commands queue (full)"
    assert st["compute"]["insn"] == 0 and st["compute"]["waits"] == "a token in l2c"
    assert st["queues"]["compute commands"] == T.CMD_QUEUE_DEPTH
    assert st["load"]["insn"] is None


def test_deadlock_of_the_rendezvous():
    # fine with one-entry queues (GEMM1 waits in compute's, fetch dispatches the LOAD);
    # without queues GEMM1 waits in staging until compute is idle, and compute waits for
    # the token of the LOAD behind GEMM1
    insns = [gemm(1, pop_prev=True), gemm(1), Load(mem=MemId.INP, push_next=True), Finish()]
    cycles(insns, params=TimingParams(cmd_queue_depth=1))
    with pytest.raises(CycleDeadlockError) as e:
        cycles(insns, params=TimingParams(cmd_queue_depth=0))
    st = e.value.states
    assert st["fetch"]["insn"] == 1
    assert st["fetch"]["waits"] == "compute to be idle (no command queue)"
    assert st["compute"]["insn"] == 0 and st["compute"]["waits"] == "a token in l2c"
    assert st["queues"]["compute commands"] == 1  # the instruction compute holds
    assert st["load"]["insn"] is None


def test_max_cycles_stops_a_long_run():
    with pytest.raises(CycleLimitError, match="the cycle limit max_cycles=1000 was reached "
                                              r"before FINISH retired.*raise the limit") as e:
        cycles([gemm(5000), Finish()], max_cycles=1000)
    assert e.value.cycle == 1000 and e.value.retired["compute"] == 0
    assert not isinstance(e.value, CycleDeadlockError)


def test_bad_program_errors_come_from_the_functional_checks():
    from sim.errors import ProgramStructureError
    with pytest.raises(ProgramStructureError):
        cycle.run(program([gemm(1)]))


def test_timing_params_are_checked():
    with pytest.raises(ValueError, match="TimingParams.cmd_queue_depth must be a positive int"):
        TimingParams(cmd_queue_depth=-1)
    with pytest.raises(ValueError, match="TimingParams.token_queue_depth must be a positive int"):
        TimingParams(token_queue_depth=0)
    with pytest.raises(ValueError, match="arbiter_priority must order"):
        TimingParams(arbiter_priority=("fetch", "load"))


def test_report_and_json():
    r = cycle.run(program([gemm(3), Finish()]))
    d = r.to_dict()
    assert d["cycles"] == r.cycles and set(d["modules"]) == {"fetch", "load", "compute", "store"}
    assert "GEMM utilization" in r.report()
    assert DEFAULT.macs_per_cycle == d["peak_macs_per_cycle"]
