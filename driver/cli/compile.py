"""``vta compile``: an ONNX model -> a ``.vtamod`` folder (graph JSON + kernels.so + params)."""
from __future__ import annotations

import time

import click

from driver.cli.errors import friendly, output_path, plural, read_npz


def _progress(iterable, total, desc):
    from tqdm import tqdm
    return tqdm(iterable, total=total, desc=desc, unit="kernel" if desc == "lowering" else "group",
                leave=False, disable=None)  # no bar when stderr is not a terminal


@click.command("compile")
@click.argument("model", type=click.Path(dir_okay=False))
@click.option("-o", "--output", required=True, metavar="DIR",
              help="module folder to write, e.g. out/model.vtamod")
@click.option("--target", default="llvm", show_default=True,
              help="llvm (host CPU), cuda (sm_90 cubin; 'cuda -arch=sm_80'), opencl, or vta "
                   "(the accelerator: int8, calibrated)")
@click.option("--config", "preset", default=None, metavar="PRESET",
              help="--target vta: accelerator preset or config JSON (default preset)")
@click.option("--calibrate", "calib_path", type=click.Path(dir_okay=False), metavar="DATA.npz",
              help="--target vta: calibration samples (array named after the input, or 'images')")
@click.option("--calibrate-scale", default=1.0, show_default=True,
              help="--target vta: multiply the calibration samples by this (digits: 0.0625)")
@click.option("--per-channel", is_flag=True,
              help="--target vta: one power-of-two weight scale per output channel of every "
                   "conv/dense (the accelerator shifts each lane by its own amount)")
@click.option("--input-shape", "input_shapes", multiple=True, metavar="NAME:1x3x224x224",
              help="static shape of an input (repeatable); dynamic dimensions default to 1")
@click.option("--quiet", is_flag=True, help="no progress bar")
@friendly
def compile_cmd(model, output, target, preset, calib_path, calibrate_scale, per_channel,
                input_shapes, quiet):
    """Compile the ONNX MODEL for the CPU or a GPU into the module folder OUTPUT.

    \b
    Example:
      vta compile examples/digits/digits_cnn.onnx -o out/digits.vtamod
      vta compile examples/digits/digits_cnn.onnx --target cuda -o out/digits_cuda.vtamod
      vta run out/digits.vtamod --eval examples/digits/heldout.npz --eval-scale 0.0625
      vta compile examples/digits/digits_cnn.onnx --target vta --input-shape image:120x1x8x8 \\
          --calibrate examples/digits/calib.npz --calibrate-scale 0.0625 \\
          -o out/digits_vta.vtamod
      vta run out/digits_vta.vtamod --device tsim --eval examples/digits/heldout.npz --eval-scale 0.0625
    """
    from compiler.build_model import build_model
    from compiler.frontend import parse_input_shape

    output_path(output, "-o/--output", folder=True)
    kind = target.split()[0] if target.split() else ""
    if kind == "vta":
        if target.split()[1:]:
            raise click.ClickException(f"--target {target!r}: vta takes no options; choose the "
                                       "accelerator with --config PRESET")
        _compile_vta(model, output, preset, calib_path, calibrate_scale,
                     dict(parse_input_shape(s) for s in input_shapes), per_channel)
        return
    if preset or calib_path or per_channel:
        raise click.ClickException("--config, --calibrate and --per-channel apply to --target "
                                   "vta only")
    if kind not in ("llvm", "cuda", "opencl"):
        raise click.ClickException(f"--target {target!r}: unknown target; use --target llvm (host "
                                   "CPU), --target cuda ('cuda -arch=sm_80'), --target opencl "
                                   "or --target vta (the accelerator)")
    shapes = dict(parse_input_shape(s) for s in input_shapes)
    start = time.perf_counter()
    from compiler.codegen.cuda import CudaCompileError
    try:
        cm = build_model(model, target=target, input_shapes=shapes,
                         progress=None if quiet else _progress)
    except CudaCompileError as e:
        raise click.ClickException(_cuda_error(target, e)) from None
    cm.save(output)
    st = cm.stats
    click.echo(f"wrote {output}: {plural(st['kernels'], 'kernel')} for "
               f"{plural(st['calls'], 'call')}, {plural(len(cm.params), 'param')}, compiled in {time.perf_counter() - start:.1f} s "
               f"(lowering {st['lower_s']:.1f} s, {'LLVM' if kind == 'llvm' else kind} "
               f"{st['llvm_s']:.1f} s)")
    for i in cm.graph_json["inputs"]:
        click.echo(f"  input  {i['name']}: {i['dtype']}{i['shape']}")
    for o in cm.graph_json["outputs"]:
        click.echo(f"  output {o['name']}: {o['dtype']}{o['shape']}")


def _cuda_error(target, e) -> str:
    """One line for a kernel NVRTC/nvcc rejected; the source goes to a file, not the terminal."""
    import tempfile
    fd, src = tempfile.mkstemp(prefix=f"vta-{e.kernel}-", suffix=".cu")
    with open(fd, "w") as f:
        f.write(e.source)
    lines = [ln.strip() for ln in e.log.splitlines() if ln.strip()]
    first = next((ln for ln in lines if "error" in ln), lines[0] if lines else "compile failed")
    if "arch" in e.log:
        arch = next((w.split("=", 1)[1] for w in target.split() if w.startswith("-arch=")), "sm_90")
        return (f"--target {target!r}: the CUDA compiler rejects arch {arch!r} ({first}); "
                f"use e.g. -arch=sm_80 or -arch=sm_90 (kernel source: {src})")
    return f"--target {target!r}: kernel {e.kernel!r} does not compile: {first} (source: {src})"


def _compile_vta(model, output, preset, calib_path, scale, shapes, per_channel=False):
    from compiler.frontend.onnx import from_onnx
    from compiler.quant import build_vta_model, load_calibration

    start = time.perf_counter()
    graph, params = from_onnx(model, input_shapes=shapes)
    calib = None
    if calib_path:
        read_npz(calib_path, "--calibrate",
                 "an array named after the input, or 'images'")  # .npy / pickles: clear errors
        calib = {}
        for i in graph.inputs:
            try:
                calib.update(load_calibration(calib_path, i.name, scale))
            except (OSError, ValueError) as exc:
                raise click.ClickException(f"--calibrate: {exc}") from None
            if calib[i.name].ndim == 0 or len(calib[i.name]) == 0:
                raise click.ClickException(f"--calibrate {calib_path} holds no images")
    else:
        click.echo("warning: no --calibrate data; calibrating on seeded random normal inputs "
                   "(accuracy will suffer)")
    cm = build_vta_model(graph, params=params, config=preset, calib=calib,
                         per_channel=per_channel)
    cm.save(output)
    qg = cm.qgraph
    n_vta = sum(1 for n in qg.nodes if n.target == "vta")
    click.echo(f"wrote {output}: {len(qg.nodes)} quantized nodes, {n_vta} on the accelerator "
               f"({cm.plan.config.name}), compiled in {time.perf_counter() - start:.1f} s")
    for n in qg.nodes:
        if n.target == "vta":
            lshift = (f" la {n.attrs['la']} lb {n.attrs['lb']}" if "la" in n.attrs else "")
            sh = n.attrs["shift"]
            sh = f"{min(sh)}..{max(sh)} per channel" if isinstance(sh, tuple) else sh
            click.echo(f"  vta  {n.op.value:<7} {n.name}: int8{list(n.shape)}{lshift} shift "
                       f"{sh}{' relu' if n.attrs['relu'] else ''}")
    ins, outs = cm.io()
    for i in ins:
        click.echo(f"  input  {i['name']}: {i['dtype']}{i['shape']}")
    for o in outs:
        click.echo(f"  output {o['name']}: {o['dtype']}{o['shape']}")
