"""cocotb testbench: runs a list of programs on the accelerator, back to back.

Started by ``driver.rtl.run.run_programs`` through cocotb's Python runner;
``$VTA_TB_JOB`` names a pickle with the DRAM timing, the cycle limit and the
programs (insn_base, insn_count, DRAM image), and ``$VTA_TB_RESULTS`` where
the results go. Parts: the memory model (``driver.rtl.memory``), the driver
(register writes, start, wait for ``irq`` with a cycle limit, counter reads)
and the recorder. The accelerator is reset once, before the first program.
"""
from __future__ import annotations

import os
import pickle

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, FallingEdge, First, RisingEdge

from driver.rtl.faults import fault_record
from driver.rtl.memory import MemoryModel
from vta_hw.rtl.control import (ERR_NONE, MODULES, REG_BUSY, REG_CTRL, REG_CYCLES, REG_ERROR,
                                REG_ERROR_INSN, REG_INSN_BASE, REG_INSN_COUNT)

#: Cycles allowed after done for the modules to go idle before the next program.
DRAIN_LIMIT = 100_000
#: While waiting for done, the stop file (``run_programs``'s ``stop_file``) is looked
#: for every this many cycles.
POLL_CYCLES = 10_000


async def csr_write(dut, addr: int, value: int) -> None:
    """Write a register: ``we`` high for one cycle (we are at a falling edge)."""
    dut.csr__addr.value = addr
    dut.csr__wdata.value = value
    dut.csr__we.value = 1
    await FallingEdge(dut.clk)
    dut.csr__we.value = 0


async def csr_read(dut, addr: int) -> int:
    dut.csr__addr.value = addr
    await FallingEdge(dut.clk)
    return int(dut.csr__rdata.value)


async def run_one(dut, mem: MemoryModel, prog: dict, max_cycles: int,
                  stop_file: str | None = None) -> dict:
    mem.dram = prog["dram"].copy()
    mem.errors = []
    await csr_write(dut, REG_INSN_BASE, prog["insn_base"])
    await csr_write(dut, REG_INSN_COUNT, prog["insn_count"])
    await csr_write(dut, REG_CTRL, 1)
    start = mem.cycle()          # we are in cycle 0 of the run (start is high)
    first_burst = len(mem.bursts)
    waited, stopped = 0, False
    while not int(dut.irq.value) and waited < max_cycles and not stopped:
        step = min(POLL_CYCLES, max_cycles - waited)
        await First(RisingEdge(dut.irq), ClockCycles(dut.clk, step))
        waited += step
        stopped = stop_file is not None and os.path.exists(stop_file)
    await FallingEdge(dut.clk)
    error, fault = None, None
    status = await csr_read(dut, REG_ERROR)
    if not int(dut.irq.value) and stopped:
        error = f"stopped by the host after about {waited} cycles"
    elif not int(dut.irq.value):
        error = f"timeout: done not raised within {max_cycles} cycles"
    elif status & 3 != ERR_NONE:  # the run ended on an error status: nothing to drain
        fault = fault_record(status, await csr_read(dut, REG_ERROR_INSN),
                             await csr_read(dut, REG_CTRL))
    else:
        # let late store traffic finish (the cycle counter has already stopped)
        for _ in range(DRAIN_LIMIT):
            if (await csr_read(dut, REG_CTRL)) >> 2 == 0:
                break
        else:
            error = f"modules still busy {DRAIN_LIMIT} cycles after done"
    res = {"cycles": await csr_read(dut, REG_CYCLES),
           "busy": {m: await csr_read(dut, REG_BUSY[m]) for m in MODULES},
           "dram": mem.dram.copy(), "errors": list(mem.errors), "error": error, "fault": fault,
           "bursts": [(c - start, a, n, w) for c, a, n, w in mem.bursts[first_burst:]]}
    return res


@cocotb.test()
async def run_programs(dut):
    """Run every program of the job; record DRAM, cycles and busy counters."""
    with open(os.environ["VTA_TB_JOB"], "rb") as f:
        job = pickle.load(f)
    out_path = os.environ["VTA_TB_RESULTS"]
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start(start_high=True))
    dut.rst.value = 1
    dut.csr__we.value = 0
    dut.csr__addr.value = 0
    dut.csr__wdata.value = 0
    mem = MemoryModel(dut, job["timing"], job["bus_bytes"])
    mem.reset()
    await ClockCycles(dut.clk, 3)
    await FallingEdge(dut.clk)
    dut.rst.value = 0
    cocotb.start_soon(mem.run())
    await FallingEdge(dut.clk)
    results = []
    for prog in job["programs"]:
        res = await run_one(dut, mem, prog, job["max_cycles"], job.get("stop_file"))
        results.append(res)
        with open(out_path + ".tmp", "wb") as f:
            pickle.dump(results, f)
        os.replace(out_path + ".tmp", out_path)
        if res["error"] or res["fault"]:  # the modules keep their state: stop here
            break
