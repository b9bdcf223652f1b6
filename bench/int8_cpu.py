"""Int8 on the CPU: this project against onnxruntime (and OpenVINO if installed), same run, 1 thread.

Models (``tests/models/builders.py``, seeded random weights): ResNet-18 and MobileNetV2 at
batch 1, ``--size`` x ``--size`` (224 by default). Calibration: ``--calib`` seeded
standard-normal inputs, the same for everyone.

For each model, timed in alternating rounds (``--rounds`` x ``--repeat`` runs, best run
counts; medians printed too):

- ours fp32: ``build_model(model)``;
- the QDQ model: onnxruntime's ``quant_pre_process`` (its recommended preparation: shape
  inference, batch-norm folding), then ``quantize_static`` (QDQ, per-channel int8 weights,
  int8 activations with ``ActivationSymmetric``: zero points 0, what ``compiler.quant.qdq``
  imports) on the calibration inputs;
- ours int8: ``build_model(qdq_model, target="llvm", quantize="int8")``: the QDQ model at
  its own scales, convs and dense layers int8 x int8 -> int32 on VNNI where the CPU has it
  (``compiler.quant.kernels_x86``), onnxruntime's float32 requantization fused
  (``compiler.quant.ort_requant``);
- ours bf16: ``build_model(model, dtype="bfloat16")`` (bf16 weights and activations, fp32
  accumulation, on AVX512-BF16 where the CPU has it);
- onnxruntime fp32, and int8 (the same QDQ model);
- OpenVINO, when ``openvino`` is importable: fp32 (``INFERENCE_PRECISION_HINT`` f32), bf16
  (the fp32 model, hint bf16, where the CPU reports BF16) and int8 (the same QDQ model,
  hint f32 so that only its quantized parts leave fp32).

Accuracy: cosine similarity of our int8 output to onnxruntime's int8 output (the issue's
bar: >= 0.999), of each int8 output to the fp32 one, and of each bf16 output to fp32.

The machine's load average is printed first: on a shared machine the figures are rough;
``*_cpu_ms`` (the process's CPU time per run, best) waits for no other process and is the
steadier figure there. The last line is one JSON object of the figures (``*_ms``: wall
milliseconds, ``*_cpu_ms``: CPU milliseconds, ``*_cos``: cosine).

Run: ``.venv/bin/python bench/int8_cpu.py [--size 224] [--models resnet18,mobilenet_v2]``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

os.environ["OMP_NUM_THREADS"] = "1"            # before libgomp starts: one thread for all
os.environ.setdefault("OMP_WAIT_POLICY", "passive")


ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)


def cosine(a, b) -> float:
    import numpy as np
    a, b = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def timed_cpu(fn, repeat: int) -> "tuple[list, list]":
    """(wall seconds, process CPU seconds) of each of ``repeat`` calls of ``fn`` after
    two warm-up calls: on a loaded machine the CPU time (one thread everywhere)
    waits for no other process and is the steadier figure."""
    import time
    fn()
    fn()
    wall, cpu = [], []
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        fn()
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - t)
    return wall, cpu


def quantize_qdq(src: str, dst: str, iname: str, calib) -> None:
    """onnxruntime's pre-processing, then its static QDQ quantization: per-channel weights,
    symmetric int8 activations, calibrated on ``calib`` (its advisory warnings silenced)."""
    import logging
    logging.getLogger().setLevel(logging.ERROR)
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                          quantize_static)
    from onnxruntime.quantization.shape_inference import quant_pre_process
    pre = dst + ".pre.onnx"
    quant_pre_process(src, pre)

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter([{iname: c[None]} for c in calib])

        def get_next(self):
            return next(self.it, None)
    quantize_static(pre, dst, Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                    extra_options={"ActivationSymmetric": True})


def ort_session(path: str):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads, so.inter_op_num_threads = 1, 1
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


#: OpenVINO run -> (which model file, INFERENCE_PRECISION_HINT)
OPENVINO_RUNS = {"fp32": ("fp32", "f32"), "bf16": ("fp32", "bf16"), "int8": ("qdq", "f32")}


def openvino_runners(paths: dict, iname: str):
    """name -> callable(x) for OpenVINO fp32 / bf16 / int8 at 1 thread (``paths``: model
    file per ``"fp32"``/``"qdq"``); bf16 only where the CPU reports BF16; {} when
    ``openvino`` is not installed."""
    try:
        import openvino as ov
    except ImportError:
        print("openvino not installed (pip install openvino): its figures are left out")
        return {}
    core = ov.Core()
    caps = core.get_property("CPU", "OPTIMIZATION_CAPABILITIES")
    out = {}
    for tag, (model, hint) in OPENVINO_RUNS.items():
        if hint == "bf16" and "BF16" not in caps:
            continue
        cm = core.compile_model(paths[model], "CPU", {"INFERENCE_NUM_THREADS": 1,
                                                      "INFERENCE_PRECISION_HINT": hint})
        req = cm.create_infer_request()
        out[f"openvino_{tag}"] = (lambda x, req=req: req.infer({iname: x})[0])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--calib", type=int, default=8, help="calibration inputs (seeded)")
    ap.add_argument("--models", default="resnet18,mobilenet_v2")
    args = ap.parse_args()

    import numpy as np
    import onnx

    from compiler import build_model
    from driver.runtime import load_module, num_threads
    from tests.models import builders

    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on "
          f"{os.cpu_count()} CPUs; batch 1, {args.size}x{args.size}, 1 thread for all")
    figures = {"size": args.size, "threads": 1, "load_avg_1min": round(load[0], 2)}
    makers = {"resnet18": builders.build_resnet18, "mobilenet_v2": builders.build_mobilenet_v2}
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory(prefix="bench_int8_") as tmp:
        for name in args.models.split(","):
            model = makers[name](args.size)
            fp32 = os.path.join(tmp, f"{name}.onnx")
            qdq = os.path.join(tmp, f"{name}_qdq.onnx")
            onnx.save(model, fp32)
            iname = model.graph.input[0].name
            shape = (1, 3, args.size, args.size)
            calib = rng.standard_normal((args.calib,) + shape[1:]).astype(np.float32)
            quantize_qdq(fp32, qdq, iname, calib)
            x = rng.standard_normal(shape).astype(np.float32)

            ours32 = load_module(build_model(fp32))
            cm8 = build_model(qdq, target="llvm", quantize="int8")
            ours8 = load_module(cm8)
            ours16 = load_module(build_model(fp32, dtype="bfloat16"))
            assert num_threads() == 1, "libgomp started before OMP_NUM_THREADS was set"
            s32, s8 = ort_session(fp32), ort_session(qdq)
            runs = {"ours_fp32": lambda: ours32(x)[0], "ours_int8": lambda: ours8(x)[0],
                    "ours_bf16": lambda: ours16(x)[0],
                    "onnxruntime_fp32": lambda: s32.run(None, {iname: x})[0],
                    "onnxruntime_int8": lambda: s8.run(None, {iname: x})[0]}
            for tag, fn in openvino_runners({"fp32": fp32, "qdq": qdq}, iname).items():
                runs[tag] = (lambda fn=fn: fn(x))
            outs = {tag: np.asarray(fn()) for tag, fn in runs.items()}
            times = {tag: [] for tag in runs}
            cpu = {tag: [] for tag in runs}
            for _ in range(args.rounds):
                for tag, fn in runs.items():
                    wall, used = timed_cpu(fn, args.repeat)
                    times[tag] += wall
                    cpu[tag] += used
            cos = {"ours_int8_vs_onnxruntime_int8": cosine(outs["ours_int8"], outs["onnxruntime_int8"]),
                   "ours_int8_vs_fp32": cosine(outs["ours_int8"], outs["onnxruntime_fp32"]),
                   "onnxruntime_int8_vs_fp32": cosine(outs["onnxruntime_int8"], outs["onnxruntime_fp32"])}
            for tag in ("ours_bf16", "openvino_bf16", "openvino_int8"):
                if tag in outs:
                    cos[f"{tag}_vs_fp32"] = cosine(outs[tag], outs["onnxruntime_fp32"])
            print(f"{name} (our int8 path: {cm8.stats['int8_path']})")
            for tag, ts in times.items():
                best, med = min(ts) * 1e3, float(np.median(ts)) * 1e3
                print(f"  {tag:18s} {best:8.2f} ms  (median {med:.2f}, CPU {min(cpu[tag]) * 1e3:.2f})")
                figures[f"{name}_{tag}_ms"] = round(best, 3)
                figures[f"{name}_{tag}_cpu_ms"] = round(min(cpu[tag]) * 1e3, 3)
            ratio = figures[f"{name}_ours_int8_ms"] / figures[f"{name}_onnxruntime_int8_ms"]
            figures[f"{name}_int8_ratio_vs_onnxruntime"] = round(ratio, 3)
            figures[f"{name}_int8_cpu_ratio_vs_onnxruntime"] = round(
                figures[f"{name}_ours_int8_cpu_ms"] / figures[f"{name}_onnxruntime_int8_cpu_ms"], 3)
            for k, v in cos.items():
                print(f"  cosine {k:32s} {v:.6f}")
                figures[f"{name}_{k}_cos"] = round(v, 6)
            print(f"  ours int8 / onnxruntime int8: {ratio:.2f}x")
            for prec in ("int8", "bf16"):
                if f"{name}_openvino_{prec}_ms" in figures:
                    r = figures[f"{name}_ours_{prec}_ms"] / figures[f"{name}_openvino_{prec}_ms"]
                    figures[f"{name}_{prec}_ratio_vs_openvino"] = round(r, 3)
                    print(f"  ours {prec} / OpenVINO {prec}: {r:.2f}x")
    if "resnet18_int8_ratio_vs_onnxruntime" in figures:
        ok = (figures["resnet18_int8_ratio_vs_onnxruntime"] <= 1.0
              and figures["resnet18_ours_int8_vs_onnxruntime_int8_cos"] >= 0.999)
        print(f"bars (ResNet-18 int8 <= 1.0x onnxruntime int8, cosine >= 0.999): "
              f"{'met' if ok else 'NOT met'}")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
