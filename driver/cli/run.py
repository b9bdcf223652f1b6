"""``vta run``: execute a compiled ``.vtamod`` on the CPU (numpy + ctypes; no compiler needed)."""
from __future__ import annotations

import click
import numpy as np

from driver.cli.errors import friendly


def _load_inputs(module, specs, seed):
    """name -> array from ``--input [NAME=]FILE.npy`` options, seeded random for the rest."""
    info = module.input_info()
    given = {}
    for i, spec in enumerate(specs):
        name, _, path = spec.rpartition("=")
        if not name:
            if i >= len(info):
                raise click.ClickException(f"--input {spec}: the module has only {len(info)} input(s)")
            name = info[i][0]
        try:
            given[name] = np.load(path)
        except (OSError, ValueError) as exc:
            raise click.ClickException(f"--input {spec}: cannot read {path!r} as .npy: {exc}") from None
    rng = np.random.default_rng(seed)
    out = {}
    for name, shape, dtype in info:
        if name in given:
            out[name] = given[name].astype(dtype, copy=False)
        else:
            out[name] = rng.standard_normal(shape).astype(dtype)
    return out, given


def _describe(name, y):
    if y.ndim == 2 and y.shape[0] == 1 and y.shape[1] >= 5 and np.issubdtype(y.dtype, np.floating):
        top = np.argsort(-y[0])[:5]
        ranks = ", ".join(f"{int(c)} ({y[0, c]:.4g})" for c in top)
        return f"output {name}: {y.dtype}{list(y.shape)} top-5 classes: {ranks}"
    flat = y.reshape(-1)
    head = np.array2string(flat[:8], precision=4, separator=", ")
    return (f"output {name}: {y.dtype}{list(y.shape)} min {flat.min():.4g} max {flat.max():.4g} "
            f"mean {flat.mean():.4g} first {head}")


@click.command("run")
@click.argument("module_dir", metavar="MODULE", type=click.Path(file_okay=False))
@click.option("--input", "inputs", multiple=True, metavar="[NAME=]FILE.npy",
              help="input array (repeatable); inputs not given are seeded random normal")
@click.option("--seed", default=0, show_default=True, help="seed of the random inputs")
@click.option("--repeat", default=10, show_default=True, help="timed runs for the latency")
@click.option("--eval", "eval_path", type=click.Path(dir_okay=False), metavar="DATA.npz",
              help="accuracy over a labelled set: arrays 'images' (or 'x') and 'labels' (or 'y')")
@click.option("--eval-scale", default=1.0, show_default=True,
              help="multiply --eval images by this (digits: 0.0625 = pixel / 16)")
@click.option("--save-output", type=click.Path(dir_okay=False), metavar="FILE.npy",
              help="write output 0 to this .npy file")
@friendly
def run_cmd(module_dir, inputs, seed, repeat, eval_path, eval_scale, save_output):
    """Run the compiled MODULE (a folder from `vta compile`) and print its outputs and latency.

    \b
    Examples:
      vta run out/resnet18.vtamod                      seeded random input
      vta run out/resnet18.vtamod --input x.npy        top-5 classes + latency
      vta run out/digits.vtamod --eval examples/digits/heldout.npz --eval-scale 0.0625
    """
    from driver.runtime import load_module, num_threads

    m = load_module(module_dir)
    if eval_path:
        _evaluate(m, eval_path, eval_scale)
        return
    feed, given = _load_inputs(m, inputs, seed)
    for name, value in feed.items():
        how = "from file" if name in given else f"random (seed {seed})"
        click.echo(f"input {name}: {value.dtype}{list(value.shape)} {how}")
        m.set_input(name, value)
    m.run()
    for i, (name, _, _) in enumerate(m.output_info()):
        click.echo(_describe(name, m.get_output(i)))
    if save_output:
        np.save(save_output, m.get_output(0))
        click.echo(f"wrote {save_output}")
    if repeat > 0:
        t = m.benchmark(repeat)
        click.echo(f"latency: {t['median_s'] * 1e3:.3f} ms median, {t['min_s'] * 1e3:.3f} ms best of "
                   f"{repeat} runs ({num_threads()} threads)")


def _evaluate(m, path, scale):
    try:
        data = np.load(path)
    except (OSError, ValueError) as exc:
        raise click.ClickException(f"--eval: cannot read {path!r}: {exc}") from None
    xs = data["images"] if "images" in data else data.get("x")
    ys = data["labels"] if "labels" in data else data.get("y")
    if xs is None or ys is None:
        raise click.ClickException(f"--eval {path}: needs arrays 'images' and 'labels' (or 'x' and "
                                   f"'y'); it has {', '.join(data.files)}")
    (name, shape, dtype), = m.input_info()
    per = int(np.prod(shape))
    if xs[0].size != per:
        raise click.ClickException(f"--eval: an example has {xs[0].size} values, input {name} "
                                   f"takes {per} ({list(shape)}); compile with batch 1")
    correct = 0
    for x, y in zip(xs, ys):
        m.set_input(name, (x.astype(np.float64) * scale).astype(dtype).reshape(shape))
        m.run()
        correct += int(np.argmax(m.get_output(0).reshape(-1)) == int(y))
    click.echo(f"accuracy: {correct / len(ys) * 100:.2f} % ({correct} / {len(ys)}) on {path}")
