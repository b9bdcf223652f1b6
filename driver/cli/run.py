"""``vta run``: execute a compiled ``.vtamod`` (``driver.runtime.load_module``): on the CPU
(numpy + ctypes; no compiler needed), a GPU, or (``--target vta`` modules) the CPU plus an
accelerator device: fsim, tsim or the RTL."""
from __future__ import annotations

import contextlib
import os
import time
import warnings

import click
import numpy as np

from driver import backends
from driver.cli.errors import friendly, output_path, plural, read_npy, read_npz
from driver.cli.scale_hint import looks_unscaled, scale_hint, scale_left_default


def _load_inputs(module, specs, seed):
    """name -> array from ``--input [NAME=]FILE.npy`` options, seeded random for the rest
    (a float input the module quantizes: uniform in its calibrated range, so that the random
    input does not saturate; any other float input: standard normal), and each input's
    ``input ...`` line for the terminal."""
    from driver.runtime.dlpack import host_array
    info = module.input_info()
    given = {}
    for i, spec in enumerate(specs):
        name, _, path = spec.rpartition("=")
        if not name:
            if i >= len(info):
                raise click.ClickException(f"--input {spec}: the module has only {len(info)} input(s)")
            name = info[i][0]
        names = [n for n, _, _ in info]
        if name not in names:
            raise click.ClickException(f"--input {spec}: the module has no input {name!r}; "
                                       f"inputs: {', '.join(names)}")
        given[name] = host_array(read_npy(path, "--input"), f"--input {spec}")  # real numbers
    ranges = {i["name"]: i.get("range") for i in module.graph["inputs"]}
    rng = np.random.default_rng(seed)
    out, lines = {}, []
    for name, shape, dtype in info:
        how = f"random (seed {seed})"
        if name in given:
            out[name] = given[name]   # the module converts it, refusing text or complex values
            how = "from file"
        elif np.issubdtype(np.dtype(dtype), np.floating) and ranges.get(name):
            lo, hi = ranges[name]
            out[name] = rng.uniform(lo, hi, shape).astype(dtype)
            how = f"random (seed {seed}, uniform in the calibrated range [{lo:g}, {hi:g}])"
        elif np.issubdtype(np.dtype(dtype), np.floating):
            out[name] = rng.standard_normal(shape).astype(dtype)
        else:  # token ids and masks: 0 or 1, valid for any vocabulary
            out[name] = rng.integers(0, 2, shape).astype(dtype)
        lines.append(f"input {name}: {np.dtype(dtype)}{list(shape)} {how}")
    return out, lines


def _set_inputs(module, specs, seed) -> None:
    """Set every input of ``module`` (:func:`_load_inputs`), then print the ``input ...``
    lines: a file of the wrong shape fails before a line describes it as the compiled shape."""
    feed, lines = _load_inputs(module, specs, seed)
    for name, value in feed.items():
        module.set_input(name, value)
    for line in lines:
        click.echo(line)


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
@click.argument("module_dir", metavar="MODULE", type=click.Path())
@click.option("--input", "inputs", multiple=True, metavar="[NAME=]FILE.npy",
              help="input array (repeatable); inputs not given are seeded random: standard "
                   "normal, or for an accelerator module's float input uniform in its "
                   "calibrated range")
@click.option("--seed", default=0, show_default=True, help="seed of the random inputs")
@click.option("--repeat", default=10, show_default=True, type=click.IntRange(min=1),
              help="timed runs for the latency (CPU and GPU modules)")
@click.option("--eval", "eval_path", type=click.Path(dir_okay=False), metavar="DATA.npz",
              help="accuracy over a labelled set: arrays 'images' (or 'x') and 'labels' (or 'y')")
@click.option("--eval-scale", default=1.0, show_default=True,
              help="multiply --eval images by this (digits: 0.0625 = pixel / 16)")
@click.option("--save-output", type=click.Path(dir_okay=False), metavar="FILE.npy",
              help="write output 0 to this .npy file")
@click.option("--device", type=click.Choice(backends.names()), default=None,
              help="accelerator modules (--target vta): the device backend [default: tsim]")
@click.option("--port", default=None, metavar="SERIAL",
              help="--device fpga: the board's serial port, e.g. /dev/ttyUSB0")
@friendly
def run_cmd(module_dir, inputs, seed, repeat, eval_path, eval_scale, save_output, device, port):
    """Run the compiled MODULE (a folder from `vta compile`) and print its outputs and latency;
    for an accelerator module (--target vta) also cycles, GEMM utilization and DRAM bytes.

    \b
    Examples:
      vta compile examples/digits/digits_cnn.onnx -o out/digits.vtamod
      vta run out/digits.vtamod                        seeded random input, latency
      vta run out/digits.vtamod --input image=x.npy    outputs of x.npy (float32[1, 1, 8, 8])
      vta run out/digits.vtamod --eval examples/digits/heldout.npz --eval-scale 0.0625
      vta run out/digits_vta.vtamod --device fsim      on the functional simulator (no cycles)
      vta run out/digits_vta.vtamod --device fpga --port /dev/ttyUSB0   on a board
    """
    from driver.runtime import load_module

    if os.path.isfile(module_dir):
        what = "an ONNX model" if module_dir.lower().endswith(".onnx") else "a file"
        raise click.UsageError(f"MODULE {module_dir} is {what}, not a compiled module folder; "
                               f"compile it first: vta compile {module_dir} -o model.vtamod, "
                               "then vta run model.vtamod")
    output_path(save_output, "--save-output")
    if port is not None and device != "fpga":
        raise click.ClickException(f"--port {port}: a serial port applies to --device fpga only")
    if device == "fpga" and port is None:
        raise click.ClickException("--device fpga needs --port SERIAL, the board's serial port "
                                   "(e.g. --port /dev/ttyUSB0)")
    data = _read_eval(eval_path) if eval_path else None
    m = load_module(module_dir, device=device, **({"port": port} if port is not None else {}))
    if getattr(m, "cpu_variant", None):
        click.echo(f"CPU variant {m.cpu_variant}: the best of the module's variants this "
                   "machine runs")
    fix = "compile with --calibrate samples like these if they are expected"
    if data is not None and _unscaled(m, data[0], "eval_scale"):
        fix = f"{scale_hint('--eval-scale')}; or {fix}"
    with _range_summary(fix):
        if m.device is not None:
            return _run_vta(m, inputs, seed, eval_path, data, eval_scale, save_output)
        if data is not None:
            return _evaluate(m, eval_path, data, eval_scale)
        _set_inputs(m, inputs, seed)
        m.run()
    for i, (name, _, _) in enumerate(m.output_info()):
        click.echo(_describe(name, m.get_output(i)))
    if save_output:
        np.save(save_output, m.get_output(0))
        click.echo(f"wrote {save_output}")
    from driver.runtime.input_check import InputNaNWarning, InputRangeWarning
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InputRangeWarning)  # reported once above
        warnings.simplefilter("ignore", InputNaNWarning)
        t = m.benchmark(repeat)
    if m.kind == "gpu":
        where = m.target
    else:
        from driver.runtime import num_threads
        where = plural(num_threads(), "thread")
    click.echo(f"latency: {t['median_s'] * 1e3:.3f} ms median, {t['min_s'] * 1e3:.3f} ms best of "
               f"{plural(repeat, 'run')} ({where})")


def _unscaled(m, xs, option: str) -> bool:
    """Whether the --eval images ``xs`` look unscaled (``scale_hint.looks_unscaled``: integer
    pixels, or far beyond the calibrated range of the module's one input) while the scale
    ``option`` (a ``run_cmd`` parameter name) was left at its default."""
    if not scale_left_default(option):
        return False
    ranges = [i.get("range") for i in m.graph["inputs"]]
    return looks_unscaled(xs, ranges[0] if len(ranges) == 1 else None)


@contextlib.contextmanager
def _range_summary(fix: str):
    """Add up the runs' ``InputRangeWarning``s per input; print one ``warning:`` line per
    input on stderr at the end, ending in ``fix``, and each distinct ``InputNaNWarning``
    once (no Python warning lines)."""
    from driver.runtime.input_check import (InputNaNWarning, InputRangeWarning,
                                            describe_out_of_range)
    seen = {}  # input name -> [count, size, runs, lo, hi]
    nan_named = set()
    with warnings.catch_warnings():
        warnings.simplefilter("always", InputRangeWarning)
        warnings.simplefilter("always", InputNaNWarning)
        show = warnings.showwarning

        def collect(message, cat, *args, **kw):
            if isinstance(message, InputNaNWarning):
                if message.name not in nan_named:      # the first run's count, once per input
                    nan_named.add(message.name)
                    click.echo(f"warning: {message}", err=True)
                return None
            if not isinstance(message, InputRangeWarning):
                return show(message, cat, *args, **kw)
            s = seen.setdefault(message.name, [0, 0, 0, message.lo, message.hi])
            s[0] += message.count
            s[1] += message.size
            s[2] += 1
        warnings.showwarning = collect
        try:
            yield
        finally:
            for name, (count, size, runs, lo, hi) in seen.items():
                click.echo("warning: " + describe_out_of_range(
                    name, count, size, lo, hi, runs, fix=fix), err=True)


def _single_input(m):
    info = m.input_info()
    if len(info) != 1:
        raise click.ClickException(f"--eval needs a model with one input; this one has "
                                   f"{len(info)} ({', '.join(i[0] for i in info)}); use --input")
    return info


def _evaluate(m, path, data, scale):
    xs, ys = data
    (name, shape, dtype), = _single_input(m)
    per = int(np.prod(shape))
    if xs[0].size != per:
        raise click.ClickException(f"--eval: an example has {xs[0].size} values, input {name} "
                                   f"takes {per} ({list(shape)}); give examples of that size"
                                   + ("" if shape[0] == 1 else ", or compile with batch 1"))
    correct, elapsed = 0, 0.0
    for x, y in zip(xs, ys):
        m.set_input(name, _scaled(x, scale, dtype).reshape(shape))
        t0 = time.perf_counter()
        m.run()
        elapsed += time.perf_counter() - t0
        correct += int(np.argmax(m.get_output(0).reshape(-1)) == int(y))
    click.echo(f"accuracy: {correct / len(ys) * 100:.2f} % ({correct} / {len(ys)}) on {path}")
    click.echo(f"latency: {elapsed / len(ys) * 1e3:.3f} ms mean per image (batch 1)")


def _scaled(xs, scale, dtype):
    """``xs * scale`` in the model input's ``dtype`` for a float input; for an integer or
    bool input (token ids, masks) ``xs`` in that dtype, unscaled (a scale would corrupt ids)."""
    if np.issubdtype(np.dtype(dtype), np.floating):
        return (xs.astype(np.float64) * scale).astype(dtype)
    return xs.astype(dtype)


def _read_eval(path):
    data = read_npz(path, "--eval", "arrays 'images' and 'labels' (or 'x' and 'y')")
    xs = data["images"] if "images" in data else data.get("x")
    ys = data["labels"] if "labels" in data else data.get("y")
    if xs is None or ys is None:
        raise click.ClickException(f"--eval {path}: needs arrays 'images' and 'labels' (or 'x' and "
                                   f"'y'); it has {', '.join(data) or 'no arrays'}")
    if xs.ndim == 0 or len(xs) == 0:
        raise click.ClickException(f"--eval {path} holds no images")
    if ys.ndim != 1 or len(ys) != len(xs):
        raise click.ClickException(f"--eval {path}: {len(xs)} images but "
                                   f"{ys.size if ys.ndim != 1 else len(ys)} labels "
                                   f"(labels shape {list(ys.shape)}); it needs one label per image")
    if not (np.issubdtype(xs.dtype, np.number) and np.issubdtype(ys.dtype, np.number)):
        raise click.ClickException(f"--eval {path}: images ({xs.dtype}) and labels ({ys.dtype}) "
                                   "must be numeric arrays")
    return xs, ys


def _run_vta(m, inputs, seed, eval_path, data, scale, save_output):
    """An accelerator module: CPU kernels and device programs; cycles and utilization.
    ``data``: the --eval (images, labels), or None."""
    device = m.device.backend_name
    if data is not None:
        xs, ys = data
        (name, shape, dtype), = _single_input(m)
        batch, per = shape[0], int(np.prod(shape[1:]))
        if xs[0].size != per:
            raise click.ClickException(f"--eval: an example has {xs[0].size} values, input {name} "
                                       f"takes {per} per image ({list(shape[1:])}); give images "
                                       "of the model's input size")
        xs = _scaled(xs, scale, dtype).reshape((-1,) + tuple(shape[1:]))
        n = len(xs)
        preds, elapsed = [], 0.0
        for k in range(0, n, batch):
            idx = np.arange(k, k + batch) % n  # the last batch is padded with real samples
            t0 = time.perf_counter()
            y = m(xs[idx])[0]
            elapsed += time.perf_counter() - t0
            preds.append(np.argmax(y.reshape(batch, -1), axis=1)[:min(batch, n - k)])
        correct = int((np.concatenate(preds) == ys).sum())
        click.echo(f"accuracy: {correct / n * 100:.2f} % ({correct} / {n}) on {eval_path} "
                   f"(device {device}, batches of {batch})")
        click.echo(f"latency: {elapsed / len(preds) * 1e3:.3f} ms mean per batch of {batch}, "
                   f"{elapsed / n * 1e3:.3f} ms per image (host wall clock, device {device})")
    else:
        _set_inputs(m, inputs, seed)
        t0 = time.perf_counter()
        outs = m()
        elapsed = time.perf_counter() - t0
        for (oname, _, _), y in zip(m.output_info(), outs):
            click.echo(_describe(oname, y))
        if save_output:
            np.save(save_output, outs[0])
            click.echo(f"wrote {save_output}")
        click.echo(f"latency: {elapsed * 1e3:.3f} ms, one run (host wall clock, device "
                   f"{device}{'' if device == 'fpga' else ': mostly simulation time'})")
    st = m.stats()
    if not m.device.backend.timed:
        click.echo(f"device {device}: {plural(st['runs'], 'program run')}, DRAM {st['dram_bytes']} B "
                   f"(the {m.device.backend.description.split(' (')[0]} has no cycles; use "
                   "--device tsim)")
        for c in st["layers"].values():
            click.echo(f"  {c['name']:<16} {c['runs']:>4} {'run ' if c['runs'] == 1 else 'runs'}  "
                       f"DRAM {c['dram_bytes']} B")
        return
    util = f"GEMM utilization {100 * st['gemm_utilization']:.2f} %"
    click.echo(f"device {device}: {plural(st['runs'], 'program run')}, total cycles {st['cycles']}, "
               f"{util}, DRAM {st['dram_bytes']} B")
    peak = m.device.peak_macs_per_cycle
    for c in st["layers"].values():
        u = f"{100 * c['gemm_macs'] / (c['cycles'] * peak):6.2f} %" if c["gemm_macs"] else "   n/a"
        click.echo(f"  {c['name']:<16} {c['runs']:>4} {'run ' if c['runs'] == 1 else 'runs'} {c['cycles']:>12} cycles  GEMM {u}  "
                   f"DRAM {c['dram_bytes']} B")
