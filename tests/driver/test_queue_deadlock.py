"""Every execution applies the config's queue depths: a program whose STOREs fill the
store command queue while waiting on a later GEMM deadlocks on fsim, tsim and the RTL
(before, fsim ran it with unbounded queues and reported success)."""
from __future__ import annotations

import pytest

from driver.device import Device
from sim.errors import DeadlockError
from tests.cli_util import run_cli
from vta_hw.config import load_config
from vta_hw.isa import Finish, Gemm, Store
from vta_hw.program import DramLayout

SMALL = "1x4_i8w8a32_10_10_10_11_bus32"


def stores_before_gemm(extra: int):
    """A STORE waiting on the GEMM's token, ``extra`` no-op STOREs, then the GEMM.
    The store module holds the first STORE and its queue ``CMD_QUEUE_DEPTH`` more, so
    ``extra = CMD_QUEUE_DEPTH + 1`` blocks fetch before it reaches the GEMM."""
    cfg = load_config(SMALL)
    insns = ([Store(pop_prev=True)] + [Store() for _ in range(extra)]
             + [Gemm(push_next=True), Finish()])
    return DramLayout(cfg).finish(insns, [])


@pytest.mark.parametrize("backend", ["fsim", "tsim"])
def test_full_store_queue_deadlocks_on_the_simulators(backend):
    depth = load_config(SMALL).CMD_QUEUE_DEPTH
    with Device(backend, config=SMALL) as dev:
        dev.run_sync(dev.load(stores_before_gemm(depth)), timeout_s=30)  # just fits
        # fetch stops at the STORE after the ones the module and its queue hold
        with pytest.raises(DeadlockError, match=f"fetch at instruction {depth + 1} waits on "
                                                r"(room in the )?store commands? queue \(full\)"
                           ) as e:
            dev.run_sync(dev.load(stores_before_gemm(depth + 1)), timeout_s=30)
    assert e.value.insn_index == 0  # the STORE waiting on the GEMM's token


def test_vta_sim_functional_reports_the_deadlock(tmp_path):
    depth = load_config(SMALL).CMD_QUEUE_DEPTH
    path = tmp_path / "deadlock.vtaprog"
    stores_before_gemm(depth + 1).save(path)
    for model in ("functional", "cycle"):
        r = run_cli("sim", path, "--model", model)
        assert r.exit_code == 1, r.output
        assert "fetch at instruction 17 waits on" in r.output and "store command" in r.output
        assert "Traceback" not in r.output
