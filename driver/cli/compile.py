"""``vta compile``: an ONNX model or a saved ``torch.export`` program (``.pt2``) -> a
``.vtamod`` module folder (``compiler.build_model`` +
``CompiledModel.save``): argument parsing, progress and printing."""
from __future__ import annotations

import time

import click

from driver.cli.errors import (check_input_file, check_input_shapes, check_log_input, friendly,
                               output_path, plural, read_npz)
from driver.cli.options import check_aot_prefix, check_config, check_place, check_target
from driver.cli.scale_hint import looks_unscaled, scale_hint, scale_left_default
from vta_hw.config import DEFAULT_PRESET, preset_names


def _progress(iterable, total, desc):
    from tqdm import tqdm
    return tqdm(iterable, total=total, desc=desc, unit="kernel" if desc == "lowering" else "group",
                leave=False, disable=None)  # no bar when stderr is not a terminal


@click.command("compile")
@click.argument("model", type=click.Path(dir_okay=False))
@click.option("-o", "--output", required=True, metavar="DIR",
              help="module folder to write, e.g. out/model.vtamod")
@click.option("--target", default="llvm", show_default=True, callback=check_target,
              help="llvm (host CPU; 'llvm -mcpu=x86-64-v2,x86-64-v3,x86-64-v4': one module with "
                   "kernels per level, the loader picks the best; aarch64, armv7, wasm32 or "
                   "'llvm -mtriple=...': kernels as an object for that machine), cuda (sm_90 cubin; 'cuda -arch=sm_80'), opencl, or "
                   "vta (the accelerator: int8, calibrated)")
@click.option("--config", "preset", default=None, metavar="PRESET", callback=check_config,
              help="--target vta: accelerator preset or config JSON (default "
                   f"{DEFAULT_PRESET}; presets: {', '.join(preset_names())})")
@click.option("--calibrate", "calib_path", type=click.Path(dir_okay=False), metavar="DATA.npz",
              help="--target vta: calibration samples, [N, *input dims] (array named after "
                   "the input, or 'images'; default: seeded random normal samples)")
@click.option("--calibrate-scale", default=1.0, show_default=True,
              help="--target vta: multiply the float inputs' calibration samples by this (digits: 0.0625; integer and bool inputs are read as they are)")
@click.option("--per-channel", is_flag=True,
              help="--target vta: one power-of-two weight scale per output channel of every "
                   "conv/dense (the accelerator shifts each lane by its own amount)")
@click.option("--quantize", type=click.Choice(["int8"]), default=None,
              help="--target llvm: run the model in int8 on the CPU (a QDQ model at its own "
                   "scales, any other calibrated with --calibrate; int8 x int8 -> int32 "
                   "convs and dense layers on VNNI where the CPU has it)")
@click.option("--dtype", type=click.Choice(["float32", "bfloat16"]), default="float32",
              show_default=True,
              help="--target llvm: bfloat16 computes dense layers and convs in bf16 with fp32 "
                   "accumulation on CPUs with AVX512-BF16, and prints the accuracy against "
                   "fp32 on a seeded input")
@click.option("--cpu-target", default=None, metavar="TARGET",
              help="--target vta: the LLVM target of the CPU steps' kernels (default llvm, this "
                   "machine's CPU; e.g. 'llvm -mcpu=x86-64-v2' for older x86-64 hosts, "
                   "'llvm -mcpu=x86-64-v2,x86-64-v3,x86-64-v4' for one variant per level)")
@click.option("--input-shape", "input_shapes", multiple=True, metavar="NAME:1x3x224x224",
              callback=check_input_shapes,
              help="static shape of an input (repeatable); a dynamic ONNX batch (first) "
                   "dimension defaults to 1, other dynamic dimensions must be given")
@click.option("--executor", type=click.Choice(["graph", "aot"]), default="graph",
              show_default=True,
              help="graph: the runtime calls the kernels in plan order (every target); aot "
                   "(CPU targets): the whole model as one C function vtamod_run with the "
                   "parameters as constant data and one workspace, plus its C header model.h "
                   "(model.so on this machine, model.o for aarch64/armv7/wasm32; "
                   "docs/deploy.md)")
@click.option("--aot-prefix", default=None, metavar="NAME", callback=check_aot_prefix,
              help="--executor aot: start every exported symbol and model.h name with NAME "
                   "instead of vtamod_ (mnist_: mnist_run, MNIST_WORKSPACE_BYTES, SONAME "
                   "libmnist_model.so), so that two models link into one program")
@click.option("--wasm", "wasm_path", type=click.Path(dir_okay=False), metavar="FILE.wasm",
              help="with --target wasm32 --executor aot: also link the model into one "
                   "WebAssembly file for the JavaScript runtime (wasm-ld; docs/deploy.md)")
@click.option("--tuning-log", "tuning_log", type=click.Path(dir_okay=False), metavar="LOG",
              help="apply, per workload, the best record of this `vta tune` log whose target "
                   "matches this build's exactly (CPU, preset or GPU device; others keep the "
                   "default)")
@click.option("--placement", type=click.Choice(["supported", "cost"]), default="supported",
              show_default=True,
              help="--target vta: supported (every node the accelerator runs) or cost (each such "
                   "node where its estimated time is lower: cycles at --clock-mhz against the "
                   "CPU kernel's time; the decisions are printed)")
@click.option("--clock-mhz", type=float, default=None, metavar="MHZ",
              help="--placement cost: the accelerator clock (default: the preset's board clock)")
@click.option("--cpu-gmacs", type=float, default=None, metavar="GMACS",
              help="--placement cost: the host's int8 throughput, 1e9 MACs/s (default: each "
                   "CPU kernel timed on this machine)")
@click.option("--cycles", "cycle_source", type=click.Choice(["model", "estimate"]),
              default="model", show_default=True,
              help="--placement cost: accelerator cycles from the cycle model or the "
                   "compiler's serial estimate (faster; close for DRAM-bound dense layers, high for "
                   "convs whose loads the cycle model overlaps)")
@click.option("--place", "force", multiple=True, metavar="OP=SIDE", callback=check_place,
              help="--target vta: force every node of op type conv2d, dense or add onto cpu or "
                   "vta (repeatable), e.g. --place dense=cpu")
@click.option("--quiet", is_flag=True, help="no progress bar")
@friendly
def compile_cmd(model, output, target, preset, calib_path, calibrate_scale, per_channel,
                quantize, dtype, cpu_target, input_shapes, executor, aot_prefix, wasm_path,
                tuning_log, placement, clock_mhz, cpu_gmacs, cycle_source, force, quiet):
    """Compile MODEL (ONNX, or a torch.export program saved with torch.export.save as .pt2)
    for the CPU, a GPU or the accelerator (--target vta) into the module folder OUTPUT (an
    earlier module there is replaced whole).

    \b
    Example:
      vta compile examples/digits/digits_cnn.onnx -o out/digits.vtamod
      vta compile examples/digits/digits_cnn.onnx --target cuda -o out/digits_cuda.vtamod
      vta compile model_qdq.onnx --quantize int8 -o out/model_int8.vtamod   # int8 on the CPU
      vta compile model.pt2 --input-shape x:1x3x224x224 -o out/model.vtamod
      vta compile examples/digits/digits_cnn.onnx --executor aot --target aarch64 \\
          -o out/digits_arm64.vtamod        # model.o + model.h for an AArch64 host
      vta compile examples/digits/digits_cnn.onnx --executor aot --aot-prefix digits_ \\
          -o out/digits_aot.vtamod          # digits_run in model.so (SONAME libdigits_model.so)
      vta compile examples/digits/digits_cnn.onnx --executor aot --target wasm32 \\
          -o out/digits_wasm.vtamod --wasm out/digits.wasm   # for Node and browsers
      vta run out/digits.vtamod --eval examples/digits/heldout.npz --eval-scale 0.0625
      vta compile examples/digits/digits_cnn.onnx --target vta --input-shape image:120x1x8x8 \\
          --calibrate examples/digits/calib.npz --calibrate-scale 0.0625 \\
          -o out/digits_vta.vtamod
      vta run out/digits_vta.vtamod --device tsim --eval examples/digits/heldout.npz --eval-scale 0.0625
      vta compile model.onnx --target vta --placement cost --place conv2d=vta -o out/m.vtamod
    """
    from compiler import build_model
    from compiler.codegen.gpu.cuda import CudaCompileError
    from compiler.frontend import parse_input_shapes

    if aot_prefix is not None and executor != "aot":
        raise click.UsageError(f"--aot-prefix {aot_prefix} names the symbols of an AOT module, "
                               f"not of --executor {executor}: add --executor aot, or drop it")
    _refuse_model_suffix(output)
    output_path(output, "-o/--output", folder=True)
    output_path(wasm_path, "--wasm")              # before any work, parents created as for -o
    _check_output_folder(output)
    if tuning_log is not None:   # it exists and some line is a record
        check_log_input(tuning_log, "--tuning-log")
    check_input_file(calib_path, "--calibrate", "give an .npz (np.savez) of samples, "
                     "[N, *input dims], named after the input or 'images'")
    kind = target.split()[0] if target.split() else ""
    _refuse_unused_precision(kind, quantize, dtype)
    from compiler.codegen.llvm.target import split_cpus
    try:
        fleet = len(split_cpus(target)) > 1 or len(split_cpus(cpu_target or "llvm")) > 1
    except ValueError as e:
        raise click.UsageError(f"--cpu-target {cpu_target!r}: {e}") from None
    if executor == "aot" and fleet:
        raise click.UsageError(f"--executor aot builds one object for one CPU, not a CPU list "
                               f"(--target {target!r}): build one AOT module per CPU, or use "
                               "--executor graph for one module with a variant per CPU")
    if executor == "aot" and kind in ("cuda", "opencl", "vta"):
        raise click.UsageError(f"--executor aot builds CPU modules (--target llvm, aarch64, "
                                   f"armv7, wasm32 or 'llvm -mtriple=...'), not --target "
                                   f"{target!r}; use --executor graph for GPUs and the accelerator")
    if wasm_path and (executor != "aot" or "wasm32" not in target):
        raise click.UsageError(f"--wasm needs --target wasm32 --executor aot, not --target "
                                   f"{target!r} --executor {executor}")
    if kind == "vta":
        if target.split()[1:]:
            raise click.UsageError(f"--target {target!r}: vta takes no options; choose the "
                                       "accelerator with --config PRESET")
        place = _placement(preset, placement, clock_mhz, cpu_gmacs, cycle_source, force,
                           cpu_target or "llvm")
        _compile_vta(model, output, preset, calib_path, calibrate_scale,
                     parse_input_shapes(input_shapes), per_channel, cpu_target or "llvm", place,
                     quiet, tuning_log)
        return
    if quantize:
        if kind != "llvm" or executor != "graph" or preset or cpu_target or tuning_log:
            raise click.UsageError(f"--quantize int8 builds a graph-executor module for "
                                       f"--target llvm (or 'llvm -mcpu=...'), without --config, "
                                       f"--cpu-target or --tuning-log, not --target {target!r} "
                                       f"--executor {executor}; the accelerator is --target vta")
        _compile_int8_cpu(model, output, target, calib_path, calibrate_scale,
                          parse_input_shapes(input_shapes), per_channel, quiet)
        return
    _refuse_vta_only(target, {"--config": preset, "--calibrate": calib_path,
                              "--per-channel": per_channel, "--cpu-target": cpu_target},
                     "--config, --calibrate and --per-channel also go with --quantize int8; "
                     "the CPU target is --target itself")
    _refuse_vta_only(target, {"--placement": placement != "supported", "--clock-mhz": clock_mhz,
                              "--cpu-gmacs": cpu_gmacs, "--place": force},
                     "they choose the accelerator's side of each node")
    shapes = parse_input_shapes(input_shapes)
    start = time.perf_counter()
    try:
        extra = {"dtype": dtype} if dtype != "float32" else {}
        cm = build_model(model, target=target, input_shapes=shapes, executor=executor,
                         tuning_log=tuning_log, aot_prefix=aot_prefix,
                         progress=None if quiet else _progress, **extra)
    except CudaCompileError as e:
        raise click.ClickException(_cuda_error(target, e)) from None
    cm.save(output)
    st = cm.stats
    click.echo(f"wrote {output}: {plural(st['kernels'], 'kernel')} for "
               f"{plural(st['calls'], 'call')}, {plural(len(cm.params), 'param')}, compiled in {time.perf_counter() - start:.1f} s "
               f"(lowering {st['lower_s']:.1f} s, {kind if kind in ('cuda', 'opencl') else 'LLVM'} "
               f"{st['llvm_s']:.1f} s)")
    if cm.aot is not None:
        click.echo(f"  AOT entry {cm.aot['entry']} in {cm.aot['object']} (declared in "
                   f"{cm.aot['header']}): workspace {cm.aot['workspace_bytes']} bytes, constants "
                   f"{cm.aot['constant_bytes']} bytes")
        if "soname" in cm.aot:
            click.echo(f"  {cm.aot['object']} has the SONAME {cm.aot['soname']}: put it beside "
                       "your program under that name (docs/deploy.md)")
    if wasm_path:
        from compiler.graph_lower.web import web_module
        with open(wasm_path, "wb") as f:
            f.write(web_module(cm))
        click.echo(f"  wrote {wasm_path}: the model as one WebAssembly file "
                   "(driver/web/vta_runtime.mjs loads it)")
    if dtype == "bfloat16":
        _bf16_report(model, target, shapes, cm)
    _echo_tuning(cm)
    _echo_io(cm)


def _refuse_vta_only(target: str, options: dict, why: str) -> None:
    """Usage error (exit 2) naming the ``options`` (name -> value) given, that is with a value
    other than None, False or an empty tuple or dict, which apply to --target vta only; nothing
    when none is."""
    names = [name for name, value in options.items()
             if value is not None and value is not False and not (value in ((), {}))]
    if names:
        listed = " and ".join(filter(None, (", ".join(names[:-1]), names[-1])))
        verb = "applies" if len(names) == 1 else "apply"
        raise click.UsageError(f"{listed} {verb} to --target vta only, not --target {target!r} "
                               f"({why}): add --target vta, or drop "
                               f"{'it' if len(names) == 1 else 'them'}")


def _refuse_unused_precision(kind: str, quantize, dtype: str) -> None:
    """Refuse precision options the build would ignore, before any work (usage error)."""
    if kind == "vta" and (quantize or dtype != "float32"):
        given = f"--quantize {quantize}" if quantize else f"--dtype {dtype}"
        raise click.UsageError(f"{given} does not apply to --target vta: the accelerator always "
                               "runs int8 (its precision comes from --config and calibration); "
                               "drop the option, or use --target llvm")
    if quantize and dtype != "float32":
        raise click.UsageError(f"--quantize {quantize} and --dtype {dtype} exclude each other: "
                               f"choose int8 (--quantize {quantize}) or {dtype} (--dtype)")


def _bf16_report(model, target, shapes, cm) -> None:
    """Print how many dense layers and convs were built in bf16 (the others stay fp32), the
    layers the accuracy rule kept fp32 (``stats["bf16"]``) and,
    for a target that runs on this host, the bf16 module's accuracy against an fp32 build of
    the model on one seeded standard-normal input (integer inputs: zeros)."""
    import numpy as np

    from compiler import build_model
    from compiler.codegen.llvm.target import parse_target
    from driver.runtime import load_module

    tags = [name.partition("#")[2] for name in cm.params]   # weights' packing: 'conv_bf16:16'
    rule = cm.stats.get("bf16") or {"fp32_prefix": 0}
    kept = " the accuracy rule's below, or" if rule["fp32_prefix"] else ""
    for op, what in (("conv", "convs"), ("dense", "dense layers")):
        mine = [t for t in tags if t.split("_")[0].split(":")[0] == op]
        n_bf16 = sum("bf16" in t for t in mine)
        if mine:
            click.echo(f"  bf16: {n_bf16} of {len(mine)} {what} built in bf16"
                       + ("" if n_bf16 == len(mine) else
                          f" (the others stay fp32:{kept} {_BF16_NEEDS[op]})"))
    if rule["fp32_prefix"]:
        click.echo(f"  bf16: the first {rule['fp32_prefix']} of {rule['candidates']} bf16-able "
                   f"layers kept fp32 ({', '.join(rule['fp32_layers'])}): emulated cosine "
                   f"{rule['emulated_cosine']:.6f} >= {rule['target_cosine']} "
                   "(compiler.graph_lower.bf16_accuracy)")
    from compiler.codegen.llvm.target import split_cpus
    if not parse_target(split_cpus(target)[0]).is_host:
        click.echo(f"  bf16 accuracy check skipped: --target {target} does not run on this host")
        return

    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal(i["shape"]).astype(i["dtype"])
              if np.issubdtype(np.dtype(i["dtype"]), np.floating)
              else np.zeros(i["shape"], i["dtype"]) for i in cm.graph_json["inputs"]]
    m = load_module(cm)
    got = m(*inputs)
    # a fleet module: against an fp32 build for the variant this host loaded
    one = next((t for t in split_cpus(target) if f"-mcpu={m.cpu_variant}" in t.split()), target)
    want = load_module(build_model(model, target=one, input_shapes=shapes))(*inputs)
    for o, g, w in zip(cm.graph_json["outputs"], got, want):
        g, w = np.asarray(g, np.float64).ravel(), np.asarray(w, np.float64).ravel()
        cos = float(g @ w / (np.linalg.norm(g) * np.linalg.norm(w) or 1.0))
        rel = float(np.abs(g - w).max() / (np.abs(w).max() or 1.0))
        click.echo(f"  bf16 vs fp32 on a seeded input, output {o['name']}: cosine {cos:.6f}, "
                   f"max error {rel:.2e} of max|fp32|")


#: what a layer needs for its bf16 implementation (impls/dense_bf16.py, impls/conv_bf16.py)
_BF16_NEEDS = {"dense": "N must be a multiple of 16 and K even, with a constant weight, on a "
                        "target with +avx512bf16",
               "conv": "groups 1, no dilation, NCHW, a constant weight, on a target with "
                       "+avx512bf16"}


def _describe_target(t: dict) -> str:
    """A tuning log's ``target`` entry as the user names it: ``vta --config PRESET``, the
    LLVM target string with its CPU, or the GPU device."""
    out = t.get("target", "?")
    if "config" in t:
        out += f" --config {t['config']}"
    if t.get("cpu") and t["cpu"] not in out:
        out += f" (CPU {t['cpu']})"
    if t.get("device"):
        out += f" ({t['device']})"
    return out


def _echo_tuning(cm) -> None:
    tuning = cm.stats.get("tuning") or {}
    if tuning and tuning["logs"]:
        by = tuning["by_log"]
        sibling = "".join(f"; {n} from {cpu}" for cpu, n in tuning.get("sibling", {}).items())
        if sibling:
            sibling += f" (same ISA class: {tuning['sibling_class']})"
        click.echo(f"  tuning: {tuning['covered']} of {plural(tuning['workloads'], 'tunable workload')}"
                   " covered: " + ", ".join(f"{by[p]} by {p}" for p in tuning["logs"]) + sibling)
    for path, targets in tuning.get("other_targets", {}).get("logs", {}).items():
        click.echo(f"  tuning: {path} holds records for "
                   f"{', '.join(_describe_target(t) for t in targets)} only; this build is for "
                   f"{', '.join(_describe_target(t) for t in tuning['other_targets']['build'])}:"
                   " compile for the log's target (--target, --config) or tune for this one")
    if tuning.get("other_shapes"):
        click.echo(f"  tuning: the log's {', '.join(tuning['other_shapes'])} records are for "
                   "other shapes: tune with the same --input-shape (and --config) as this "
                   "build")
    if "layouts" in tuning:
        from compiler.graph.passes.assign_layout import describe_layouts
        click.echo(f"  layouts: the graph tuner's choice, {describe_layouts(tuning['layouts'])}, "
                   f"{plural(cm.stats['layout_transforms'], 'layout transform')}")


def _echo_io(cm) -> None:
    if cm.variants:
        times = cm.stats.get("variants", {})
        names = ", ".join(f"{v['name']} (LLVM {times.get(v['name'], {}).get('llvm_s') or 0:.1f} s)"
                          for v in cm.variants)
        click.echo(f"  CPU variants: {names}: kernels, plan and parameters per CPU; the loader "
                   "picks the best this machine runs")
    for i in cm.graph_json["inputs"]:
        click.echo(f"  input  {i['name']}: {i['dtype']}{i['shape']}")
    for o in cm.graph_json["outputs"]:
        click.echo(f"  output {o['name']}: {o['dtype']}{o['shape']}")


def _check_output_folder(output: str) -> None:
    """-o may name a new folder or an earlier module (replaced), never another folder."""
    from compiler.graph_lower.module_file import check_destination
    try:
        check_destination(output)
    except ValueError as e:
        raise click.ClickException(f"-o/--output {e}") from None


#: suffixes of model and data files: an -o ending in one is a slip, not a module folder name
_NOT_MODULE_SUFFIXES = (".onnx", ".pt", ".pt2", ".pth", ".npz", ".npy")


def _refuse_model_suffix(output: str) -> None:
    """-o names the module folder to write; refuse one named like a model or data file (it
    would become a folder called ``model.onnx``), suggesting the same name with .vtamod."""
    from pathlib import Path
    p = Path(output)
    if p.suffix.lower() in _NOT_MODULE_SUFFIXES:
        raise click.ClickException(f"-o/--output {output}: ends in {p.suffix}, a model or data "
                                   "file's suffix, but -o names the module folder to write; "
                                   f"use e.g. -o {p.with_suffix('.vtamod')}")


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


def _placement(preset, kind, clock_mhz, cpu_gmacs, cycle_source, force, cpu_target):
    """The CLI's placement options -> a ``Placement`` (None: the default placement)."""
    from compiler.quant.placement import PlacementError
    from driver.placement import cost_placement
    if kind == "supported" and (clock_mhz is not None or cpu_gmacs is not None):
        raise click.UsageError("--clock-mhz and --cpu-gmacs apply to --placement cost only")
    if kind == "supported" and not force:
        return None
    try:
        place, line = cost_placement(preset, kind=kind, clock_mhz=clock_mhz, cycles=cycle_source,
                                     cpu_gmacs=cpu_gmacs, force=force, cpu_target=cpu_target)
    except PlacementError as e:
        raise click.ClickException(str(e)) from None
    if kind == "cost":
        click.echo(line)
    return place


def _compile_vta(model, output, preset, calib_path, scale, shapes, per_channel, cpu_target,
                 placement, quiet, tuning_log=None):
    from compiler import build_model
    from compiler.frontend import import_model

    start = time.perf_counter()
    # a dynamic batch defaults to 1, as for the CPU targets; other dynamic dimensions fail
    graph, params = import_model(model, input_shapes=shapes)
    calib = _calibration(graph, calib_path, scale)
    cm = build_model(graph, params=params, target="vta", config=preset, calib=calib,
                     per_channel=per_channel, cpu_target=cpu_target, tuning_log=tuning_log,
                     progress=None if quiet else _progress,
                     **({"placement": placement} if placement is not None else {}))
    cm.save(output)
    st = cm.stats
    click.echo(f"wrote {output}: {st['quantized_nodes']} quantized nodes, {len(st['vta_nodes'])} "
               f"on the accelerator ({st['config']}), compiled in "
               f"{time.perf_counter() - start:.1f} s")
    if st["placement"]:
        from compiler.quant.placement import Decision, format_table
        for line in format_table([Decision(**d) for d in st["placement"]]):
            click.echo(line)
    for n in st["vta_nodes"]:
        lshift = f" la {n['la']} lb {n['lb']}" if "la" in n else ""
        sh = n["shift"]
        sh = f"{min(sh)}..{max(sh)} per channel" if isinstance(sh, list) else sh
        mult = ""
        if "mult" in n:   # a QDQ model's scale ratio: pre-shift, multiplier, rounding shift
            m = n["mult"]
            m = f"{min(m)}..{max(m)} per channel" if isinstance(m, list) else m
            mult = f" x {m} >> {n['post']} (pre-shift approximation: error <= {n['err']} LSB)"
        zero = f" + zero point {n['zero']}" if "zero" in n else ""
        click.echo(f"  vta  {n['op']:<7} {n['name']}: int8{n['shape']}{lshift} shift "
                   f"{sh}{mult}{zero}{' relu' if n['relu'] else ''}")
    _echo_tuning(cm)
    _echo_io(cm)


def _compile_int8_cpu(model, output, target, calib_path, scale, shapes, per_channel, quiet):
    from compiler import build_model
    from compiler.frontend import import_model

    start = time.perf_counter()
    graph, params = import_model(model, input_shapes=shapes)
    cm = build_model(graph, params=params, target=target, quantize="int8",
                     calib=_calibration(graph, calib_path, scale), per_channel=per_channel,
                     progress=None if quiet else _progress)
    cm.save(output)
    st = cm.stats
    click.echo(f"wrote {output}: int8 on the CPU ({st['int8_path']} kernels), "
               f"{plural(st['kernels'], 'kernel')} for {plural(st['calls'], 'call')}, compiled "
               f"in {time.perf_counter() - start:.1f} s")
    _echo_io(cm)


def _calibration(graph, calib_path, scale):
    """input name -> calibration samples from ``--calibrate`` (None: none given, a QDQ model's
    own scales, or seeded samples: build_model warns, shown as a warning: line)."""
    import numpy as np

    from compiler.quant.calibration import check_calibration
    from compiler.quant.qdq import is_qdq
    calib = None
    hinted = False
    if calib_path:
        arrays = read_npz(calib_path, "--calibrate",
                          "an array named after the input, or 'images'")  # .npy / pickles
        calib = {}
        for i in graph.inputs:
            keys = list(dict.fromkeys((i.name, "images", "x", "calib")))
            key = next((k for k in keys if k in arrays), None)
            if key is None:
                raise click.ClickException(
                    f"--calibrate {calib_path}: no array for input {i.name!r} (looked for "
                    f"{', '.join(map(repr, keys))}; it has {', '.join(arrays) or 'no arrays'}); "
                    f"save the samples with np.savez(..., {i.name}=samples)")
            try:
                check_calibration(f"--calibrate {calib_path}: array {key!r}", arrays[key],
                                  tuple(i.shape))
            except ValueError as e:
                raise click.ClickException(f"{e} (input {i.name!r})") from None
            a = arrays[key]
            # float inputs are scaled (--calibrate-scale); token ids and masks stay as they are
            floating = np.issubdtype(np.dtype(i.dtype), np.floating)
            calib[i.name] = a.astype(np.float32) * np.float32(scale) if floating else a
            if floating and not hinted and scale_left_default("calibrate_scale") and looks_unscaled(a):
                hinted = True   # one line, however many inputs
                click.echo(f"warning: --calibrate {calib_path}: array {key!r} holds {a.dtype} "
                           f"values ({a.min()}..{a.max()}) for float input {i.name!r}, used "
                           f"as they are; {scale_hint('--calibrate-scale')}", err=True)
    elif is_qdq(graph):
        click.echo("QDQ model: quantized at its own scales (no calibration)", err=True)
    # else build_model warns (RandomCalibrationWarning), shown as one warning: line
    return calib
