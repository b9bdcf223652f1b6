"""The load, compute and store modules on their own, in Amaranth's simulator.

Each test plays the command queue, the token queues and the memory, runs a
short instruction sequence and checks the SRAM writes / OUT contents /
memory against ``sim.machine``, and the instruction flow of the contract
(dequeue, TOKENS waits for its token, work, RETIRE pushes after the work).
"""
import numpy as np
import pytest
from amaranth.sim import Simulator
from rtl_memsim import MemSim

from sim.machine import Machine
from vta_hw import isa
from vta_hw.config import load_config
from vta_hw.isa import Alu, AluOp, Finish, Gemm, Load, MemId, Store, Uop
from vta_hw.rtl.compute import Compute
from vta_hw.rtl.load import Load as LoadModule
from vta_hw.rtl.store import Store as StoreModule
from vta_hw.timing import DramTiming

CFG = load_config("1x8_i8w8a32_11_12_13_14")   # 64-bit bus: two uops per beat
T = DramTiming(latency=4, bytes_per_cycle=8, max_burst_beats=4, page_bytes=256)


def _image(seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, 8192, dtype=np.uint8)


def _run(dut, insns, mem, token_at, extra=None, limit=4000, post=None, pre=None):
    """Feed ``insns`` through ``dut.cmd``; tokens of the popped queue appear at ``token_at``.

    Returns per-cycle logs: dequeues, pops, pushes, finish.
    """
    log = {"deq": [], "pop": [], "push": [], "finish": []}
    words = [isa.encode(i, CFG) for i in insns]
    pops = [name for name in ("c2l", "l2c", "s2c", "c2s") if hasattr(dut, name)
            and "pop_valid" in dict(getattr(dut, name).signature.members)]
    pushes = [name for name in ("c2l", "l2c", "s2c", "c2s") if hasattr(dut, name)
              and "push_valid" in dict(getattr(dut, name).signature.members)]

    async def testbench(ctx):
        tokens = {p: 0 for p in pops}
        for cycle in range(limit):
            if pre:
                pre(ctx, cycle)
            mem.step(ctx, cycle)
            for p in pops:
                tokens[p] += token_at.get(p, {}).get(cycle, 0)
                ctx.set(getattr(dut, p).pop_valid, tokens[p] > 0)
            for p in pushes:
                ctx.set(getattr(dut, p).push_ready, 1)
            ctx.set(dut.cmd.r_valid, bool(words))
            if words:
                ctx.set(dut.cmd.r_data, words[0])
            if words and ctx.get(dut.cmd.r_ready):
                words.pop(0)
                log["deq"].append(cycle)
            for p in pops:
                if ctx.get(getattr(dut, p).pop_ready):
                    tokens[p] -= 1
                    log["pop"].append((p, cycle))
            for p in pushes:
                if ctx.get(getattr(dut, p).push_valid):
                    log["push"].append((p, cycle))
            if hasattr(dut, "finish") and ctx.get(dut.finish):
                log["finish"].append(cycle)
            if extra:
                extra(ctx, cycle)
            if not words and not ctx.get(dut.busy) and log["deq"] and log["deq"][-1] < cycle:
                break
            await ctx.tick()
        if post:
            await post(ctx)

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()
    return log


@pytest.mark.parametrize("token_cycle", [0, 25])
def test_load_module(token_cycle):
    dut = LoadModule(CFG, T.max_burst_beats, T.page_bytes)
    dram = _image(1)
    mem = MemSim(dut.mem, dram, T, CFG.bus_bytes)
    insns = [Load(mem=MemId.INP, sram_base=2, dram_base=5, y_size=2, x_size=3, x_stride=4,
                  y_pad_0=1, x_pad_1=1, pop_next=True, push_next=True),
             Load(mem=MemId.WGT, sram_base=1, dram_base=3, y_size=2, x_size=2, x_stride=2)]
    writes = {"inp": {}, "wgt": {}}

    def watch(ctx, cycle):
        for name in writes:
            p = getattr(dut, f"w_{name}")
            if ctx.get(p.en):
                writes[name][ctx.get(p.addr)] = (ctx.get(p.data), cycle)

    log = _run(dut, insns, mem, {"c2l": {token_cycle: 1}}, watch)
    ref = Machine(CFG)
    for k, insn in enumerate(insns):
        ref.execute(insn, k, dram)
    for name, arr in (("inp", ref.inp), ("wgt", ref.wgt)):
        for idx, (data, _) in writes[name].items():
            want = int.from_bytes(arr[idx].astype(np.int8).tobytes(), "little")
            assert data == want, f"{name}[{idx}]"
    assert len(writes["inp"]) == 3 * 4 and len(writes["wgt"]) == 4
    (q, pop_cycle), = log["pop"]
    assert q == "c2l" and pop_cycle == max(log["deq"][0] + 1, token_cycle)
    first_write = min(c for _, c in writes["inp"].values())
    assert first_write > pop_cycle                       # work starts after the pop
    (q, push_cycle), = log["push"]
    assert q == "l2c" and push_cycle > max(c for _, c in writes["inp"].values())
    assert log["deq"][1] == push_cycle + 1               # next dequeue right after RETIRE


def test_store_module():
    dut = StoreModule(CFG, T.max_burst_beats, T.page_bytes)
    dram = np.zeros(4096, np.uint8)
    mem = MemSim(dut.mem, dram, T, CFG.bus_bytes)
    rng = np.random.default_rng(4)
    out = rng.integers(-128, 128, (64, CFG.BATCH, CFG.BLOCK_OUT)).astype(np.int8)
    insns = [Store(sram_base=3, dram_base=7, y_size=3, x_size=5, x_stride=9, pop_prev=True,
                   push_prev=True)]
    state = {"addr": 0}

    def sram_data(ctx, cycle):          # registered read: the address of the last cycle
        ctx.set(dut.out_data, int.from_bytes(out[state["addr"]].tobytes(), "little"))

    def sram_addr(ctx, cycle):
        state["addr"] = ctx.get(dut.out_addr)

    log = _run(dut, insns, mem, {"c2s": {10: 1}}, sram_addr, pre=sram_data)
    ref = Machine(CFG)
    ref.out[:len(out)] = out
    want = np.zeros_like(dram)
    ref.execute(insns[0], 0, want)
    assert np.array_equal(dram, want)
    assert log["pop"] == [("c2s", 10)] and log["push"][0][0] == "s2c"
    assert all(w for _, _, _, w in mem.bursts)


def test_compute_module():
    """UOP (mid-beat rows) and ACC loads, GEMM with loops, every ALU op, FINISH."""
    dut = Compute(CFG, T.max_burst_beats, T.page_bytes)
    rng = np.random.default_rng(5)
    dram = _image(5)
    uops = [Uop(dst=j % 5, src=j, wgt=(3 * j) % 7) for j in range(12)]
    uop_addr = 4096
    for k, u in enumerate(uops):
        dram[uop_addr + 4 * k:uop_addr + 4 * k + 4] = np.frombuffer(
            isa.encode_uop(u, CFG).to_bytes(4, "little"), np.uint8)
    acc_dram = rng.integers(-2**31, 2**31, (16, CFG.BATCH, CFG.BLOCK_OUT)).astype(np.int32)
    dram[2048:2048 + acc_dram.nbytes] = acc_dram.view(np.uint8).ravel()
    mem = MemSim(dut.mem, dram, T, CFG.bus_bytes)
    inp = rng.integers(-128, 128, (32, CFG.BATCH, CFG.BLOCK_IN)).astype(np.int8)
    wgt = rng.integers(-128, 128, (16, CFG.BLOCK_OUT, CFG.BLOCK_IN)).astype(np.int8)
    ub = uop_addr // 4
    insns = [Load(mem=MemId.UOP, sram_base=1, dram_base=ub + 1, y_size=2, x_size=5, x_stride=6),
             Load(mem=MemId.ACC, sram_base=0, dram_base=2048 // CFG.acc_elem_bytes, y_size=2,
                  x_size=4, x_stride=5, x_pad_0=1),
             Gemm(uop_bgn=1, uop_end=6, iter_out=2, iter_in=2, dst_factor_out=5,
                  dst_factor_in=1, src_factor_out=8, src_factor_in=3, wgt_factor_out=1,
                  wgt_factor_in=2)]
    insns += [Alu(uop_bgn=1, uop_end=4, iter_out=2, iter_in=1, dst_factor_out=1,
                  src_factor_out=2, alu_op=op, use_imm=imm is not None, imm=imm or 0)
              for op in AluOp for imm in (None, -3, 5)]
    insns += [Finish(push_next=True)]
    state = {"inp": 0, "wgt": 0}
    n_inp, n_wgt = len(inp), len(wgt)

    def preload(ctx, cycle):            # INP/WGT arrive through the load module's ports
        for name, arr, n in (("inp", inp, n_inp), ("wgt", wgt, n_wgt)):
            k = state[name]
            p = getattr(dut, f"w_{name}")
            ctx.set(p.en, k < n)
            if k < n:
                ctx.set(p.addr, k)
                ctx.set(p.data, int.from_bytes(arr[k].tobytes(), "little"))
                state[name] += 1

    got = {}

    async def read_out(ctx):
        for idx in range(16):
            ctx.set(dut.out_addr, idx)
            await ctx.tick()
            got[idx] = ctx.get(dut.out_data)

    log = _run(dut, insns, mem, {}, preload, limit=20000, post=read_out)
    assert log["finish"] and log["push"] == [("c2s", log["finish"][0])]
    ref = Machine(CFG)
    ref.inp[:n_inp] = inp
    ref.wgt[:n_wgt] = wgt
    for k, insn in enumerate(insns):
        ref.execute(insn, k, dram.copy())
    for idx in range(16):
        assert got[idx] == int.from_bytes(ref.out[idx].tobytes(), "little"), f"out[{idx}]"
    assert ref.out[:16].any()
