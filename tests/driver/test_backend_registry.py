"""The device-backend registry: its contents, a third-party backend, the errors, and the
fpga backend through ``Device`` on a pure-Python model of the board (no serial port)."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from compiler.topi.vta import dense_program
from driver import backends
from driver.backends import registry
from driver.backends.fpga import FpgaDevice
from driver.device import Device, DeviceError
from fpga import protocol as P
from tests.fpga.model_soc import ModelSoC
from vta_hw.config import load_config


@pytest.fixture
def isolated(monkeypatch):
    """Registrations made in the test vanish after it."""
    monkeypatch.setattr(registry, "_BACKENDS", dict(registry._BACKENDS))


@pytest.fixture(scope="module")
def tiny():
    return dense_program(load_config(), (1, 16), (16, 16), shift=4, relu=False)


def _feed(k, seed):
    r = np.random.default_rng(seed)
    args = (r.integers(-128, 128, (1, 16), dtype=np.int8),
            r.integers(-128, 128, (16, 16), dtype=np.int8),
            r.integers(-500, 500, 16).astype(np.int32))
    return k.inputs(*args), k.reference(*args)


class EchoBackend:
    """A third-party backend: leaves DRAM as it is and reports one cycle per instruction."""
    name = "echo"
    timed = True
    description = "test backend: no compute, one cycle per instruction"
    options = {"scale": "cycles per instruction"}

    def __init__(self, cfg, dram_timing=None, *, scale=1):
        self.cfg, self.scale = cfg, scale

    def run(self, program, image, max_cycles=None):
        return backends.BackendResult(image.copy(), self.scale * len(program.insns), 0, 0, 0)


def test_builtin_backends_and_what_they_declare():
    assert backends.names() == ("fsim", "tsim", "rtl", "fpga")
    timed = {n: backends.get(n).timed for n in backends.names()}
    assert timed == {"fsim": False, "tsim": True, "rtl": True, "fpga": True}
    for n in backends.names():
        cls = backends.get(n)
        assert cls.name == n and cls.description and "\n" not in cls.description
    assert set(backends.get("fpga").options) == {"port", "baud", "device"}
    assert backends.get("tsim").options == {}


def test_cli_device_choices_are_the_registry():
    from driver.cli.run import run_cmd
    opt, = [p for p in run_cmd.params if p.name == "device"]
    assert tuple(opt.type.choices) == backends.names()


def test_a_registered_backend_runs_through_device(isolated, tiny):
    assert backends.register(EchoBackend) is EchoBackend
    assert backends.names()[-1] == "echo"
    with Device("echo", scale=3) as dev:
        h = dev.load(tiny.program)
        r = dev.run_sync(h, timeout_s=10)
        assert r.cycles == 3 * len(tiny.program.insns) == dev.counters["cycles"]
        assert dev.backend_name == "echo" and isinstance(dev.backend, EchoBackend)
    backends.register(EchoBackend)  # the same class again: no change
    assert backends.names().count("echo") == 1


def test_registration_errors_name_the_field(isolated):
    def make(**kw):
        attrs = dict(name="x", timed=True, description="one line", options={},
                     run=lambda self, p, i, m=None: None)
        attrs.update(kw)
        return type("Fake", (), attrs)

    with pytest.raises(backends.BackendError, match="backend name must be lowercase .* not 'Bad Name'"):
        backends.register(make(name="Bad Name"))
    with pytest.raises(backends.BackendError, match="timed must be True or False .* not 'yes'"):
        backends.register(make(timed="yes"))
    with pytest.raises(backends.BackendError, match="description must be one line of text"):
        backends.register(make(description="two\nlines"))
    with pytest.raises(backends.BackendError, match="options must be a dict of option name -> help"):
        backends.register(make(options=("port",)))
    with pytest.raises(backends.BackendError, match="has no run"):
        backends.register(make(run=None))
    with pytest.raises(backends.BackendError, match="'tsim' is taken by driver.backends.tsim.TsimBackend"):
        backends.register(make(name="tsim"))
    assert "x" not in backends.names()


def test_unknown_backend_and_option():
    with pytest.raises(DeviceError, match=r"must be one of fsim, tsim, rtl, fpga, not 'gpu'"):
        Device("gpu")
    with pytest.raises(backends.BackendError, match="must be one of .*fpga, not 'gpu'"):
        backends.create("gpu", load_config())
    with pytest.raises(DeviceError, match="the tsim backend has no option 'port'; it takes none"):
        Device("tsim", port="/dev/ttyUSB0")
    with pytest.raises(DeviceError, match="the fpga backend has no option 'prot'; its options "
                                          "are port, baud, device"):
        Device("fpga", prot="/dev/ttyUSB0")


def test_fpga_without_port_names_the_option():
    with pytest.raises(DeviceError, match="fpga backend needs a serial port: give option port"):
        Device("fpga", config=load_config())


def test_fpga_backend_does_not_import_pyserial_until_a_port_opens():
    code = ("import sys; import driver.device, driver.cli.main; "
            "print('serial' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def _board_running(program):
    """A model board that plays the accelerator with ``sim.cycle`` at START, after checking
    that the host wrote the program's instruction base and count."""
    import sim.cycle

    def start(soc):
        assert soc.regs[P.REG_INSN_BASE] == program.insn_base
        assert soc.regs[P.REG_INSN_COUNT] == len(program.insns)
        image = np.frombuffer(bytes(soc.mem[:program.dram_bytes]), np.uint8)
        r = sim.cycle.run(program, image)
        soc.mem[:program.dram_bytes] = r.dram.tobytes()
        soc.regs[P.REG_CYCLES] = r.cycles

    return ModelSoC(mem_bytes=-(-program.dram_bytes // 4) * 4, on_start=start)


def test_fpga_through_device_matches_tsim(tiny):
    """Values, cycles and GEMM MACs of the fpga backend (over an in-memory board) equal tsim's."""
    board = FpgaDevice(_board_running(tiny.program), baud=1_000_000, timeout_s=0.01)
    with Device("fpga", device=board) as fpga, Device("tsim") as ts:
        for seed in range(2):
            feed, want = _feed(tiny, seed)
            got = {}
            for dev in (fpga, ts):
                h = dev.load(tiny.program)
                for name, arr in feed.items():
                    h.copy_in(name, arr)
                r = dev.wait(dev.run(h), timeout_s=60)
                got[dev.backend_name] = (tiny.unpack(h.copy_out("out")), r.cycles, r.gemm_macs)
            np.testing.assert_array_equal(got["fpga"][0], want)
            assert got["fpga"][1:] == got["tsim"][1:] and got["fpga"][1] > 0
        assert fpga.counters["cycles"] == ts.counters["cycles"]
        assert fpga.gemm_utilization() == ts.gemm_utilization() > 0
