"""cocotb testbench of the SoC (``fpga.soc``): the host driver over a UART model on its pins.

Started by ``tests/fpga/test_soc_sim.py`` through cocotb's Python runner;
``$SOC_TB_JOB`` names a JSON file with the config (``VTAConfig.to_dict``),
memory size, clock and divisor the Verilog was built with. Each test resets
the SoC and drives it with ``driver.backends.fpga.FpgaDevice`` (blocking
code in a bridge thread).
"""
from __future__ import annotations

import json
import os

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.task import bridge
from cocotb.triggers import ClockCycles

from driver.backends.fpga import FpgaBackend, FpgaDevice, FpgaError
from fpga import protocol as P
from uart_model import CocotbTransport, UartModel

JOB = json.loads(open(os.environ["SOC_TB_JOB"]).read()) if "SOC_TB_JOB" in os.environ else {}
#: Host timeouts, simulated seconds (a reply normally starts within a few byte times).
TIMEOUT_S = 2e-4


async def setup(dut):
    period_ns = round(1e9 / JOB["clk_hz"])
    cocotb.start_soon(Clock(dut.clk, period_ns, unit="ns").start())
    uart = UartModel(dut, period_ns * JOB["divisor"])
    dut.rst.value = 1
    await ClockCycles(dut.clk, 4)
    dut.rst.value = 0
    await ClockCycles(dut.clk, 4)
    cocotb.start_soon(uart.monitor())
    dev = FpgaDevice(CocotbTransport(uart), baud=JOB["clk_hz"] // JOB["divisor"],
                     timeout_s=TIMEOUT_S, retries=0)
    return uart, dev


@cocotb.test()
async def info(dut):
    _, dev = await setup(dut)
    got = await bridge(dev.info)()
    assert (got.version, got.mem_bytes, got.clk_hz) == (P.PROTOCOL_VERSION, JOB["mem_bytes"],
                                                        JOB["clk_hz"]), got


@cocotb.test()
async def memory_and_registers(dut):
    _, dev = await setup(dut)
    rng = np.random.default_rng(1)
    data = rng.integers(0, 256, 200, dtype=np.uint8).tobytes()
    end = JOB["mem_bytes"] - 200

    def body():
        dev.write_mem(12, data)
        dev.write_mem(end, data)
        assert dev.read_mem(12, 200) == data
        assert dev.read_mem(end, 200) == data
        assert dev.read_mem(8, 4) == b"\0\0\0\0"
        dev.write_reg(P.REG_INSN_COUNT, 0x1234)
        assert dev.read_reg(P.REG_INSN_COUNT) == 0x1234
    await bridge(body)()


@cocotb.test()
async def errors_get_status_replies(dut):
    uart, dev = await setup(dut)

    def raw(frame: bytes, n: int) -> bytes:
        dev.t.write(frame)
        return dev.t.read(n, TIMEOUT_S)

    def body():
        bad = bytearray(P.request(P.CMD_READ_REG, 1))
        bad[-1] ^= 1
        assert raw(bytes(bad), 3) == P.reply(P.ST_BAD_CHECKSUM)
        assert raw(P.request(P.CMD_READ_MEM, 2, 1), 3) == P.reply(P.ST_BAD_ADDRESS)
        assert raw(P.request(P.CMD_READ_MEM, JOB["mem_bytes"] - 4, 2), 3) == \
            P.reply(P.ST_BAD_ADDRESS)
        assert raw(P.request(P.CMD_READ_REG, P.NUM_REGS), 3) == P.reply(P.ST_BAD_ADDRESS)
        body = bytes([0x7F, 0, 0, 0, 0, 0, 0])
        assert raw(bytes([P.SYNC_REQUEST]) + body + bytes([P.checksum(body)]), 3) == \
            P.reply(P.ST_BAD_COMMAND)
        # noise before a frame is skipped
        assert raw(b"\x00\x13" + P.request(P.CMD_READ_REG, 2), 7) == \
            P.reply(P.ST_OK, b"\0\0\0\0")
        # a frame cut short is dropped after IDLE_BYTES byte times; the next one works
        assert raw(P.request(P.CMD_READ_REG, 2)[:4], 3) == b""
        dev.t.read(1, 12 * P.IDLE_BYTES * 10 * JOB["divisor"] / JOB["clk_hz"])
        assert raw(P.request(P.CMD_READ_REG, 2), 7) == P.reply(P.ST_OK, b"\0\0\0\0")
        # WAIT with nothing running times out
        assert raw(P.request(P.CMD_WAIT, 50), 3) == P.reply(P.ST_TIMEOUT)
        try:
            dev.wait(1e-6)
        except FpgaError as e:
            assert "timeout" in str(e), e
        else:
            raise AssertionError("wait() did not raise")
    await bridge(body)()
    assert uart.framing_errors == 0


@cocotb.test()
async def gemm_matches_functional_sim(dut):
    """A real program end to end: its DRAM image equals sim.functional's, and its
    cycle count sim.cycle's with the block RAM's timing."""
    import sim.functional as F
    from driver.examples.gemm import gemm_program, unpack
    from vta_hw.config import VTAConfig
    _, dev = await setup(dut)
    cfg = VTAConfig.from_dict(JOB["config"])
    program, expected = gemm_program(cfg, 16, 16, 16, shift=4, seed=3)
    img = program.dram_image()
    want = F.run(program, img.copy()).dram
    backend = FpgaBackend(cfg, device=dev)
    res = await bridge(lambda: backend.run(program, img, max_cycles=500_000))()
    assert np.array_equal(res.dram, want), "SoC DRAM image differs from sim.functional"
    c = unpack(program.read(res.dram, "C"))
    assert np.array_equal(c, expected)
    import sim.cycle as C
    from fpga.soc import soc_dram_timing
    predicted = C.run(program, img.copy(), dram_timing=soc_dram_timing(cfg), values=False).cycles
    assert res.cycles == predicted, f"SoC took {res.cycles} cycles, sim.cycle says {predicted}"
    assert res.extra["busy"]["compute"] > 0
    dut._log.info("gemm 16x16x16: %d cycles, busy %s", res.cycles, res.extra["busy"])
