"""The UART protocol's frames (pure Python) and the host driver against a model of the SoC."""
from __future__ import annotations

import struct

import numpy as np
import pytest

from driver.backends.fpga import FpgaDevice, FpgaError
from fpga import protocol as P
from tests.fpga.model_soc import ModelSoC


def test_request_frame_layout_and_checksum():
    f = P.request(P.CMD_WRITE_MEM, 0x1234, 1, b"\x01\x02\x03\x04")
    assert f[0] == P.SYNC_REQUEST
    assert struct.unpack("<BIH", f[1:8]) == (P.CMD_WRITE_MEM, 0x1234, 1)
    assert f[8:12] == b"\x01\x02\x03\x04"
    assert sum(f[1:]) % 256 == 0
    r = P.reply(P.ST_OK, b"\xff\x00\x00\x00")
    assert r[0] == P.SYNC_REPLY and sum(r[1:]) % 256 == 0


@pytest.mark.parametrize("kw, msg", [
    ({"cmd": 99}, "cmd must be one of"),
    ({"cmd": P.CMD_READ_MEM, "addr": -1}, "addr must fit 32 bits"),
    ({"cmd": P.CMD_READ_MEM, "count": 1 << 16}, "count must be in"),
    ({"cmd": P.CMD_WRITE_MEM, "payload": b"abc"}, "whole 32-bit words"),
])
def test_request_rejects_bad_fields(kw, msg):
    with pytest.raises(ValueError, match=msg):
        P.request(**kw)


def test_divisor_for_board_clocks():
    assert P.divisor_for(12e6) == 104
    assert P.divisor_for(50e6) == 434
    with pytest.raises(ValueError, match="too slow"):
        P.divisor_for(300e3)


def test_register_map_matches_the_rtl():
    from vta_hw.rtl import control
    assert (P.REG_CTRL, P.REG_INSN_BASE, P.REG_INSN_COUNT, P.REG_CYCLES) == (
        control.REG_CTRL, control.REG_INSN_BASE, control.REG_INSN_COUNT, control.REG_CYCLES)
    assert P.REG_BUSY == control.REG_BUSY
    assert (P.REG_ERROR, P.REG_ERROR_INSN) == (control.REG_ERROR, control.REG_ERROR_INSN)
    assert P.NUM_REGS == 1 << control.ADDR_BITS


def test_driver_round_trip_and_chunking():
    soc = ModelSoC(mem_bytes=8192)
    dev = FpgaDevice(soc, baud=1_000_000, timeout_s=0.01)
    assert dev.info().mem_bytes == 8192
    data = np.random.default_rng(0).integers(0, 256, 6000, dtype=np.uint8).tobytes()
    dev.write_mem(16, data)  # 6000 B = several CHUNK_WORDS frames
    assert dev.read_mem(16, 6000) == data
    dev.write_reg(P.REG_INSN_BASE, 0xABCD)
    assert dev.read_reg(P.REG_INSN_BASE) == 0xABCD


def test_driver_retries_a_corrupt_reply_then_gives_up():
    soc = ModelSoC()
    dev = FpgaDevice(soc, timeout_s=0.01, retries=2)
    soc.corrupt = 2
    dev.write_reg(1, 5)  # two bad replies, third try succeeds
    soc.corrupt = 3
    with pytest.raises(FpgaError, match="bad checksum"):
        dev.read_reg(1)


def test_driver_errors_name_the_problem():
    soc = ModelSoC()
    dev = FpgaDevice(soc, timeout_s=0.01)
    with pytest.raises(FpgaError, match="bad address"):
        dev.read_mem(1020, 8)
    soc.silent = True
    with pytest.raises(FpgaError, match="no reply to READ_REG"):
        dev.read_reg(0)


def test_serial_transport_names_a_bad_port():
    from driver.backends.fpga import SerialTransport
    with pytest.raises(FpgaError, match="cannot open serial port"):
        SerialTransport("/dev/does-not-exist-vta")


def test_fpga_backend_checks_its_arguments():
    from driver.backends.fpga import FpgaBackend
    from driver.examples.gemm import gemm_program
    from vta_hw.config import load_config
    small, mid = load_config("1x4_i8w8a32_10_10_10_11_bus32"), load_config("1x8_i8w8a32_11_12_13_14")
    with pytest.raises(ValueError, match="needs a serial port"):
        FpgaBackend(small)
    backend = FpgaBackend(small, device=FpgaDevice(ModelSoC(), timeout_s=0.01))
    program, _ = gemm_program(mid, 16, 16, 16)
    with pytest.raises(ValueError, match="for config 1x8_i8w8a32_11_12_13_14"):
        backend.run(program, None)
