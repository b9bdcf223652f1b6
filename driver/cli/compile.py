"""``vta compile``: an ONNX model -> a ``.vtamod`` folder (graph JSON + kernels.so + params)."""
from __future__ import annotations

import time

import click

from driver.cli.errors import friendly


def _progress(iterable, total, desc):
    from tqdm import tqdm
    return tqdm(iterable, total=total, desc=desc, unit="kernel" if desc == "lowering" else "group",
                leave=False)


@click.command("compile")
@click.argument("model", type=click.Path(dir_okay=False))
@click.option("-o", "--output", required=True, metavar="DIR",
              help="module folder to write, e.g. out/model.vtamod")
@click.option("--target", default="llvm", show_default=True, help="code generation target (host CPU)")
@click.option("--input-shape", "input_shapes", multiple=True, metavar="NAME:1x3x224x224",
              help="static shape of an input (repeatable); dynamic dimensions default to 1")
@click.option("--quiet", is_flag=True, help="no progress bar")
@friendly
def compile_cmd(model, output, target, input_shapes, quiet):
    """Compile the ONNX MODEL for the CPU into the module folder OUTPUT.

    \b
    Example:
      vta compile examples/digits/digits_cnn.onnx -o out/digits.vtamod
      vta run out/digits.vtamod --eval examples/digits/heldout.npz --eval-scale 0.0625
    """
    from compiler.build_model import build_model
    from compiler.frontend import parse_input_shape

    if target.split()[0] != "llvm":
        raise click.ClickException(f"--target {target!r}: `vta compile` builds host CPU modules; "
                                   "use --target llvm")
    shapes = dict(parse_input_shape(s) for s in input_shapes)
    start = time.perf_counter()
    cm = build_model(model, target=target, input_shapes=shapes,
                     progress=None if quiet else _progress)
    cm.save(output)
    st = cm.stats
    click.echo(f"wrote {output}: {st['kernels']} kernels for {st['calls']} calls, "
               f"{len(cm.params)} params, compiled in {time.perf_counter() - start:.1f} s "
               f"(lowering {st['lower_s']:.1f} s, LLVM {st['llvm_s']:.1f} s)")
    for i in cm.graph_json["inputs"]:
        click.echo(f"  input  {i['name']}: {i['dtype']}{i['shape']}")
    for o in cm.graph_json["outputs"]:
        click.echo(f"  output {o['name']}: {o['dtype']}{o['shape']}")
