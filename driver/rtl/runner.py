"""cocotb's Verilator runner with a wall-time limit on every command it runs.

cocotb's ``Runner`` runs Verilator, ``make`` and the simulation binary with
``subprocess.run`` and no limit; ``verilator_runner`` returns one whose commands go
through ``vta_hw.tool.run_tool`` instead, so a build or a simulation that hangs is
killed (with everything it started) and reported as ``vta_hw.tool.ToolTimeout``
naming the step and the limit.
"""
from __future__ import annotations

import subprocess

from vta_hw.tool import run_tool


def verilator_runner(limit_s: float, what: str):
    """A ``cocotb_tools.runner.Verilator`` whose every command must finish in ``limit_s``
    seconds; ``what`` names the step in the timeout's message (``"Verilator build of
    1x8_..."``). ``build``/``test`` raise ``vta_hw.tool.ToolTimeout`` past the limit."""
    from cocotb_tools.runner import Verilator

    class BoundedVerilator(Verilator):
        def _execute_cmds(self, cmds, cwd, stdout=None) -> None:
            # cocotb's own loop (cocotb_tools 2.1 ``Runner._execute_cmds``) with a limit
            for cmd in cmds:
                self.log.info("Running command %s in directory %s", " ".join(map(str, cmd)), cwd)
                result = run_tool(cmd, timeout_s=limit_s, what=f"{what} ({cmd[0]})", cwd=cwd,
                                  env=self.env, stdout=stdout,
                                  stderr=None if stdout is None else subprocess.STDOUT)
                if result.returncode != 0:
                    raise RuntimeError(f"Command failed with return code: {result.returncode}")

    return BoundedVerilator()
