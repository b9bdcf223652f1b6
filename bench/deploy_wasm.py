"""ResNet-18 as WebAssembly in Node against onnxruntime-web, with the native x86-64 module beside it.

Model: ResNet-18 (``tests/models/builders.py``, seeded random weights, 1000 classes),
batch 1, ``--size`` x ``--size`` (224 by default), from one ONNX file:

* ours: ``compiler.graph_lower.web.build_web`` (the AOT entry compiled for wasm32 with
  SIMD128, linked by wasm-ld; default schedules, 128-bit vectors), run by
  ``driver/web/vta_runtime.mjs``;
* reference: onnxruntime-web (npm, ``driver/web/package.json``) on the same ONNX file,
  its wasm backend, one thread, its SIMD build, graph optimisations on;

both in ONE Node process (``bench/deploy_wasm.mjs``): a warm-up each, then
``--rounds`` alternating rounds of ``--repeat`` runs; the best run counts (the machine
is shared; the least disturbed run is the fairest figure for both), the median is
printed too. Beside them: the native x86-64 AOT module (``executor="aot"``) on one
thread (``OMP_NUM_THREADS=1``, as the wasm runs) in this process, best of the same.

Bar (issue 21): wasm latency <= 1.0x onnxruntime-web's. The last line is one JSON
object of the figures. ``bench/deploy.py`` calls :func:`wasm_figures` and adds them to
its own line.

Run: ``.venv/bin/python bench/deploy_wasm.py [--size 224]`` (needs node, wasm-ld and
``cd driver/web && npm ci``).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)

from timing import timed  # noqa: E402

NODE_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "deploy_wasm.mjs")
#: seconds the Node measurement may take
NODE_TIMEOUT_S = 1800


def missing_tools() -> "str | None":
    """Why the wasm figures cannot be measured here (naming the package), or None."""
    if shutil.which("node") is None:
        return "node is not installed (Debian package 'nodejs')"
    if not os.path.isdir(os.path.join(ROOT, "driver", "web", "node_modules", "onnxruntime-web")):
        return "npm package 'onnxruntime-web' is not installed (cd driver/web && npm ci)"
    return None


def wasm_figures(onnx_path: str, size: int, rounds: int = 3, repeat: int = 5) -> dict:
    """Latency (ms) of the ONNX model as our wasm module and in onnxruntime-web, in one
    Node process (module docstring); ``{"wasm_best_ms", "wasm_median_ms", "ortweb_best_ms",
    "ortweb_median_ms", "wasm_over_ortweb_latency_ratio", "wasm_ortweb_max_abs_diff",
    "wasm_bytes"}``.

    Raises:
        SystemExit: Node failed (its stderr) or a tool is missing.
    """
    import numpy as np

    from compiler.graph_lower.web import build_web

    why = missing_tools()
    if why:
        raise SystemExit(f"the wasm figures need {why}")
    with tempfile.TemporaryDirectory(prefix="bench_wasm_") as tmp:
        wasm = os.path.join(tmp, "model.wasm")
        with open(wasm, "wb") as f:
            f.write(build_web(onnx_path))
        x = os.path.join(tmp, "x.bin")
        np.random.default_rng(0).standard_normal((1, 3, size, size)).astype("<f4").tofile(x)
        proc = subprocess.run(["node", NODE_SCRIPT, wasm, onnx_path, x, str(rounds), str(repeat)],
                              capture_output=True, text=True, timeout=NODE_TIMEOUT_S)
        if proc.returncode != 0:
            raise SystemExit(f"the Node measurement failed:\n{proc.stderr}")
        doc = json.loads(proc.stdout.strip().splitlines()[-1])
        nbytes = os.path.getsize(wasm)
    return {"wasm_best_ms": doc["vta"]["best_ms"], "wasm_median_ms": doc["vta"]["median_ms"],
            "ortweb_best_ms": doc["ort"]["best_ms"], "ortweb_median_ms": doc["ort"]["median_ms"],
            "wasm_over_ortweb_latency_ratio": doc["vta"]["best_ms"] / doc["ort"]["best_ms"],
            "wasm_ortweb_max_abs_diff": doc["max_abs_diff"], "wasm_bytes": nbytes,
            "ortweb_version": doc["ort_version"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    os.environ["OMP_NUM_THREADS"] = "1"         # before the first module loads libgomp
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")

    import numpy as np
    import onnx

    from compiler.build_model import build_model
    from driver.runtime import load_module
    from tests.models import builders

    with tempfile.TemporaryDirectory(prefix="bench_deploy_wasm_") as tmp:
        onnx_path = os.path.join(tmp, "resnet18.onnx")
        onnx.save(builders.build_resnet18(size=args.size), onnx_path)
        fig = wasm_figures(onnx_path, args.size, args.rounds, args.repeat)
        native = load_module(build_model(onnx_path, executor="aot"))
        x = np.random.default_rng(0).standard_normal((1, 3, args.size, args.size)).astype(np.float32)
        native(x)
        t = [s for _ in range(args.rounds) for s in timed(native.run, args.repeat)]
    native_best, native_median = 1e3 * min(t), 1e3 * float(np.median(t))
    print(f"wasm (Node)        best {fig['wasm_best_ms']:.1f} ms, median {fig['wasm_median_ms']:.1f} ms")
    print(f"onnxruntime-web    best {fig['ortweb_best_ms']:.1f} ms, median {fig['ortweb_median_ms']:.1f} ms")
    print(f"native x86-64 AOT  best {native_best:.1f} ms, median {native_median:.1f} ms (1 thread)")
    print(f"wasm / onnxruntime-web: {fig['wasm_over_ortweb_latency_ratio']:.2f}x "
          f"(bar <= 1.0); outputs differ by at most {fig['wasm_ortweb_max_abs_diff']:.2g}")
    print(json.dumps({"model": "resnet18", "size": args.size, "batch": 1, "threads": 1, **fig,
                      "native_aot_1thread_best_ms": native_best,
                      "native_aot_1thread_median_ms": native_median,
                      "bar_wasm_latency_le_ortweb": fig["wasm_over_ortweb_latency_ratio"] <= 1.0}))


if __name__ == "__main__":
    main()
