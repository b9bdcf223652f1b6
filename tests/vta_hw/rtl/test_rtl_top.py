"""The whole accelerator: every preset elaborates; a generator program in Amaranth's simulator.

The simulation checks the final DRAM image against ``sim.functional`` and the
CYCLES register against the cycle-exact contract (``sim.cycle``).
"""
import dataclasses
import warnings

import numpy as np
import pytest
from amaranth.back import rtlil
from amaranth.sim import Simulator
from rtl_memsim import MemSim
from rtl_quiet import assert_raises

from sim import cycle, functional
from sim.random_program import random_program
from vta_hw.config import VTAConfig, load_config, preset_names
from vta_hw.rtl import VTA, RtlParams
from vta_hw.rtl.control import REG_CTRL, REG_CYCLES, REG_INSN_BASE, REG_INSN_COUNT
from vta_hw.timing import DramTiming

SMALL = ["1x4_i8w8a32_10_10_10_11_bus32", "1x8_i8w8a32_11_12_13_14"]
#: BLOCK=1 on an 8-bit bus: an instruction is 16 beats, a uop or ACC element 4, INP/WGT/OUT 1.
NARROW = "1x1_i8w8a32_10_9_9_11_bus8_cq0"
#: The presets elaborated in every run (the others under the slow marker).
CI_PRESETS = SMALL + [NARROW]


@pytest.mark.parametrize("preset", [
    pytest.param(p, marks=[] if p in CI_PRESETS else pytest.mark.slow) for p in preset_names()])
def test_preset_elaborates(preset):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        text = rtlil.convert(VTA(load_config(preset)), name="vta")
    assert "module \\vta" in text


def test_rendezvous_elaborates_without_queues():
    """CMD_QUEUE_DEPTH = 0 wires fetch's valid to each module's IDLE and the module's ready
    back to fetch's staging queue: no command queue, and no combinational loop (Amaranth's
    conversion raises ``CombinationalCycle`` on one)."""
    cfg = dataclasses.replace(load_config(SMALL[0]), CMD_QUEUE_DEPTH=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        text = rtlil.convert(VTA(cfg), name="vta")
        queued = rtlil.convert(VTA(load_config(SMALL[0])), name="vta")
    assert "module \\vta" in text and "cmdq" not in text and "cmdq" in queued


@pytest.mark.parametrize("kwargs,msg", [
    ({"BUS_WIDTH": 256}, "the fetch unit needs BUS_WIDTH <= 128 bits, not 256"),
    ({"LOG_BLOCK": 2, "BUS_WIDTH": 64},
     r"a INP element \(4 bytes\) must be at least one bus beat \(8 bytes\)"),
])
def test_unsupported_configs_are_named(kwargs, msg):
    base = dict(LOG_UOP_BUFF_SIZE=10, LOG_INP_BUFF_SIZE=10, LOG_WGT_BUFF_SIZE=10,
                LOG_ACC_BUFF_SIZE=11)
    assert_raises(ValueError, msg, VTA, VTAConfig(**(base | kwargs)))


def test_rtl_params_checked():
    assert_raises(ValueError, "page_bytes must be a power of two, not 100", RtlParams, 16, 100)
    assert_raises(ValueError, "max_burst_beats must be a positive int, not 0", RtlParams, 0)
    # pages must divide the memory: 4096-byte pages need at least 12 address bits
    assert_raises(ValueError, r"addr_bits must be an int from log2\(page_bytes\) = 12 to 32 "
                  r"\(pages must divide the 2\*\*addr_bits-byte memory\), not 11",
                  RtlParams, 16, 4096, 11)
    assert_raises(ValueError, "addr_bits must be an int from log2", RtlParams, 16, 256, 33)
    assert RtlParams(16, 256, 8).addr_bits == 8


def test_memory_port_has_addr_bits():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        text = rtlil.convert(VTA(load_config(SMALL[0]), RtlParams(16, 4096, 16)), name="vta")
    widths = {line.split()[2] for line in text.splitlines()
              if line.lstrip().startswith("wire") and "\\mem__cmd_addr" in line}
    assert widths == {"16"}



@pytest.mark.parametrize("preset,depth,seed", [
    (SMALL[0], 16, 3), (SMALL[0], 0, 3), (NARROW, 0, 3)],
    ids=["queues", "rendezvous", "narrow"])  # depth: CMD_QUEUE_DEPTH
def test_program_in_amaranth_sim(preset, depth, seed):
    cfg = dataclasses.replace(load_config(preset), CMD_QUEUE_DEPTH=depth)
    t = DramTiming(latency=5, bytes_per_cycle=2, max_burst_beats=4, page_bytes=256)
    program, _ = random_program(cfg, seed, size="tiny")
    image = program.dram_image()
    want = functional.run(program, image).dram
    want_cycles = cycle.run(program, image, dram_timing=t, values=False).cycles
    dut = VTA(cfg, RtlParams.from_timing(t))
    dram = image.copy()
    mem = MemSim(dut.mem, dram, t, cfg.bus_bytes)
    got = {}

    async def testbench(ctx):
        regs = [(REG_INSN_BASE, program.insn_base), (REG_INSN_COUNT, len(program.insns)),
                (REG_CTRL, 1)]
        for c in range(200_000):
            mem.step(ctx, c)
            if regs:
                addr, v = regs.pop(0)
                ctx.set(dut.csr.addr, addr)
                ctx.set(dut.csr.wdata, v)
                ctx.set(dut.csr.we, 1)
            else:
                ctx.set(dut.csr.we, 0)
                if ctx.get(dut.irq):
                    break
            await ctx.tick()
        ctx.set(dut.csr.addr, REG_CYCLES)
        got["cycles"] = ctx.get(dut.csr.rdata)
        got["irq"] = ctx.get(dut.irq)

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()
    assert got["irq"], "done never raised"
    diff = np.nonzero(dram != want)[0]
    assert diff.size == 0, f"first differing DRAM byte {diff[0]}"
    assert got["cycles"] == want_cycles
