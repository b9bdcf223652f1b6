"""``vta example``: build the bundled example programs."""
from __future__ import annotations

from pathlib import Path

import click
import numpy as np

from driver.cli.errors import friendly, output_path
from driver.cli.options import config_option
from driver.examples.gemm import gemm_program
from vta_hw.config import load_config


@click.group()
def example() -> None:
    """Build example programs (hand-written instruction streams)."""


@example.command("gemm")
@config_option
@click.option("-o", "--output", type=click.Path(dir_okay=False), required=True,
              help="program file to write (.vtaprog)")
@click.option("-m", default=64, show_default=True, help="rows of A and C")
@click.option("-n", default=64, show_default=True, help="rows of B, columns of C")
@click.option("-k", default=64, show_default=True, help="columns of A and B")
@click.option("--shift", default=4, show_default=True, help="requantization right shift, bits")
@click.option("--seed", default=0, show_default=True, help="seed of the random int8 inputs")
@friendly
def gemm(config_name: str, output: str, m: int, n: int, k: int, shift: int, seed: int) -> None:
    """Write an int8 GEMM program C = clip((A @ B^T) >> shift, -127, 127).

    Beside OUTPUT it writes OUTPUT's stem + ".expected.npz" holding the numpy
    result for buffer C (packed), for `vta sim --check`.
    """
    output_path(output, "-o/--output")
    cfg = load_config(config_name)
    prog, expected = gemm_program(cfg, m, n, k, shift, seed)
    out = Path(output)
    out.parent.mkdir(parents=True, exist_ok=True)
    ref = out.with_name(out.name.removesuffix(".vtaprog") + ".expected.npz")
    c = prog.buffer("C")
    packed = expected.reshape(c.shape[0], c.shape[2], c.shape[1], c.shape[3]).transpose(0, 2, 1, 3)
    np.savez(ref, C=np.ascontiguousarray(packed))
    prog.save(out)
    click.echo(f"wrote {out} ({len(prog.insns)} instructions, {len(prog.uops)} uops, "
               f"config {cfg.name}) and {ref}")
