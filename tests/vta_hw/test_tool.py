"""vta_hw.tool.run_tool: every external tool runs under a wall-time limit that names it."""
from __future__ import annotations

import sys
import time

import pytest

from vta_hw.tool import TIMEOUT_ENV, ToolError, ToolTimeout, run_tool

SLEEP = [sys.executable, "-c", "import time; time.sleep(30)"]


def test_a_tool_past_its_limit_is_killed_and_named(tmp_path):
    t0 = time.monotonic()
    with pytest.raises(ToolTimeout, match=r"^sleeper did not finish within its limit of 0.5 s "
                                          r"and was killed; .*VTA_TOOL_TIMEOUT_S") as e:
        run_tool(SLEEP, timeout_s=0.5, what="sleeper", capture_output=True, text=True)
    assert time.monotonic() - t0 < 10
    assert (e.value.what, e.value.limit_s) == ("sleeper", 0.5)


def test_what_the_tool_started_is_killed_too():
    # the child sleeps in a grandchild that holds the pipes: only killing the group returns
    t0 = time.monotonic()
    with pytest.raises(ToolTimeout, match="^sh did not finish"):
        run_tool(["sh", "-c", "sleep 30 & wait"], timeout_s=0.5, capture_output=True)
    assert time.monotonic() - t0 < 10


def test_a_tool_within_its_limit_returns_its_output_and_status():
    r = run_tool([sys.executable, "-c", "import sys; print('hi'); sys.exit(3)"], timeout_s=60,
                 capture_output=True, text=True)
    assert (r.returncode, r.stdout) == (3, "hi\n")


def test_the_environment_replaces_every_limit(monkeypatch):
    monkeypatch.setenv(TIMEOUT_ENV, "0.5")
    with pytest.raises(ToolTimeout, match="within its limit of 0.5 s"):
        run_tool(SLEEP, timeout_s=3600, what="sleeper")
    monkeypatch.setenv(TIMEOUT_ENV, "soon")
    with pytest.raises(ToolError, match=r"VTA_TOOL_TIMEOUT_S must be a positive number of "
                                        r"seconds, not 'soon'"):
        run_tool(SLEEP, timeout_s=1)


def test_a_missing_tool_is_named(tmp_path):
    with pytest.raises(ToolError, match=r"could not start no-such-cc .*installed and on PATH"):
        run_tool([tmp_path / "no-such-cc"], timeout_s=1, what="no-such-cc")


def test_the_link_step_is_bounded(tmp_path, monkeypatch):
    from compiler.codegen.llvm.export import link_shared
    cc = tmp_path / "slowcc"
    cc.write_text("#!/bin/sh\nsleep 30\n")
    cc.chmod(0o755)
    monkeypatch.setenv(TIMEOUT_ENV, "0.5")
    with pytest.raises(ToolTimeout, match=r"slowcc \(linking k.so\) did not finish within"):
        link_shared([b""], str(tmp_path / "k.so"), cc=str(cc))


def test_the_cocotb_runner_s_commands_are_bounded(tmp_path):
    pytest.importorskip("cocotb_tools")
    from driver.rtl.runner import verilator_runner
    runner = verilator_runner(0.5, "RTL simulation of test")
    with pytest.raises(ToolTimeout, match=r"^RTL simulation of test \(.*python.*\) did not finish"):
        runner._execute_cmds([SLEEP], cwd=tmp_path)
