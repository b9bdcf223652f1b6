"""A folder of ONNX models through both routes: CPU against onnxruntime, and the accelerator.

For every ``*.onnx`` in ``--models`` (default: a few small seeded models built here with
``tests/models/builders.py`` and ``onnx.helper``, no download: ResNet-18 and MobileNetV2
at ``--size``, a small VGG-style CNN with big dense layers, a BERT-style encoder layer),
dynamic dimensions set to 1, it prints:

- CPU: ``build_model(target="llvm")`` compile seconds; latency (fastest of ``--repeat``
  runs after warm-up, ``timing.timed``) against onnxruntime's on the same inputs, the
  ratio, and the max error relative to max|onnxruntime|;
- accelerator: ``build_model(target="vta", placement=--placement)`` (smoke calibration on
  seeded inputs) compile seconds, the quantized nodes on the accelerator and on the CPU,
  then on the cycle model (``load_module(device="tsim")``) the cycles and GEMM
  utilization of one inference and the top-1 agreement with fp32 onnxruntime over
  ``--samples`` seeded inputs (argmax of the first output's last axis, per row).

Inputs: standard normal for float inputs, 0/1 for integer and bool ones (ids, masks).
A model that fails a route prints the error and goes on. The last line is one JSON
object (units in the names).

Usage: ``python bench/model_zoo.py [--models DIR] [--size 64] [--placement cost]``.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import onnx  # noqa: E402

from timing import timed  # noqa: E402


def default_models(folder: Path, size: int) -> list[Path]:
    """Write the default models (module docstring) into ``folder``; their paths."""
    from tests.models.builders import (OnnxBuilder, _io, build_bert_layer, build_mobilenet_v2,
                                       build_resnet18)
    b = OnnxBuilder(3)
    x = b.node("Relu", [b.conv("input", 3, 32, 3, bias=True)])
    x = b.node("MaxPool", [b.node("Relu", [b.conv(x, 32, 64, 3, bias=True)])],
               kernel_shape=[2, 2], strides=[2, 2])
    x = b.node("Relu", [b.dense(b.node("Flatten", [x]), 64 * (size // 2) ** 2 // 16, 1024)])
    vgg = b.model([_io("input", [1, 3, size // 4, size // 4])], [_io(b.dense(x, 1024, 100), None)], 13)
    models = {"resnet18": build_resnet18(size, classes=100), "vgg_small": vgg,
              "mobilenet_v2": build_mobilenet_v2(size, classes=100),
              "bert_layer": build_bert_layer(seq=16, hidden=128, heads=2, ffn=512)}
    out = []
    for name, m in models.items():
        onnx.save(m, str(folder / f"{name}.onnx"))
        out.append(folder / f"{name}.onnx")
    return out


def _inputs(model: onnx.ModelProto, rng) -> dict:
    from onnx import helper
    inits = {i.name for i in model.graph.initializer}
    feeds = {}
    for i in model.graph.input:
        if i.name in inits:
            continue
        t = i.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else 1
                 for d in t.shape.dim]
        dt = helper.tensor_dtype_to_np_dtype(t.elem_type)
        feeds[i.name] = (rng.standard_normal(shape).astype(dt) if np.issubdtype(dt, np.floating)
                         else rng.integers(0, 2, shape).astype(dt))
    return feeds


def run_model(path: Path, a) -> dict:
    import onnxruntime as ort
    from compiler import build_model
    from driver.runtime import load_module
    model = onnx.load(str(path))
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    samples = [_inputs(model, rng) for _ in range(a.samples)]
    names = [i.name for i in sess.get_inputs()]
    shapes = {n: list(v.shape) for n, v in samples[0].items()}
    row = {"model": path.stem}
    # CPU route
    t0 = time.perf_counter()
    cm = build_model(model, target="llvm", input_shapes=shapes)
    row["cpu_compile_s"] = round(time.perf_counter() - t0, 2)
    m = load_module(cm)
    feed = [samples[0][n] for n in names]
    ours = min(timed(lambda: m(*feed), a.repeat))
    theirs = min(timed(lambda: sess.run(None, samples[0]), a.repeat))
    got, ref = m(*feed)[0], sess.run(None, samples[0])[0]
    row.update(cpu_latency_ms=round(ours * 1e3, 3), ort_latency_ms=round(theirs * 1e3, 3),
               cpu_vs_ort=round(ours / theirs, 2),
               cpu_max_rel_err=float(np.abs(got - ref).max() / max(np.abs(ref).max(), 1e-30)))
    # accelerator route
    t0 = time.perf_counter()
    opts = {}
    if a.placement == "cost":
        from driver.placement import cost_placement
        opts["placement"], _ = cost_placement(a.config, cycles="estimate", cpu_gmacs=a.cpu_gmacs)
    cm = build_model(model, target="vta", config=a.config, input_shapes=shapes, **opts)
    row["vta_compile_s"] = round(time.perf_counter() - t0, 2)
    nodes = [n for n in cm.plan.qgraph.nodes if n.op.value != "input"]
    row["nodes_vta"] = sum(n.target == "vta" for n in nodes)
    row["nodes_cpu"] = len(nodes) - row["nodes_vta"]
    with tempfile.TemporaryDirectory() as d:
        mv = load_module(cm.save(str(Path(d) / "m.vtamod")), device="tsim")
        agree = 0
        for k, s in enumerate(samples):
            out = mv(*[s[n] for n in names])[0]
            if k == 0:
                st = mv.stats()
                row["cycles"] = st["cycles"]
                row["gemm_utilization"] = round(st["gemm_utilization"] or 0.0, 4)
            ref = sess.run(None, s)[0]
            agree += float(np.mean(np.argmax(out.reshape(-1, out.shape[-1]), -1)
                                   == np.argmax(ref.reshape(-1, ref.shape[-1]), -1)))
    row["top1_agreement"] = round(agree / len(samples), 3)
    return row


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=None, metavar="DIR",
                    help="folder of .onnx files (default: build the small ones here)")
    ap.add_argument("--size", type=int, default=64, help="image size of the default CNNs")
    ap.add_argument("--config", default=None, help="accelerator preset (default preset)")
    ap.add_argument("--placement", choices=["supported", "cost"], default="supported")
    ap.add_argument("--cpu-gmacs", type=float, default=None,
                    help="--placement cost: stated host (default: kernels timed here)")
    ap.add_argument("--samples", type=int, default=4, help="inputs for the top-1 agreement")
    ap.add_argument("--repeat", type=int, default=10)
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        paths = (sorted(Path(a.models).glob("*.onnx")) if a.models
                 else default_models(Path(tmp), a.size))
        rows = []
        for p in paths:
            try:
                r = run_model(p, a)
            except Exception as e:   # noqa: BLE001 - a bench reports a failing model and goes on
                r = {"model": p.stem, "error": f"{type(e).__name__}: {str(e)[:200]}"}
                print(f"{p.stem}: FAILED {r['error']}")
            else:
                print(f"{r['model']}: CPU compile {r['cpu_compile_s']} s, {r['cpu_latency_ms']} ms "
                      f"vs onnxruntime {r['ort_latency_ms']} ms ({r['cpu_vs_ort']}x, max rel err "
                      f"{r['cpu_max_rel_err']:.1e}); vta compile {r['vta_compile_s']} s, "
                      f"{r['nodes_vta']} nodes on the accelerator / {r['nodes_cpu']} on the CPU, "
                      f"{r['cycles']} cycles, GEMM utilization {r['gemm_utilization']:.1%}, "
                      f"top-1 agreement {r['top1_agreement']:.0%}")
            rows.append(r)
    out = {"bench": "model_zoo", "placement": a.placement, "models": rows}
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
