"""``Device.wait``'s timeout on a run that has not started: a run queued behind another is
cancelled without stopping the other, and the rtl backend keeps a cancel that comes
before its run reaches the simulator (sticky), so the run never starts."""
from __future__ import annotations

import threading
import time

import pytest

from driver.backends.rtl import RtlBackend
from driver.device import Device, DeviceTimeout
from driver.rtl.run import RtlError
from vta_hw.config import load_config
from vta_hw.isa import Finish
from vta_hw.program import DramLayout

SMALL = "1x4_i8w8a32_10_10_10_11_bus32"


class Gated:
    """A backend whose runs block until ``go`` is set; counts ``cancel()`` calls."""
    timed = False

    def __init__(self, inner):
        self.inner, self.go, self.cancels = inner, threading.Event(), 0

    def run(self, program, image, max_cycles=None):
        assert self.go.wait(30)
        return self.inner.run(program, image, max_cycles)

    def cancel(self):
        self.cancels += 1


def test_a_queued_run_that_times_out_is_cancelled_and_the_running_one_goes_on():
    p = DramLayout(load_config(SMALL)).finish([Finish()], [])
    with Device("fsim", config=SMALL) as dev:
        gate = dev.backend = Gated(dev.backend)
        first = dev.run(dev.load(p))
        queued = dev.run(dev.load(p))
        with pytest.raises(DeviceTimeout, match="did not start within 0.2 s .* is cancelled"):
            dev.wait(queued, timeout_s=0.2)
        assert queued.future.cancelled() and gate.cancels == 0
        gate.go.set()
        assert dev.wait(first, timeout_s=30).dram is not None


def test_rtl_cancel_before_the_run_starts_is_kept():
    backend = RtlBackend(load_config(SMALL))
    backend.cancel()  # no run in progress yet: the worker thread has not reached run()
    p = DramLayout(load_config(SMALL)).finish([Finish()], [])
    t0 = time.monotonic()
    with pytest.raises(RtlError, match="stopped by the host before it started"):
        backend.run(p, p.dram_image())
    assert time.monotonic() - t0 < 1  # the simulator was never started
