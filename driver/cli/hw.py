"""``vta hw``: the accelerator's hardware: Verilog export."""
from __future__ import annotations

import time
from pathlib import Path

import click

from driver.cli.errors import friendly, output_path
from driver.cli.options import config_option
from vta_hw.config import load_config


@click.group()
def hw() -> None:
    """The accelerator RTL (Amaranth): export it as Verilog."""


@hw.command()
@config_option
@click.option("-o", "--output", "output", required=True, type=click.Path(dir_okay=False),
              help="Verilog file to write (module 'vta')")
@click.option("--max-burst-beats", default=16, show_default=True,
              help="longest memory burst, beats (must match the memory's DramTiming)")
@click.option("--page-bytes", default=4096, show_default=True,
              help="bursts never cross a multiple of this many bytes")
@friendly
def export(config_name: str, output: str, max_burst_beats: int, page_bytes: int) -> None:
    """Write the accelerator for PRESET as Verilog (amaranth.back.verilog).

    Ports: clk, rst, csr__* (register port), irq, mem__* (memory port); see
    vta_hw/rtl/top.py and vta_hw/timing.py.
    """
    from driver.rtl.build import export_verilog
    from vta_hw.rtl import RtlParams
    output_path(output, "-o/--output")
    cfg = load_config(config_name)
    t0 = time.monotonic()
    try:
        params = RtlParams(max_burst_beats, page_bytes)
    except ValueError as e:   # the RTL's parameter checks (amaranth style: ValueError)
        raise click.ClickException(f"--max-burst-beats/--page-bytes: {e}") from None
    text = export_verilog(cfg, params)
    Path(output).write_text(text)
    click.echo(f"wrote {output}: module vta for {cfg.name}, {len(text.splitlines())} lines, "
               f"{time.monotonic() - t0:.1f} s")
