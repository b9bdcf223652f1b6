"""The three executions agree on bad programs: an undefined memory id and a deadlock
end an RTL run with an error status, reported as the simulators report them (the same
error class and instruction index), and a deadlock is found within a few thousand
cycles instead of running to the cycle limit."""
from __future__ import annotations

import time

import pytest

from driver.device import Device
from driver.rtl import run_programs
from sim import cycle, functional
from sim.errors import DeadlockError, UnknownOpcodeError
from vta_hw.config import load_config
from vta_hw import isa
from vta_hw.isa import Alu, Finish, Gemm, Load, MemId, Store
from vta_hw.program import DramLayout
from vta_hw.rtl.control import NO_PROGRESS_CYCLES

SMALL = "1x4_i8w8a32_10_10_10_11_bus32"


def with_undefined(field: str, value: int):
    """A sync LOAD, then instruction 1 (a STORE, or an ALU) whose ``field`` holds
    ``value``, which its enum does not define; set at the config's bits (``isa.layout``)."""
    cfg = load_config(SMALL)
    second = Store() if field == "mem" else Alu()
    p = DramLayout(cfg).finish([Load(mem=MemId.UOP), second, Finish()], [])
    f, = (f for f in isa.layout(second.opcode, cfg) if f.name == field)
    img = p.dram_image()
    at = p.insn_base + 16  # instruction 1
    word = int.from_bytes(img[at:at + 16].tobytes(), "little")
    word = word & ~(((1 << f.width) - 1) << f.lsb) | value << f.lsb
    img[at:at + 16] = list(word.to_bytes(16, "little"))
    return p, img


def stores_before_gemm(extra: int):
    insns = ([Store(pop_prev=True)] + [Store() for _ in range(extra)]
             + [Gemm(push_next=True), Finish()])
    return DramLayout(load_config(SMALL)).finish(insns, [])


@pytest.mark.parametrize("field, value, what", [("mem", 5, "STORE mem 5"),
                                               ("alu_op", 6, "ALU alu_op 6"),
                                               ("alu_op", 7, "ALU alu_op 7")])
def test_undefined_field_is_an_error_on_every_execution(rtl_config, field, value, what):
    cfg = rtl_config(SMALL)
    p, img = with_undefined(field, value)
    for run in (functional.run, cycle.run):
        with pytest.raises(UnknownOpcodeError, match=f"{what} is unknown") as e:
            run(p, img)
        assert e.value.insn_index == 1
    with pytest.raises(UnknownOpcodeError, match="the RTL stopped at an undefined instruction: "
                                                 f"instruction 1: {what} is unknown") as e:
        run_programs(cfg, [(p, img)])
    assert e.value.insn_index == 1 and e.value.field == field


def test_rtl_deadlock_is_found_at_once_and_located(rtl_config):
    cfg = rtl_config(SMALL)
    depth = cfg.CMD_QUEUE_DEPTH
    fits = stores_before_gemm(depth)
    r, = run_programs(cfg, [(fits, None)])
    assert r.cycles == cycle.run(fits).cycles
    t0 = time.monotonic()
    with pytest.raises(DeadlockError) as e:
        run_programs(cfg, [(stores_before_gemm(depth + 1), None)], max_cycles=2_000_000)
    msg = str(e.value)
    assert f"no progress for {NO_PROGRESS_CYCLES} cycles after dispatching {depth + 1}" in msg
    assert f"fetch at instruction {depth + 1} waits on room in the store commands queue" in msg
    assert "store at instruction 0 waits on a token in c2s" in msg
    assert e.value.insn_index == 0
    assert time.monotonic() - t0 < 30


def test_rtl_device_reports_the_deadlock(rtl_config):
    rtl_config(SMALL)
    with Device("rtl", config=SMALL) as dev:
        with pytest.raises(DeadlockError, match="fetch at instruction 17 waits on"):
            dev.run_sync(dev.load(stores_before_gemm(load_config(SMALL).CMD_QUEUE_DEPTH + 1)),
                         timeout_s=300)


def test_device_wait_timeout_stops_the_rtl_run(rtl_config):
    """A GEMM of 4 M uop iterations runs for minutes on Verilator; a 1 s wait stops it, and
    the device takes the next program at once."""
    rtl_config(SMALL)
    cfg = load_config(SMALL)
    lay = DramLayout(cfg)
    ub = lay.alloc_uops(1)
    from vta_hw.isa import Uop
    long_run = lay.finish([Load(mem=MemId.UOP, dram_base=ub, y_size=1, x_size=1, x_stride=1),
                           Gemm(reset=True, uop_bgn=0, uop_end=1, iter_out=2048, iter_in=2048),
                           Finish()], [Uop(0, 0, 0)])
    from driver.device import DeviceTimeout
    with Device("rtl", config=SMALL, max_cycles=100_000_000) as dev:
        run = dev.run(dev.load(long_run))
        with pytest.raises(DeviceTimeout, match="was stopped"):
            dev.wait(run, timeout_s=1)
        t0 = time.monotonic()
        with pytest.raises(Exception, match="stopped by the host"):
            run.future.result(timeout=60)
        assert time.monotonic() - t0 < 30
        fits = stores_before_gemm(cfg.CMD_QUEUE_DEPTH)
        assert dev.run_sync(dev.load(fits), timeout_s=120).cycles == cycle.run(fits).cycles


def test_unwritten_sram_reads_zeros_on_every_execution(rtl_config):
    """SRAM contract: program 2 stores OUT entries it never wrote, after program 1 left
    values there. Every execution starts a program from zeroed SRAMs (the RTL through the
    driver's clear, ``driver.rtl.clear``): fsim, tsim and the RTL store zeros, and the
    simulators report the read with its instruction index."""
    import numpy as np

    from sim.errors import UnwrittenReadWarning
    from vta_hw.isa import AluOp, Uop
    cfg = rtl_config(SMALL)
    lay = DramLayout(cfg)
    acc = np.arange(2 * cfg.BATCH * cfg.BLOCK_OUT, dtype=np.int32).reshape(
        2, cfg.BATCH, cfg.BLOCK_OUT) - 5
    a = lay.alloc("acc", acc.shape, "int32", "input", acc)
    o = lay.alloc("out", acc.shape, "int8", "output")
    ub = lay.alloc_uops(2)
    writes = lay.finish([
        Load(mem=MemId.ACC, dram_base=lay.elem(a, "acc"), y_size=1, x_size=2, x_stride=2),
        Load(mem=MemId.UOP, dram_base=ub, y_size=1, x_size=2, x_stride=2),
        Alu(alu_op=AluOp.ADD, use_imm=True, uop_bgn=0, uop_end=2, iter_out=1, iter_in=1),
        Finish()], [Uop(0, 0, 0), Uop(1, 0, 0)])
    reads = lay.finish([
        Load(mem=MemId.UOP, push_next=True),
        Store(pop_prev=True, dram_base=lay.elem(o, "out"), y_size=1, x_size=2, x_stride=2),
        Finish()], [Uop(0, 0, 0), Uop(1, 0, 0)])
    sims = []
    for run in (functional.run, cycle.run):
        with pytest.warns(UnwrittenReadWarning, match="instruction 1: STORE reads 2 OUT entries"):
            sims.append(run(reads).dram)
    first, got = run_programs(cfg, [(writes, None), (reads, None)])
    assert np.array_equal(first.dram, functional.run(writes).dram)
    assert not reads.read(got.dram, "out").any()
    assert np.array_equal(got.dram, sims[0]) and np.array_equal(got.dram, sims[1])
