"""``vta tune``: search schedules for a model's layers into a JSON-lines tuning log
(``driver.tune.session.tune_model``); ``--distill`` keeps a log's best records."""
from __future__ import annotations

import math

import click

from driver.cli.errors import check_input_shapes, check_log_input, friendly, output_path, plural
from driver.cli.options import check_config, check_target


def _fmt(cost: float, unit: str) -> str:
    if not math.isfinite(cost):
        return "failed"
    return f"{cost * 1e3:.3f} ms" if unit == "s" else f"{cost:,.0f} cycles"


def _check_log_output(output: str, verb: str) -> None:
    """Refuse, before any work, an -o that exists but is not a tuning log (the model itself,
    an .npz...): writing would ruin it. Suggests a new ``.jsonl`` name beside it."""
    from pathlib import Path

    from compiler.autotune.record import NotATuningLogError, check_log
    try:
        check_log(output, first_line=True)
    except NotATuningLogError as e:
        p = Path(output)
        new = p.with_suffix(".jsonl")
        if new == p or new.exists():
            new = p.with_name(p.stem + "_tuning.jsonl")
        raise click.ClickException(f"-o/--output {e}; vta tune {verb} -o, which would damage "
                                   f"this file: name a new log, e.g. -o {new}") from None


def _infra_options(f):
    """``--build-jobs`` and ``--transfer-log``: how candidates are built and what the cost
    model starts from."""
    f = click.option("--transfer-log", "transfer_logs", multiple=True, metavar="LOG",
                     type=click.Path(dir_okay=False),
                     help="pre-train the cost model on this earlier tuning log (any model, "
                          "any CPU; repeatable) and measure early its best points for this "
                          "model's workloads tuned on other targets; the -o log's own "
                          "records always count")(f)
    return click.option("--build-jobs", type=click.IntRange(0), metavar="N",
                        help="CPU candidates built at once before they are measured one at a "
                             "time [default: min(cores, 4); 0: build each in the measuring "
                             "worker]")(f)


@click.command("tune")
@click.argument("model", type=click.Path(dir_okay=False))
@click.option("-o", "--output", required=True, metavar="LOG",
              help="tuning log (JSON lines) to append to; a rerun continues from it")
@click.option("--target", default="llvm", show_default=True, callback=check_target,
              help="llvm (this CPU, timed in a worker process), vta (the accelerator's "
                   "conv2d/dense tilings, by cycles on the cycle model), or opencl / cuda (the "
                   "GPU kernels, timed on this machine's device)")
@click.option("--trials", default=16, show_default=True, type=click.IntRange(1),
              help="measured candidates per task at most")
@click.option("--time-budget", type=click.FloatRange(min=0, min_open=True), metavar="MIN",
              help="minutes the search and the layout stage may take (strict: rounds shrink "
                   "to the time left); finding the tasks before, and checking the chosen "
                   "points and timing the tuned model after, come on top (printed)")
@click.option("--strategy", type=click.Choice(["xgb", "random"]), default="xgb",
              show_default=True, help="cost-model-guided search or plain random search")
@click.option("--scheduler", metavar="tcp://HOST:8786",
              help="measure on this Dask cluster instead of this machine")
@click.option("--threads", type=click.IntRange(1), help="CPU threads per measurement")
@click.option("--timeout", default=60.0, show_default=True, type=click.FloatRange(min=0, min_open=True),
              help="seconds a candidate may take to build and run before it counts as failed")
@click.option("--config", "preset", default=None, metavar="PRESET", callback=check_config,
              help="--target vta: accelerator preset (default preset)")
@click.option("--input-shape", "input_shapes", multiple=True, metavar="NAME:1x3x224x224",
              callback=check_input_shapes,
              help="static shape of an input (repeatable)")
@click.option("--plot", type=click.Path(dir_okay=False), metavar="FILE.png",
              help="draw best-so-far against trials for each task")
@click.option("--distill", is_flag=True,
              help="MODEL is a tuning log: write its best record per workload to -o")
@click.option("--no-graph-tuning", "no_graph", is_flag=True,
              help="--target llvm: skip the layout stage (each conv's channel block chosen "
                   "over the whole graph from measured layer and transform costs)")
@click.option("--quiet", is_flag=True, help="no progress bars")
@_infra_options
@friendly
def tune_cmd(model, output, target, trials, time_budget, strategy, scheduler, threads, timeout,
             preset, input_shapes, plot, distill, no_graph, quiet, build_jobs, transfer_logs):
    """Search the schedules of MODEL's layers for --target and append every trial to the
    tuning log -o; build with it by `vta compile --tuning-log LOG`.

    \b
    Example:
      vta tune model.onnx --trials 32 -o tuning.jsonl --plot tuning.png
      vta tune other.onnx --time-budget 10 --transfer-log tuning.jsonl -o other.jsonl
      vta tune model.onnx --target vta --trials 16 -o vta_tuning.jsonl
      vta tune model.onnx --target opencl --trials 16 -o gpu_tuning.jsonl
      vta tune model.onnx --scheduler tcp://10.0.0.5:8786 -o tuning.jsonl
      vta tune tuning.jsonl --distill -o best.jsonl
      vta compile model.onnx --tuning-log tuning.jsonl -o out/model.vtamod
    """
    output_path(output, "-o/--output")
    output_path(plot, "--plot")
    _check_log_output(output, "replaces" if distill else "appends to")
    for log in transfer_logs:
        check_log_input(log, "--transfer-log")
    if distill:
        from compiler.autotune.record import distill as keep_best
        n = keep_best(model, output)
        click.echo(f"wrote {output}: the best of {plural(n, 'workload')} from {model}")
        return
    from compiler.frontend import parse_input_shapes
    from compiler.graph.passes.assign_layout import describe_layouts
    from driver.tune.session import tune_model
    bars: list = []

    def on_tasks(tasks):
        click.echo(f"{plural(len(tasks), 'task')} to tune for {target}")
        if quiet:
            return
        from tqdm import tqdm
        for i, t in enumerate(tasks):
            bars.append(tqdm(total=min(trials, t.space.size), position=i, leave=True,
                             desc=f"[{i + 1}/{len(tasks)}] {(t.name or t.key)[:28]}",
                             unit="trial", disable=None))

    def on_trial(i, rec, best):
        if bars:
            bars[i].update(1)
            bars[i].set_postfix_str(f"best {_fmt(best, unit)}")

    unit = "cycles" if target.split()[0] == "vta" else "s"
    try:
        s = tune_model(model, output, target=target, trials=trials,
                       time_budget_s=time_budget * 60 if time_budget else None,
                       strategy=strategy, scheduler=scheduler,
                       input_shapes=parse_input_shapes(input_shapes), vta_config=preset,
                       timeout=timeout, threads=threads, on_tasks=on_tasks, on_trial=on_trial,
                       build_jobs=build_jobs, transfer_logs=transfer_logs,
                       graph_tuning=not no_graph)
    except ImportError as e:          # the tune extra (xgboost, distributed) is missing
        raise click.ClickException(str(e)) from None
    for b in bars:
        b.close()
    for r in s.results:
        click.echo(f"  {(r.task.name or r.task.key)[:40]:<40} x{r.task.weight}  default "
                   f"{_fmt(r.default_cost, unit)}  tuned {_fmt(r.best_cost, unit)}  "
                   f"({plural(r.trials, 'trial')})")
    for name, why in s.checks:
        click.echo(f"warning: the chosen schedule of {name} failed its check: {why}", err=True)
    if s.layout is not None:
        e = s.layout.estimate
        click.echo(f"graph tuning: {describe_layouts(s.layout.layouts)}, "
                   f"{plural(e['transforms'], 'layout transform')}; estimated "
                   f"{_fmt(e['dp_s'], 's')} (per-layer best layouts {_fmt(e['per_layer_best_s'], 's')}"
                   f", all NCHW {_fmt(e['default_s'], 's')})")
    click.echo(f"sum of tuned per-task times: {_fmt(s.tasks_tuned, s.unit)} (default "
               f"{_fmt(s.tasks_default, s.unit)})"
               + (f"; measured end-to-end latency: {_fmt(s.end_to_end_s, 's')}"
                  if s.end_to_end_s is not None else ""))
    phases = {"extract": "finding the tasks", "search": "search and checks",
              "layout": "layout stage", "latency": "tuned build and latency"}
    click.echo("time: " + ", ".join(f"{phases[k]} {v:.1f} s" for k, v in s.seconds.items())
               + (f" (budget {time_budget * 60:g} s: search and layout stage)"
                  if time_budget else ""))
    click.echo(f"wrote {output}")
    if plot:
        from driver.tune.plot import plot_curves
        click.echo(f"wrote {plot_curves(s.results, plot, s.unit)}")
