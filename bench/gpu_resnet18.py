"""ResNet-18 (224x224, batch 1, seeded weights from tests/models/builders.py) on a GPU:
``build_model(..., target="cuda")`` + ``driver.gpu_runtime`` against torch eager (cuDNN) on the
same GPU with the same weights. Prints per-step lines, then one JSON line of figures.

torch runs the ONNX graph op by op through ``torch.nn.functional`` (no torch.compile,
no CUDA graphs): "torch eager". It is timed twice: with torch's defaults (cuDNN may
use TF32 for convolutions) and with TF32 off (fp32 like ours).

    python bench/gpu_resnet18.py [--repeat 50] [--size 224]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def torch_eager(model, device):
    """A callable running the ONNX ``model`` op by op with torch.nn.functional on ``device``."""
    import torch
    import torch.nn.functional as F
    from onnx import numpy_helper
    g = model.graph
    w = {t.name: torch.from_numpy(numpy_helper.to_array(t).copy()).to(device) for t in g.initializer}

    def attrs(n):
        from onnx import helper
        return {a.name: helper.get_attribute_value(a) for a in n.attribute}

    def run(x):
        env = dict(w)
        env[g.input[0].name] = x
        for n in g.node:
            a, i = attrs(n), [env[k] for k in n.input if k]
            op = n.op_type
            if op == "Conv":
                p = a.get("pads", [0, 0, 0, 0])
                y = F.conv2d(i[0], i[1], i[2] if len(i) > 2 else None, a.get("strides", 1),
                             (p[0], p[1]), a.get("dilations", 1), a.get("group", 1))
            elif op == "BatchNormalization":
                y = F.batch_norm(i[0], i[3], i[4], i[1], i[2], False, 0.0, a.get("epsilon", 1e-5))
            elif op == "Relu":
                y = F.relu(i[0])
            elif op == "MaxPool":
                p = a.get("pads", [0, 0, 0, 0])
                y = F.max_pool2d(i[0], a["kernel_shape"], a.get("strides"), (p[0], p[1]))
            elif op == "Add":
                y = i[0] + i[1]
            elif op == "GlobalAveragePool":
                y = F.adaptive_avg_pool2d(i[0], 1)
            elif op == "Flatten":
                y = torch.flatten(i[0], a.get("axis", 1))
            elif op == "Gemm":
                y = F.linear(i[0], i[1] if a.get("transB", 0) else i[1].t(),
                             i[2] if len(i) > 2 else None)
            elif op == "MatMul":
                y = i[0] @ i[1]
            else:
                raise NotImplementedError(op)
            env[n.output[0]] = y
        return env[g.output[0].name]
    return run


def time_torch(fn, x, repeat):
    import torch
    with torch.no_grad():
        for _ in range(5):
            fn(x)
        torch.cuda.synchronize()
        ts = []
        for _ in range(repeat):
            t = time.perf_counter()
            fn(x)
            torch.cuda.synchronize()
            ts.append(time.perf_counter() - t)
    return float(np.median(ts))


def check_models() -> dict:
    """Max relative error of the digits CNN and a BERT layer (cuda) against onnxruntime."""
    import onnx
    import onnxruntime as ort
    from compiler.build_model import build_model
    from driver.runtime import load_module
    from tests.models import builders
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    out = {}
    models = {"digits": onnx.load(os.path.join(root, "examples", "digits", "digits_cnn.onnx")),
              "bert_layer": builders.build_bert_layer()}
    for name, model in models.items():
        try:
            with tempfile.TemporaryDirectory() as tmp:
                m = load_module(build_model(model, target="cuda").save(os.path.join(tmp, "m")))
                (iname, shape, dtype), = m.input_info()
                x = np.random.default_rng(0).standard_normal(shape).astype(dtype)
                ours = m(x)[0]
                sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
                ref = sess.run(None, {iname: x})[0]
                out[f"{name}_max_rel_err"] = float(np.abs(ours - ref).max() / np.abs(ref).max())
                out[f"{name}_ms"] = round(m.benchmark(repeat=20)["median_s"] * 1e3, 3)
        except Exception as exc:
            out[f"{name}_error"] = repr(exc)[:300]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=50)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--check-models", action="store_true",
                    help="also run the digits CNN and a BERT layer with --target cuda vs onnxruntime")
    args = ap.parse_args()
    from compiler.build_model import build_model
    from driver.runtime import load_module
    from tests.models import builders

    model = builders.build_resnet18(args.size)
    t = time.perf_counter()
    cm = build_model(model, target="cuda")
    compile_s = time.perf_counter() - t
    print(f"compiled: {cm.stats['calls']} launches, {compile_s:.1f} s", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        m = load_module(cm.save(os.path.join(tmp, "r18.vtamod")))
        x = np.random.default_rng(0).standard_normal((1, 3, args.size, args.size)).astype("float32")
        ours = m(x)[0]
        bench = m.benchmark(repeat=args.repeat)
        # the same launches without the CUDA graph (Python launch overhead included)
        m.dev.graph_exec = False
        nograph = m.benchmark(repeat=args.repeat)
        prof = sorted(m.profile(repeat=3), key=lambda p: -p[2])
        for k, node, sec in prof[:12]:
            print(f"  {sec * 1e3:8.3f} ms  {k}  ({node})")
        print(f"  sum of synchronised launches: {sum(p[2] for p in prof) * 1e3:.3f} ms", flush=True)
    ours_ms = bench["median_s"] * 1e3
    fig = {"model": f"resnet18_{args.size}_b1", "ours_ms": round(ours_ms, 3),
           "ours_cuda_graph": bench["cuda_graph"],
           "ours_no_graph_ms": round(nograph["median_s"] * 1e3, 3),
           "launches": cm.stats["calls"], "compile_s": round(compile_s, 2)}
    print(f"ours: {fig['ours_ms']} ms (CUDA graph), {fig['ours_no_graph_ms']} ms (plain launches)",
          flush=True)
    try:
        import torch
        dev = torch.device("cuda")
        fn = torch_eager(model, dev)
        xt = torch.from_numpy(x).to(dev)
        with torch.no_grad():
            ref = fn(xt).cpu().numpy()
        torch_default = time_torch(fn, xt, args.repeat)
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
        with torch.no_grad():
            ref32 = fn(xt).cpu().numpy()
        torch_fp32 = time_torch(fn, xt, args.repeat)
        fig.update({"gpu": torch.cuda.get_device_name(0),
                    "torch_eager_ms": round(torch_default * 1e3, 3),
                    "torch_eager_fp32_ms": round(torch_fp32 * 1e3, 3),
                    "ratio_vs_torch_eager": round(ours_ms / (torch_default * 1e3), 3),
                    "ratio_vs_torch_eager_fp32": round(ours_ms / (torch_fp32 * 1e3), 3),
                    "max_rel_err_vs_torch_fp32": float(np.abs(ours - ref32).max() / np.abs(ref32).max()),
                    "max_rel_err_vs_torch_default": float(np.abs(ours - ref).max() / np.abs(ref).max())})
    except Exception as exc:   # report our figures even without torch
        fig["torch_error"] = repr(exc)[:300]
    if args.check_models:
        fig.update(check_models())
    print(json.dumps(fig))


if __name__ == "__main__":
    main()
