"""Auto-tuning bench (issue 15): tuned CPU models against onnxruntime (and OpenVINO), odd
layers, a tuning session from an empty log, the accelerator's ResNet-18 convs on the cycle
model, and the fp32 matmul against numpy. Every figure is a ratio measured in one run.

Parts (``--parts``, comma-separated; all by default):

* ``models``: ResNet-18 and MobileNetV2 (``tests/models/builders.py``, batch 1, fp32,
  ``--size``), built with ``--tuning-log`` (if given) and the shipped logs
  (``compiler/autotune/logs/``), at each of ``--threads`` (each thread count in a child
  process: ``OMP_NUM_THREADS`` is read when libgomp starts). Latency is the best of
  ``--rounds`` alternating rounds of ``--repeat`` runs, ours and onnxruntime's
  (``intra_op_num_threads``), and OpenVINO's (``INFERENCE_PRECISION_HINT=f32``) when
  the ``openvino`` package is installed. Output agreement with onnxruntime is
  checked (max error relative to max|expected|, must be <= 1e-4). At 1 thread also
  the thread's CPU time of ours and onnxruntime's (``_cpu`` figures).
  Bars: ResNet-18 <= 0.9x onnxruntime, MobileNetV2 <= 1.1x, at every thread count.
* ``layers``: single convs of shapes no shipped log covers (24, 40 and 255 output
  channels, small spatial sizes, 1x1): each layer's latency against onnxruntime's
  (bar: each <= 1.5x).
* ``session``: a tuning session of ResNet-18 from an empty log, ``--tune-minutes`` with
  the cost model and the same with random search (1 thread), interleaved in
  ``--tune-slices`` slices with the same seeds; prints trials per minute, the share of
  the time spent choosing candidates and the seconds a trial took to build and
  measure (which differ with the candidates chosen: a Winograd F(4x4) one builds for
  seconds), the end-to-end ratio after tuning (bar: <= 1.0x onnxruntime) and how many trials the
  cost model needed to reach random search's final best (summed over tasks).
* ``vta``: the ResNet-18 layers the accelerator runs (default preset), tuned on the
  cycle model with ``--vta-trials`` per task: cycles before and after of the convs (bar:
  <= 7.0 M) and, apart, of the dense layer (``bench/vta_tune.py``'s ``totals``).
* ``matmul``: fp32 products of ``--matmul-shapes`` (default 1024^3; also e.g. 512,
  2048x2048x256) through ``build_model``, a graph MatMul with a constant right operand
  (the ``matmul_dense`` implementation) and one of two activations (``batch_matmul``, B
  packed in the kernel), against numpy (OpenBLAS limited to the same threads by
  threadpoolctl), interleaved rounds, at each thread count (bar for 1024^3: >= 1.1x
  numpy); GFLOP/s and the build time of the constant-B module; at 1 thread also by the
  thread's CPU time (``_cpu`` figures: steady on a loaded machine; the models part reports
  them too). Unset ``OPENBLAS_CORETYPE`` / ``OPENBLAS_L2_SIZE``: they can pin OpenBLAS to
  a slower kernel, which would flatter the ratio (a warning says so).

The load average is printed before and after (timings on a loaded machine are not
figures). The last line is one JSON object of every figure (units in the names).

Run on a quiet machine: ``.venv/bin/python bench/tune_models.py [--threads 1,2]
[--tuning-log LOG] [--tune-minutes 30] [--parts models,layers,session,vta,matmul]``.
Smoke run: ``--size 64 --repeat 2 --rounds 1 --tune-minutes 0.5 --tune-slices 2 --vta-trials 2``.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile

from timing import child_figures, timed, timed_thread_cpu

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)

#: odd layers: (name, C, O, H, kernel, stride)
LAYERS = [("conv_c24_56", 24, 24, 56, 3, 1), ("conv_c40_28", 40, 40, 28, 3, 1),
          ("conv_o255_13", 256, 255, 13, 1, 1), ("conv_small_7", 64, 64, 7, 3, 1),
          ("conv1x1_c24_o144", 24, 144, 28, 1, 1), ("conv1x1_s2", 64, 128, 28, 1, 2),
          ("conv_o21_14", 64, 21, 14, 3, 1), ("conv1x1_o75_7", 96, 75, 7, 1, 1)]


def _ort(path, threads):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def _openvino(path, threads):
    try:
        import openvino as ov
    except ImportError:
        return None
    core = ov.Core()
    return core.compile_model(path, "CPU", {"INFERENCE_PRECISION_HINT": "f32",
                                            "INFERENCE_NUM_THREADS": str(threads)})


def _compare(path, log, threads, repeat, rounds):
    """(ours best s, onnxruntime best s, openvino best s or None, max rel err, the build's
    tuning stats, and at 1 thread (ours, onnxruntime) best thread CPU s, else None)."""
    import numpy as np

    from compiler import build_model
    from driver.runtime import load_module
    cm = build_model(path, tuning_log=log)
    m = load_module(cm)
    (iname, ishape, idtype), = m.input_info()
    x = np.random.default_rng(0).standard_normal(ishape).astype(idtype)
    m.set_input(iname, x)
    m.run()
    sess = _ort(path, threads)
    ref = sess.run(None, {iname: x})[0]
    err = float(np.abs(m.get_output(0) - ref).max() / np.abs(ref).max())
    ov = _openvino(path, threads)
    ours, theirs, vino, cpu = [], [], [], ([], [])
    for _ in range(rounds):
        ours += timed(m.run, repeat)
        theirs += timed(lambda: sess.run(None, {iname: x}), repeat)
        if ov is not None:
            vino += timed(lambda: ov([x]), repeat)
        if threads == 1:
            cpu[0].extend(timed_thread_cpu(m.run, repeat))
            cpu[1].extend(timed_thread_cpu(lambda: sess.run(None, {iname: x}), repeat))
    return (min(ours), min(theirs), (min(vino) if vino else None), err, cm.stats.get("tuning", {}),
            (min(cpu[0]), min(cpu[1])) if threads == 1 else None)


def _conv_model(C, O, H, k, s):
    import numpy as np
    import onnx
    from onnx import TensorProto, helper
    w = np.random.default_rng(0).standard_normal((O, C, k, k)).astype(np.float32) * 0.1
    node = helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[k, k], strides=[s, s],
                            pads=[k // 2] * 4)
    g = helper.make_graph([node], "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                         [1, C, H, H])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [onnx.numpy_helper.from_array(w, "w")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def one_thread_count(a, threads: int) -> dict:
    """The models / layers / matmul parts at ``threads`` (run in a child process)."""
    import numpy as np
    import onnx

    from tests.models import builders
    fig: dict = {}
    parts = a.parts.split(",")
    with tempfile.TemporaryDirectory(prefix="bench_tune_") as tmp:
        if "models" in parts:
            for name, build in (("resnet18", builders.build_resnet18),
                                ("mobilenet_v2", builders.build_mobilenet_v2)):
                path = os.path.join(tmp, f"{name}.onnx")
                onnx.save(build(a.size), path)
                o, r, v, err, tun, cpu = _compare(path, a.tuning_log, threads, a.repeat,
                                                  a.rounds)
                line = (f"{name:13s} {threads}T  ours {o * 1e3:8.2f} ms  onnxruntime "
                        f"{r * 1e3:8.2f} ms  ratio {o / r:5.2f}x")
                pre = f"{name}_t{threads}"
                fig.update({f"{pre}_ours_ms": round(o * 1e3, 3), f"{pre}_ort_ms": round(r * 1e3, 3),
                            f"{pre}_ratio_vs_ort": round(o / r, 3), f"{pre}_max_rel_err": err,
                            f"{pre}_tuned_workloads": tun.get("covered", 0),
                            f"{pre}_tunable_workloads": tun.get("workloads", 0)})
                if v is not None:
                    line += f"  openvino {v * 1e3:8.2f} ms  ratio {o / v:5.2f}x"
                    fig.update({f"{pre}_openvino_ms": round(v * 1e3, 3),
                                f"{pre}_ratio_vs_openvino": round(o / v, 3)})
                if cpu is not None:
                    line += f"  cpu {cpu[0] * 1e3:.2f} / {cpu[1] * 1e3:.2f} ms {cpu[0] / cpu[1]:5.2f}x"
                    fig.update({f"{pre}_ours_cpu_ms": round(cpu[0] * 1e3, 3),
                                f"{pre}_ort_cpu_ms": round(cpu[1] * 1e3, 3),
                                f"{pre}_ratio_vs_ort_cpu": round(cpu[0] / cpu[1], 3)})
                print(line + f"  (max rel err {err:.1e}; log covered {tun.get('covered', 0)} "
                      f"of {tun.get('workloads', 0)} workloads)", flush=True)
        if "layers" in parts:
            for name, C, O, H, k, s in LAYERS:
                path = os.path.join(tmp, f"{name}.onnx")
                onnx.save(_conv_model(C, O, H, k, s), path)
                o, r, _, err, _, _ = _compare(path, a.tuning_log, threads, a.repeat, a.rounds)
                print(f"{name:18s} {threads}T  ours {o * 1e6:9.1f} us  onnxruntime "
                      f"{r * 1e6:9.1f} us  ratio {o / r:5.2f}x", flush=True)
                fig[f"{name}_t{threads}_ratio_vs_ort"] = round(o / r, 3)
        if "matmul" in parts:
            fig.update(_matmul(a, threads))
    return fig


def _matmul_shapes(text: str) -> list:
    """``--matmul-shapes``: comma-separated ``N`` (N^3) or ``MxNxK`` -> [(label, M, N, K)].

    Raises:
        SystemExit: a shape that is neither (names it and the form).
    """
    out = []
    for item in text.split(","):
        dims = item.lower().split("x")
        if len(dims) not in (1, 3) or not all(d.isdigit() and int(d) > 0 for d in dims):
            raise SystemExit(f"--matmul-shapes: {item!r} must be N (an N^3 product) or MxNxK, "
                             "positive integers, e.g. 1024,2048x2048x256")
        M, N, K = (int(dims[0]),) * 3 if len(dims) == 1 else map(int, dims)
        out.append((item.lower(), M, N, K))
    return out


def _matmul(a, threads: int) -> dict:
    """fp32 ``A[M, K] @ B[K, N]`` for each of ``--matmul-shapes``: with B a constant (packed at
    compile time) and of two activations (B packed in the kernel), against numpy with
    ``threads`` OpenBLAS threads (threadpoolctl), interleaved over ``--rounds`` rounds; best
    of all calls. Also GFLOP/s (2*M*N*K / best seconds) and the constant-B module's build
    time (``build_model``: lowering, LLVM O3, link)."""
    fig = {}
    for label, M, N, K in _matmul_shapes(a.matmul_shapes):
        fig.update(_matmul_shape(a, threads, label, M, N, K))
    return fig


def _matmul_shape(a, threads: int, label: str, M: int, N: int, K: int) -> dict:
    import time

    import numpy as np
    from threadpoolctl import threadpool_limits

    from compiler import build_model
    from compiler.graph import Graph, Op, input_node, make, param_node
    from driver.runtime import load_module
    rng = np.random.default_rng(0)
    A = rng.standard_normal((M, K)).astype(np.float32)
    B = rng.standard_normal((K, N)).astype(np.float32)
    x, y = input_node("a", (M, K)), input_node("b", (K, N))
    t0 = time.perf_counter()
    cm = build_model(Graph((x,), (make(Op.MATMUL, x, param_node("b", B)),), ("y",)),
                     params={"b": B}, tuning_log=a.tuning_log)
    compile_s = time.perf_counter() - t0
    const = load_module(cm)
    act = load_module(build_model(Graph((x, y), (make(Op.MATMUL, x, y),), ("y",)),
                                  tuning_log=a.tuning_log))
    const.set_input("a", A)
    act.set_input("a", A)
    act.set_input("b", B)
    want = A @ B
    pre = f"matmul{label}"
    fig = {f"{pre}_compile_s": round(compile_s, 3)}
    for name, m in (("", const), ("_act", act)):
        m.run()
        fig[f"{pre}{name}_max_rel_err"] = float(np.abs(m.get_output(0) - want).max()
                                               / np.abs(want).max())
    out = np.empty_like(want)
    calls = {"numpy": lambda: np.matmul(A, B, out=out), "": const.run, "_act": act.run}
    # wall time; at 1 thread also the calling thread's CPU time, which other processes on
    # a loaded machine do not inflate (both libraries then run on the calling thread)
    clocks = {"": timed, "_cpu": timed_thread_cpu} if threads == 1 else {"": timed}
    times = {(c, k): [] for c in clocks for k in calls}
    with threadpool_limits(threads):
        for _ in range(a.rounds):
            for c, clock in clocks.items():
                for k, call in calls.items():
                    times[c, k] += clock(call, a.repeat)
    flop = 2.0 * M * N * K
    shape = label + ("^3" if "x" not in label else "")
    for c in clocks:
        ref = min(times[c, "numpy"])
        for name, what in (("", "B constant"), ("_act", "two activations")):
            ours = min(times[c, name])
            print(f"matmul {shape} {what:15s} {threads}T {'cpu' if c else 'wall'}  ours "
                  f"{ours * 1e3:8.2f} ms ({flop / ours / 1e9:6.1f} GFLOP/s)  numpy "
                  f"{ref * 1e3:8.2f} ms  speed-up {ref / ours:5.2f}x", flush=True)
            fig[f"{pre}{name}_t{threads}{c}_ours_ms"] = round(ours * 1e3, 3)
            fig[f"{pre}{name}_t{threads}{c}_ours_gflops"] = round(flop / ours / 1e9, 1)
            fig[f"{pre}{name}_t{threads}{c}_speedup_vs_numpy"] = round(ref / ours, 3)
        fig[f"{pre}_t{threads}{c}_numpy_ms"] = round(ref * 1e3, 3)
        fig[f"{pre}_t{threads}{c}_numpy_gflops"] = round(flop / ref / 1e9, 1)
    return fig


def session(a) -> dict:
    """ResNet-18 from empty logs: the cost model against random search with the same budget,
    ``--tune-minutes`` each, spent in ``--tune-slices`` interleaved slices (which strategy
    goes first alternates; both use the slice's seed and one runner), so a change of the
    machine's load hits both alike. Each slice resumes its strategy's log (its tasks, with
    their cached features, are kept across slices)."""
    import math
    import time

    import onnx

    from compiler.autotune import TuningLog, extract_tasks, tune
    from driver.tune import LocalRunner
    from tests.models import builders
    fig: dict = {}
    order = ("xgb", "random")
    with tempfile.TemporaryDirectory(prefix="bench_tune_s_") as tmp:
        path = os.path.join(tmp, "resnet18.onnx")
        onnx.save(builders.build_resnet18(a.size), path)
        tasks = {s: extract_tasks(path, "llvm") for s in order}
        logs = {s: TuningLog(os.path.join(tmp, f"{s}.jsonl")) for s in order}
        spent = dict.fromkeys(order, 0.0)
        res: dict = {}
        res_all: dict = {s: [] for s in order}      # every slice's results (time shares)
        slice_s = a.tune_minutes * 60 / a.tune_slices
        with LocalRunner(threads=1) as runner:
            for k in range(a.tune_slices):
                for s in (order if k % 2 == 0 else order[::-1]):
                    t0 = time.monotonic()
                    res[s] = tune(tasks[s], runner, trials=10 ** 6, log=logs[s], strategy=s,
                                  time_budget_s=slice_s, seed=k)
                    res_all[s] += res[s]
                    spent[s] += time.monotonic() - t0
        for s in order:
            trials = sum(r.trials for r in res[s])
            tuned = sum(r.task.weight * r.best_cost for r in res[s] if math.isfinite(r.best_cost))
            fig[f"session_{s}_trials_per_min"] = round(trials / (spent[s] / 60), 2)
            fig[f"session_{s}_minutes"] = round(spent[s] / 60, 2)
            fig[f"session_{s}_tasks_sum_ms"] = round(tuned * 1e3, 4)
            choose, measure = (sum(getattr(r, f) for r in res_all[s]) for f in ("choose_s",
                                                                                 "measure_s"))
            fig[f"session_{s}_choose_share"] = round(choose / spent[s], 3)
            fig[f"session_{s}_measure_s_per_trial"] = round(measure / max(trials, 1), 2)
            print(f"session {s:6s}: {trials} trials in {spent[s] / 60:.2f} min "
                  f"({trials / (spent[s] / 60):.1f}/min, {runner.build_jobs} build jobs), sum "
                  f"of tuned tasks {tuned * 1e3:.3f} ms; choosing took "
                  f"{100 * choose / spent[s]:.1f}% of the time, building and measuring "
                  f"{measure / max(trials, 1):.2f} s a trial", flush=True)
        o, r, _, err, _, _ = _compare(path, logs["xgb"].path, 1, a.repeat, a.rounds)
        fig["session_xgb_resnet18_t1_ratio_vs_ort"] = round(o / r, 3)
        print(f"  ResNet-18 after the xgb session, 1T: {o * 1e3:.2f} ms vs onnxruntime "
              f"{r * 1e3:.2f} ms: {o / r:.2f}x (max rel err {err:.1e})", flush=True)
        # trials the cost model needed to reach random search's final best, per task
        need, missed = 0, 0
        for rx, rr in zip(res["xgb"], res["random"]):
            hit = next((i + 1 for i, c in enumerate(rx.curve) if c <= rr.best_cost), None)
            need += hit if hit is not None else len(rx.curve)
            missed += hit is None and math.isfinite(rr.best_cost)
        fig["session_xgb_trials_to_random_best"] = need
        fig["session_xgb_tasks_not_reaching_random"] = missed
        fig["session_random_trials"] = sum(r.trials for r in res["random"])
        print(f"  the cost model reached random search's final best after {need} trials "
              f"(random search used {fig['session_random_trials']}; tasks where it did not: "
              f"{missed})")
        if a.keep_session_logs:
            os.makedirs(a.keep_session_logs, exist_ok=True)
            for s in order:
                shutil.copy(logs[s].path, os.path.join(a.keep_session_logs, f"{s}.jsonl"))
    return fig


def vta_part(a) -> dict:
    import onnx

    from compiler.autotune import extract_tasks, tune
    from driver.tune import CycleRunner
    from tests.models import builders
    from vta_tune import totals
    with tempfile.TemporaryDirectory(prefix="bench_tune_v_") as tmp:
        path = os.path.join(tmp, "resnet18.onnx")
        onnx.save(builders.build_resnet18(a.size), path)
        tasks = extract_tasks(path, "vta")
        res = tune(tasks, CycleRunner(), trials=a.vta_trials, strategy="xgb")
    t = totals(res)
    print(f"accelerator: {t['convs']} convs, {t['default'] / 1e6:.3f} M cycles -> "
          f"{t['tuned'] / 1e6:.3f} M tuned ({a.vta_trials} trials/task); bar <= 7.0 M: "
          f"{'met' if t['tuned'] <= 7.0e6 else 'NOT met'}; dense {t['dense_default'] / 1e3:.1f} "
          f"-> {t['dense_tuned'] / 1e3:.1f} k cycles; bit-exact: "
          f"{'all' if not t['not_exact'] else t['not_exact']}")
    return {"vta_convs": t["convs"], "vta_conv_default_mcycles": round(t["default"] / 1e6, 4),
            "vta_conv_tuned_mcycles": round(t["tuned"] / 1e6, 4),
            "vta_dense_default_kcycles": round(t["dense_default"] / 1e3, 1),
            "vta_dense_tuned_kcycles": round(t["dense_tuned"] / 1e3, 1),
            "vta_bit_exact": not t["not_exact"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tuning-log", default=None)
    ap.add_argument("--tune-minutes", type=float, default=30.0)
    ap.add_argument("--tune-slices", type=int, default=6)
    ap.add_argument("--keep-session-logs", default=None, metavar="DIR",
                    help="copy the session's two tuning logs (xgb.jsonl, random.jsonl) into DIR")
    ap.add_argument("--vta-trials", type=int, default=32)
    ap.add_argument("--matmul-shapes", default="1024",
                    help="matmul part: comma-separated N (N^3) or MxNxK, e.g. "
                    "1024,512,2048x2048x256")
    ap.add_argument("--parts", default="models,layers,session,vta,matmul")
    ap.add_argument("--child-threads", type=int, default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child_threads is not None:          # one thread count, in its own process
        print(json.dumps(one_thread_count(a, a.child_threads)))
        return
    load0 = os.getloadavg()
    print(f"load average before: {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f} "
          f"({len(os.sched_getaffinity(0))} cores)")
    fig = {"size": a.size, "load_avg_1min_before": round(load0[0], 2)}
    if "matmul" in a.parts.split(","):
        _matmul_shapes(a.matmul_shapes)          # a bad shape fails before any build
        for var in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
            if var in os.environ:
                print(f"warning: {var}={os.environ[var]} is set; numpy's matmul figure may be "
                      "off (unset it for this command)")
    per_thread = [p for p in a.parts.split(",") if p in ("models", "layers", "matmul")]
    for t in ([int(x) for x in a.threads.split(",")] if per_thread else []):
        argv = [sys.executable, __file__, "--child-threads", str(t), "--size", str(a.size),
                "--repeat", str(a.repeat), "--rounds", str(a.rounds), "--parts", ",".join(per_thread),
                "--matmul-shapes", a.matmul_shapes] + (["--tuning-log", a.tuning_log] if a.tuning_log else [])
        extra = {"PYTHONPATH": ROOT}
        fig.update(child_figures(argv, t, cwd=ROOT, env_extra=extra))
    if "session" in a.parts.split(","):
        # the session's end-to-end figure is at 1 thread; this process has not started
        # libgomp yet (every timing above ran in a child), so the setting takes effect
        os.environ["OMP_NUM_THREADS"] = "1"
        fig.update(session(a))
    if "vta" in a.parts.split(","):
        fig.update(vta_part(a))
    load1 = os.getloadavg()
    print(f"load average after: {load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f}")
    fig["load_avg_1min_after"] = round(load1[0], 2)
    print(json.dumps(fig))


if __name__ == "__main__":
    main()
