"""PyTorch models: our routes against torch eager and torch.compile (inductor), same run.

Models (``tests/models/torch_nets.py``, seeded weights): ResNet-18 and MobileNetV2 at
batch 1, ``--size`` x ``--size`` (224 by default), and a two-layer transformer encoder
(dim 64, 4 heads) over ``--seq`` tokens (128 by default).

Routes, each timed from a torch tensor in to a torch tensor out:

- ``export``: ``build_model(model, example_inputs=(x,))`` (torch.export -> our graph -> CPU
  kernels) run through ``driver.runtime``, input and output shared by DLPack (no copies);
- ``vta_compile``: ``torch.compile(model, backend="vta")``;
- ``eager``: the model itself under ``torch.no_grad()``;
- ``inductor``: ``torch.compile(model)`` (its default backend; a fresh cache folder, so
  the compile time is a cold one).

Compile time: seconds from the model to the first output (for ``export``: build and
load; for the torch.compile routes: the first call). Latency: the best of ``--repeat``
runs after two warm-up runs, in ``--rounds`` alternating rounds (the machine may be
shared: the least disturbed run is the fairest figure for every route), and the median.

Each thread count (``--threads``, default 1,2) runs in its own child process, since
libgomp reads ``OMP_NUM_THREADS`` once (torch gets ``torch.set_num_threads``). The last
line is one JSON object; every name carries its unit (``_ms``, ``_s``) and thread count.

Run: ``.venv/bin/python bench/torch_models.py [--size 224] [--seq 128] [--threads 1,2]``.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from timing import timed

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)
from vta_hw.tool import ToolError, run_tool  # noqa: E402

#: Wall-time limit of one thread count's child run, seconds.
CHILD_LIMIT_S = 3600.0
ROUTES = ("export", "vta_compile", "eager", "inductor")


def _routes(model, x):
    """route -> (compile seconds, zero-argument function returning a torch tensor)."""
    import torch
    from compiler import build_model
    from driver.runtime import load_module
    out = {}
    t = time.perf_counter()
    m = load_module(build_model(model, example_inputs=(x,)))

    def ours():
        m.set_input(0, x)
        m.run()
        return torch.from_dlpack(m.get_output(0, copy=False))
    ours()
    out["export"] = (time.perf_counter() - t, ours)
    for route, backend in (("vta_compile", "vta"), ("inductor", "inductor")):
        torch._dynamo.reset()
        fn = torch.compile(model, backend=backend)
        t = time.perf_counter()
        fn(x)
        out[route] = (time.perf_counter() - t, lambda fn=fn: fn(x))
    out["eager"] = (0.0, lambda: model(x))
    return out


def child(args) -> dict:
    """Every model and route at ``args.threads`` threads: the figures."""
    import numpy as np
    import torch
    from driver.runtime import num_threads
    from tests.models import torch_nets
    torch.set_num_threads(args.threads)
    figures = {}
    for name in args.models.split(","):
        model = torch_nets.make(name)
        x = torch_nets.example_input(name, args.seq if name == "encoder" else args.size)
        with torch.no_grad():
            ref = model(x)
            routes = _routes(model, x)
            assert num_threads() == args.threads, "libgomp started before OMP_NUM_THREADS was set"
            times = {r: [] for r in routes}
            for _ in range(args.rounds):
                for r, (_, fn) in routes.items():
                    times[r] += timed(fn, args.repeat)
            line = []
            for r, (compile_s, fn) in routes.items():
                err = float((fn() - ref).abs().max() / ref.abs().max())
                best, med = min(times[r]) * 1e3, float(np.median(times[r])) * 1e3
                key = f"{name}_{r}_{args.threads}t"
                figures.update({f"{key}_ms": round(best, 3), f"{key}_median_ms": round(med, 3),
                                f"{key}_max_rel_err": err})
                if r != "eager":
                    figures[f"{key}_compile_s"] = round(compile_s, 2)
                line.append(f"{r} {best:7.2f} ms" + (f" (compile {compile_s:5.1f} s)" if r != "eager" else ""))
            print(f"{name:13s} {args.threads} thread(s): " + ", ".join(line), file=sys.stderr)
    return figures


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--threads", default="1,2", help="thread counts, comma-separated (parent); "
                    "one count (child)")
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--models", default="resnet18,mobilenet_v2,encoder")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        args.threads = int(args.threads)
        print(json.dumps(child(args)))
        return
    figures = {"size": args.size, "seq": args.seq}
    with tempfile.TemporaryDirectory(prefix="bench_torch_") as cache:
        for n in args.threads.split(","):
            path = os.pathsep.join(filter(None, (ROOT, os.environ.get("PYTHONPATH"))))
            env = dict(os.environ, OMP_NUM_THREADS=n, PYTHONPATH=path,
                       TORCHINDUCTOR_CACHE_DIR=os.path.join(cache, n))
            env.setdefault("OMP_WAIT_POLICY", "passive")
            cmd = [sys.executable, __file__, "--child", "--threads", n, "--size", str(args.size),
                   "--seq", str(args.seq), "--repeat", str(args.repeat), "--rounds",
                   str(args.rounds), "--models", args.models]
            try:
                proc = run_tool(cmd, timeout_s=CHILD_LIMIT_S, what=f"the {n}-thread run",
                                stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT)
            except ToolError as e:
                raise SystemExit(str(e)) from None
            if proc.returncode:
                raise SystemExit(f"the {n}-thread run failed (exit {proc.returncode})")
            figures.update(json.loads(proc.stdout.strip().splitlines()[-1]))
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
