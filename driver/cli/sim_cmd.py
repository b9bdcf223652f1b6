"""``vta sim``: run a program file on a simulator and print its counters."""
from __future__ import annotations

import json
import warnings

import click
import numpy as np

from driver.cli.errors import friendly, load_program, output_path, read_npz
from sim import cycle, functional
from sim.errors import UnwrittenReadWarning
from vta_hw.program import Program


def _check(prog: Program, dram: np.ndarray, ref: dict) -> list[str]:
    """Compare buffers with the arrays of an .npz file (name -> array); returns mismatch lines."""
    bad = []
    for name, want in ref.items():
        got = prog.read(dram, name)
        if got.shape != want.shape:
            bad.append(f"buffer {name}: shape {_shape(want.shape)} != {_shape(got.shape)}")
        elif not np.array_equal(got, want):
            bad.append(f"buffer {name}: {int(np.count_nonzero(got != want))} of {want.size} "
                       "values differ")
    return bad


def _shape(shape) -> str:
    return "(" + ",".join(str(d) for d in shape) + ")"


def _format_value(v) -> str:
    if isinstance(v, dict):
        return "  ".join(f"{k}={x}" for k, x in v.items()) or "-"
    return str(v)


def _check_plot_format(path: str) -> None:
    """--plot's suffix must be an image format matplotlib writes (checked before simulating)."""
    import os

    from matplotlib.figure import Figure
    kinds = Figure().canvas.get_supported_filetypes()
    ext = os.path.splitext(path)[1].lstrip(".").lower()
    if ext not in kinds:
        what = f"suffix .{ext} is not an image format" if ext else "the name has no suffix"
        raise click.ClickException(f"--plot {path}: {what}; name the file .png (or "
                                   f"{', '.join('.' + k for k in sorted(kinds) if k != 'png')})")


@click.command()
@click.argument("program", type=click.Path(dir_okay=False))
@click.option("--model", type=click.Choice(["cycle", "functional"]), default="cycle",
              show_default=True,
              help="cycle: values plus cycles, stalls, utilization and DRAM bandwidth, equal "
                   "to the RTL's (sim.cycle); functional: values and event counters only")
@click.option("--json", "as_json", is_flag=True, help="print one JSON object")
@click.option("--check", "ref", type=click.Path(dir_okay=False),
              help="an .npz of expected buffers; exit 1 if any differs")
@click.option("--trace", "trace_path", type=click.Path(dir_okay=False),
              help="(cycle model) write a Chrome trace (Perfetto, chrome://tracing)")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False),
              help="(cycle model) draw the utilization timeline to an image (PNG)")
@friendly
def sim(program: str, model: str, as_json: bool, ref: str | None, trace_path: str | None,
        plot_path: str | None) -> None:
    """Run PROGRAM on a simulator and print its report."""
    if model != "cycle" and (trace_path or plot_path):
        raise click.UsageError("--trace and --plot need --model cycle")
    output_path(trace_path, "--trace")
    output_path(plot_path, "--plot")
    if plot_path:
        _check_plot_format(plot_path)
    prog = load_program(program)
    ref_arrays = (read_npz(ref, "--check", "expected buffers by name (e.g. C=...)")
                  if ref else None)
    for name in ref_arrays or ():
        try:
            prog.buffer(name)  # an unknown name is refused before simulating
        except KeyError as e:
            raise click.ClickException(f"--check {ref}: {e.args[0]}") from None
    head = {"program": program, "config": prog.config.name, "model": model}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UnwrittenReadWarning)
        result = (cycle.run(prog, trace=bool(trace_path or plot_path)) if model == "cycle"
                  else functional.run(prog))
    notes = [str(w.message) for w in caught if issubclass(w.category, UnwrittenReadWarning)]
    for w in caught:  # others go on as they came
        if not issubclass(w.category, UnwrittenReadWarning):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    if model == "cycle":
        report = {**head, **result.to_dict()}
        text = result.report()
    else:
        report = {**head, "counters": result.counters.to_dict(),
                  "leftover_tokens": result.leftover_tokens}
        report["cycles"] = None    # the functional model has no clock: "not timed", not 0
        text = "\n".join([f"  {'cycles':<28} not timed (the functional model counts events; "
                          "--model cycle times them)"]
                         + [f"  {k:<28} {_format_value(v)}" for k, v in report["counters"].items()])
    report["leftover_tokens"] = {k: v for k, v in report["leftover_tokens"].items() if v}
    report["warnings"] = notes
    mismatches = _check(prog, result.dram, ref_arrays) if ref else []
    if ref:
        report["check"] = {"reference": ref, "ok": not mismatches, "mismatches": mismatches}
    if trace_path:
        result.trace.write_chrome(trace_path)
    if plot_path:
        result.trace.plot(plot_path, title=f"{program} on {prog.config.name}: "
                                           f"{result.cycles} cycles")
    if as_json:
        click.echo(json.dumps(report))
    else:
        click.echo(f"{program}: config {prog.config.name}, {model} model")
        click.echo(text)
        for q, n in report["leftover_tokens"].items():
            click.echo(f"  warning: {n} token(s) left in queue {q}")
        for note in notes:
            click.echo(f"  warning: {note}")
        for label, path in (("trace", trace_path), ("plot", plot_path)):
            if path:
                click.echo(f"{label}: {path}")
        if ref:
            click.echo("check: " + ("all buffers match the reference" if not mismatches
                                    else "; ".join(mismatches)))
    if mismatches:
        raise SystemExit(1)
