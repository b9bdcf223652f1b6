"""Entry point of the ``vta`` command; each subcommand lives in its own module."""
from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

import click

from driver.cli.disasm import disasm
from driver.cli.example import example
from driver.cli.info import info
from driver.cli.sim_cmd import sim


def _version() -> str:
    try:
        return version("vta-stack")
    except PackageNotFoundError:
        return "unknown (not installed)"


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(_version(), "--version", prog_name="vta")
@click.option("--debug", is_flag=True,
              help="show the full traceback of an internal error (a bug) instead of a summary")
def cli(debug: bool) -> None:
    """VTA stack: compile models, simulate the accelerator, build its hardware.

    \b
    Quick start:
      vta example gemm -o gemm.vtaprog      build the example GEMM program
      vta sim gemm.vtaprog --check gemm.expected.npz
      vta disasm gemm.vtaprog               read its instructions
      vta info                              config in use and tools found
    """


cli.add_command(info)
cli.add_command(disasm)
cli.add_command(sim)
cli.add_command(example)
cli.add_command(__import__("driver.cli.fpga", fromlist=["fpga"]).fpga)
cli.add_command(__import__("driver.cli.hw", fromlist=["hw"]).hw)
cli.add_command(__import__("driver.cli.compile", fromlist=["compile_cmd"]).compile_cmd)
cli.add_command(__import__("driver.cli.run", fromlist=["run_cmd"]).run_cmd)
cli.add_command(__import__("driver.cli.serve_demo", fromlist=["serve_demo"]).serve_demo)
cli.add_command(__import__("driver.cli.tune", fromlist=["tune_cmd"]).tune_cmd)


def main() -> None:
    cli(prog_name="vta")


if __name__ == "__main__":  # python -m driver.cli.main (python -m driver.cli avoids runpy's warning)
    main()
