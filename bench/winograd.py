"""Winograd bench (issue 15): 3x3 stride-1 convs direct vs F(2x2,3x3) vs F(4x4,3x3), and
ResNet-18 end to end with Winograd on its 3x3 stride-1 convs, against onnxruntime.

* ``layers``: ResNet-18's four 3x3 stride-1 conv shapes (C = O, pads 1), each built three times
  (``algorithm`` pinned to direct, winograd2, winograd4 by ``compiler.autotune.pin``) and
  once untuned (``default``: the space's default point);
  latency is the best of ``--rounds`` alternating rounds of ``--repeat`` runs, onnxruntime's
  in the same rounds (at 1 thread the calling thread's CPU time, ``timing.timed_thread_cpu``,
  which a loaded machine disturbs far less; wall time at more threads); max error relative
  to max|onnxruntime| printed (fp32: <= 1e-4).
* ``resnet18``: ResNet-18 (``tests/models/builders.py``, batch 1, fp32, ``--size``) built
  direct, with each Winograd variant on every 3x3 stride-1 conv, and untuned, against
  onnxruntime.

Each thread count of ``--threads`` runs in a child process (``OMP_NUM_THREADS`` is read
when libgomp starts; onnxruntime gets the same ``intra_op_num_threads``). The load
average is printed before and after: figures from a loaded machine are not figures.
The last line is one JSON object of every figure (units in the names).

Run: ``.venv/bin/python bench/winograd.py [--threads 1,2] [--size 224]``; smoke run:
``--size 64 --repeat 3 --rounds 1 --threads 1``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

from timing import child_figures, timed, timed_thread_cpu

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)

ALGORITHMS = ("direct", "winograd2", "winograd4")
#: the variants built: each algorithm pinned, and the untuned default (the space's default
#: point: the per-shape choice of compiler/graph_lower/impls/conv.py)
VARIANTS = ALGORITHMS + ("default",)
#: (name, channels, spatial size): ResNet-18's four 3x3 stride-1 conv shapes
LAYERS = [("conv56x56x64", 64, 56), ("conv28x28x128", 128, 28), ("conv14x14x256", 256, 14),
          ("conv7x7x512", 512, 7)]


def _ort(path, threads):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def _conv_model(C, H):
    import numpy as np
    import onnx
    from onnx import TensorProto, helper
    w = np.random.default_rng(0).standard_normal((C, C, 3, 3)).astype(np.float32) * 0.1
    node = helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[3, 3], pads=[1] * 4)
    g = helper.make_graph([node], "conv", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [1, C, H, H])], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, None)], [onnx.numpy_helper.from_array(w, "w")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def _variants(path, tmp, threads, repeat, rounds):
    """{algorithm: (best s, max rel err vs onnxruntime)} and onnxruntime's best s."""
    import numpy as np

    from compiler import build_model
    from compiler.autotune.pin import pin_log
    from driver.runtime import load_module
    sess = _ort(path, threads)
    mods = {}
    for alg in ALGORITHMS:
        log = os.path.join(tmp, f"{os.path.basename(path)}.{alg}.jsonl")
        pin_log(path, log, algorithm=alg)
        mods[alg] = load_module(build_model(path, tuning_log=log))
    mods["default"] = load_module(build_model(path))
    (iname, ishape, idtype), = mods["direct"].input_info()
    x = np.random.default_rng(0).standard_normal(ishape).astype(idtype)
    ref = sess.run(None, {iname: x})[0]
    errs = {}
    for alg, m in mods.items():
        m.set_input(iname, x)
        m.run()
        errs[alg] = float(np.abs(m.get_output(0) - ref).max() / np.abs(ref).max())
    times = {alg: [] for alg in VARIANTS}
    theirs = []
    timed_fn = timed_thread_cpu if threads == 1 else timed
    for _ in range(rounds):
        for alg, m in mods.items():
            times[alg] += timed_fn(m.run, repeat)
        theirs += timed_fn(lambda: sess.run(None, {iname: x}), repeat)
    return {alg: (min(times[alg]), errs[alg]) for alg in VARIANTS}, min(theirs)


def one_thread_count(a, threads: int) -> dict:
    import onnx

    from tests.models import builders
    fig: dict = {}
    parts = a.parts.split(",")
    with tempfile.TemporaryDirectory(prefix="bench_wino_") as tmp:
        cases = []
        if "layers" in parts:
            for name, C, H in LAYERS:
                cases.append((name, _conv_model(C, H), 1e6, "us", a.repeat * 10))
        if "resnet18" in parts:
            cases.append((f"resnet18_{a.size}", builders.build_resnet18(a.size), 1e3, "ms", a.repeat))
        for name, model, scale, unit, repeat in cases:
            path = os.path.join(tmp, f"{name}.onnx")
            onnx.save(model, path)
            res, ort_s = _variants(path, tmp, threads, repeat, a.rounds)
            pre = f"{name}_t{threads}"
            fig[f"{pre}_ort_{unit}"] = round(ort_s * scale, 3)
            for alg, (t, err) in res.items():
                print(f"{name:16s} {threads}T {alg:10s} {t * scale:9.2f} {unit}  "
                      f"vs onnxruntime {t / ort_s:5.2f}x  vs direct {res['direct'][0] / t:5.2f}x "
                      f"speed-up  (max rel err {err:.1e})", flush=True)
                fig.update({f"{pre}_{alg}_{unit}": round(t * scale, 3),
                            f"{pre}_{alg}_ratio_vs_ort": round(t / ort_s, 3),
                            f"{pre}_{alg}_max_rel_err": err})
            best = min(ALGORITHMS, key=lambda k: res[k][0] if res[k][1] <= 1e-4 else float("inf"))
            fig[f"{pre}_best_algorithm"] = best
    return fig


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", default="1,2")
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--parts", default="layers,resnet18")
    p.add_argument("--child", type=int, default=0, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.child:
        print(json.dumps(one_thread_count(a, a.child)))
        return
    print(f"load average before: {os.getloadavg()}", flush=True)
    fig: dict = {"size": a.size}
    for t in (int(s) for s in a.threads.split(",")):
        argv = [sys.executable, __file__, "--child", str(t), "--size", str(a.size), "--repeat",
                str(a.repeat), "--rounds", str(a.rounds), "--parts", a.parts]
        fig.update(child_figures(argv, t))
    load = os.getloadavg()
    print(f"load average after: {load}", flush=True)
    fig["load_avg_1min_after"] = round(load[0], 2)
    print(json.dumps(fig))


if __name__ == "__main__":
    main()
