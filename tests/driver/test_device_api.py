"""The device API: buffers, copies, runs, waits, counters; repeated runs stay identical."""
import numpy as np
import pytest

from compiler.topi.vta import conv2d_program, dense_program
from driver.device import Device, DeviceError, DeviceTimeout
from vta_hw.config import load_config


@pytest.fixture
def rng():
    return np.random.default_rng(11)


@pytest.fixture(scope="module")
def tiny():
    """A 1x16 x 16x16 dense layer: the smallest program (a few instructions)."""
    return dense_program(load_config(), (1, 16), (16, 16), shift=4, relu=False)


def _io(k, seed):
    r = np.random.default_rng(seed)
    x = r.integers(-128, 128, (1, 16), dtype=np.int8)
    w = r.integers(-128, 128, (16, 16), dtype=np.int8)
    b = r.integers(-500, 500, 16).astype(np.int32)
    return (x, w, b), k.reference(x, w, b)


def _run(dev, h, k, args):
    for name, arr in k.inputs(*args).items():
        h.copy_in(name, arr)
    r = dev.run_sync(h, timeout_s=60)
    return k.unpack(h.copy_out("out")), r


def test_thousand_fsim_runs_are_identical(tiny):
    cases = [_io(tiny, s) for s in range(2)]
    with Device("fsim") as dev:
        h = dev.load(tiny.program)
        for i in range(1000):
            args, want = cases[i % 2]
            got, _ = _run(dev, h, tiny, args)
            np.testing.assert_array_equal(got, want)
        assert dev.counters["runs"] == 1000


def test_twenty_tsim_runs_same_results_and_cycles(tiny):
    cases = [_io(tiny, s) for s in range(2)]
    with Device("tsim") as dev:
        h = dev.load(tiny.program)
        cycles = set()
        for i in range(20):
            args, want = cases[i % 2]
            got, r = _run(dev, h, tiny, args)
            np.testing.assert_array_equal(got, want)
            cycles.add(r.cycles)
        assert len(cycles) == 1 and cycles.pop() > 0
        assert dev.counters["cycles"] > 0 and 0 < dev.gemm_utilization() <= 1


def test_outputs_are_reset_between_runs(tiny):
    """Garbage written into "out" before a run does not survive it."""
    (args, want) = _io(tiny, 3)
    with Device("fsim") as dev:
        h = dev.load(tiny.program)
        h.image.data[:] = h.image.data  # same image
        h.copy_in("out", np.full(tiny.program.buffer("out").shape, 99, np.int8))
        got, _ = _run(dev, h, tiny, args)
        np.testing.assert_array_equal(got, want)


def test_conv_on_tsim_reports_counters(rng):
    k = conv2d_program(load_config(), (1, 16, 6, 6), (16, 16, 3, 3), 1, 1, shift=8, relu=True)
    x = rng.integers(-128, 128, (1, 16, 6, 6), dtype=np.int8)
    w = rng.integers(-128, 128, (16, 16, 3, 3), dtype=np.int8)
    b = rng.integers(-500, 500, 16).astype(np.int32)
    with Device("tsim") as dev:
        h = dev.load(k.program)
        for name, arr in k.inputs(x, w, b).items():
            h.copy_in(name, arr)
        run = dev.run(h)
        r = dev.wait(run, timeout_s=60)
        np.testing.assert_array_equal(k.unpack(h.copy_out("out")), k.reference(x, w, b))
        assert r.gemm_macs == 6 * 6 * 16 * 16 * 9 and r.cycles > 0
        assert r.dram_read_bytes > 0 and r.dram_write_bytes > 0


def test_wait_times_out(tiny):
    import threading
    gate = threading.Event()
    with Device("fsim") as dev:
        h = dev.load(tiny.program)
        real = dev.backend.run
        dev.backend.run = lambda *a: (gate.wait(), real(*a))[1]
        run = dev.run(h)
        with pytest.raises(DeviceTimeout, match="did not finish within 0.05 s"):
            dev.wait(run, timeout_s=0.05)
        gate.set()
        assert dev.wait(run, timeout_s=30).dram is not None


def test_errors_name_the_problem(tiny):
    with pytest.raises(DeviceError, match="must be one of fsim, tsim, rtl, fpga, not 'gpu'"):
        Device("gpu")
    with pytest.raises(DeviceError, match="needs a serial port: give option port"):
        Device("fpga")
    with Device("fsim") as dev:
        h = dev.load(tiny.program)
        with pytest.raises(DeviceError, match="no buffer 'nope'"):
            h.copy_in("nope", np.zeros(1))
        with pytest.raises(DeviceError, match="shape"):
            h.copy_in("data", np.zeros((3, 3)))
        with pytest.raises(DeviceError, match="config"):
            Device("fsim", config="1x8_i8w8a32_11_12_13_14").load(tiny.program)
        buf = dev.alloc(64)
        buf.copy_in(np.arange(8, dtype=np.int32), offset=16)
        assert buf.copy_out(32, 16).view(np.int32).tolist() == list(range(8))
        with pytest.raises(DeviceError, match="does not fit"):
            buf.copy_in(np.zeros(64, np.uint8), offset=8)


def test_rtl_backend_matches_tsim():
    """On the small 1x4 preset (its Verilator model builds in seconds): same values, same cycles."""
    cfg = load_config("1x4_i8w8a32_10_10_10_11_bus32")
    tiny = dense_program(cfg, (1, 16), (16, 16), shift=4, relu=False)
    args, want = _io(tiny, 5)
    with Device("rtl", config=cfg) as rtl, Device("tsim", config=cfg) as ts:
        got, r = _run(rtl, rtl.load(tiny.program), tiny, args)
        np.testing.assert_array_equal(got, want)
        _, r2 = _run(ts, ts.load(tiny.program), tiny, args)
        assert r.cycles == r2.cycles
        assert r.gemm_macs == r2.gemm_macs > 0
        assert rtl.gemm_utilization() == ts.gemm_utilization() > 0


@pytest.mark.parametrize("preset", ["1x4_i8w8a32_10_10_10_11_bus32", "1x16_i8w8a32_15_15_18_17",
                                    "2x16_i8w8a32_15_15_18_18"])
def test_fsim_counts_the_dram_bytes_of_tsim(preset):
    """fsim reports bus bytes (whole beats, instruction fetch included) as tsim and the RTL do,
    so `vta run --device fsim` and `--device tsim` print the same DRAM bytes."""
    from sim.random_program import random_program
    from vta_hw.config import load_config
    cfg = load_config(preset)
    for seed in range(6):
        prog, _ = random_program(cfg, seed)
        got = {}
        for name in ("fsim", "tsim"):
            with Device(name, config=cfg) as dev:
                r = dev.run_sync(dev.load(prog))
                got[name] = (r.dram_read_bytes, r.dram_write_bytes, r.gemm_macs)
        assert got["fsim"] == got["tsim"], (seed, got)
