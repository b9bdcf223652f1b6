"""Int8 on the CPU: this project against onnxruntime (and OpenVINO if installed), same run, 1 thread.

Models (``tests/models/builders.py``, seeded random weights): ResNet-18 and MobileNetV2 at
batch 1, ``--size`` x ``--size`` (224 by default). Calibration: ``--calib`` seeded
standard-normal inputs, the same for everyone.

For each model, timed in alternating rounds (``--rounds`` x ``--repeat`` runs, best run
counts; medians printed too):

- ours fp32: ``build_model(model)``;
- the QDQ models, one per ``--forms`` entry (``QUANT_FORMS``): onnxruntime's
  ``quant_pre_process`` (its recommended preparation: shape inference, batch-norm folding),
  then ``quantize_static`` (QDQ, per-channel int8 weights) on the calibration inputs;
- ours int8, per form: ``build_model(qdq_model, target="llvm", quantize="int8")``: the QDQ
  model at its own scales and zero points, convs and dense layers int8 x int8 -> int32 on
  VNNI where the CPU has it (``compiler/quant/kernels/vnni.py``), onnxruntime's float32
  requantization fused (``compiler.quant.ort_requant``);
- ours bf16: ``build_model(model, dtype="bfloat16")`` (bf16 weights and activations, fp32
  accumulation, on AVX512-BF16 where the CPU has it);
- onnxruntime fp32, and int8 per form (the same QDQ model, a default session); for a form
  with int8 activations also a session with ``session.qdqisint8allowed=1`` (see below);
- OpenVINO, when ``openvino`` is importable: fp32 (``INFERENCE_PRECISION_HINT`` f32), bf16
  (the fp32 model, hint bf16, where the CPU reports BF16) and int8 (the same QDQ model,
  hint f32 so that only its quantized parts leave fp32), on the first form's QDQ model.

Forms. ``s8s8`` (the default) is what ``quantize_static`` makes with its own defaults: int8
activations at calibrated zero points, int8 weights; onnxruntime's quantization guide calls
"S8S8 with QDQ" the default setting and the first choice. On x86-64, though, onnxruntime
does not run every conv of such a model in int8: off ARM it disallows int8 activations in
its QDQ fusion (``QDQIsInt8Allowed()`` is false) and first turns each int8 Q -> DQ pair into a
uint8 one (``QDQS8ToU8Transformer``), but only where the Q feeds a single DQ
(``CheckOutputEdges(graph, node, 1)``). A tensor read by two nodes (a residual input read by a
conv and an add) keeps int8, and a conv or add whose input and output then differ in type
fails its selector's ``dt_input != dt_output`` check (``ConvNodeGroupSelector``,
``BinaryNodeGroupSelector`` in ``qdq_selectors.cc``; a conv int8 on both sides fails its
``!int8_allowed_`` check) and stays DQ -> float Conv/Add -> Q. On MobileNetV2 that is 15
of 52 convs and all 10 adds (ResNet-18: 11 of 20 convs, 5 to 8 of its 8 adds); their
float32 sums round differently from our exact int32 ones at rare ties. The session with
``session.qdqisint8allowed=1`` runs every conv and add quantized (QLinearConv/QLinearAdd,
no conversion): the all-integer reference for that form. ``u8s8`` (uint8 activations, int8
weights) is the form onnxruntime runs natively on x86-64: it fuses every conv and add of it
as is.

Accuracy: cosine similarity of our int8 output to onnxruntime's int8 output per form (the
issue's bar: >= 0.999), of each int8 output to the fp32 one, and of each bf16 output to fp32.

The machine's load average is printed first: on a shared machine the figures are rough;
``*_cpu_ms`` (the process's CPU time per run, best) waits for no other process and is the
steadier figure there. The last line is one JSON object of the figures (``*_ms``: wall
milliseconds, ``*_cpu_ms``: CPU milliseconds, ``*_cos``: cosine; int8 names carry the form).

Run: ``.venv/bin/python bench/int8_cpu.py [--size 224] [--models resnet18,mobilenet_v2]
[--forms s8s8,u8s8]``.
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


#: form -> quantize_static's activation options (weights: per-channel int8 in every form)
QUANT_FORMS = {
    "s8s8": {},                                          # quantize_static's defaults
    "u8s8": {"activation_type": "QUInt8"},               # what onnxruntime runs on x86-64
    "s8s8sym": {"extra_options": {"ActivationSymmetric": True}},   # zero points 0
}


def quantize_qdq(src: str, dst: str, iname: str, calib, form: str) -> None:
    """onnxruntime's pre-processing, then its static QDQ quantization in ``form``
    (``QUANT_FORMS``): per-channel int8 weights, calibrated on ``calib`` (its advisory
    warnings silenced)."""
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
    opts = dict(QUANT_FORMS[form])
    opts["activation_type"] = QuantType[opts.get("activation_type", "QInt8")]
    quantize_static(pre, dst, Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    weight_type=QuantType.QInt8, **opts)


def ort_session(path: str, int8_allowed: bool = False):
    """A 1-thread CPU session; ``int8_allowed``: ``session.qdqisint8allowed=1``, which
    fuses int8-activation QDQ groups as they are (onnxruntime's default off ARM is 0)."""
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads, so.inter_op_num_threads = 1, 1
    if int8_allowed:
        so.add_session_config_entry("session.qdqisint8allowed", "1")
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
    ap.add_argument("--forms", default="s8s8,u8s8",
                    help=f"QDQ forms, first one for OpenVINO ({', '.join(QUANT_FORMS)})")
    args = ap.parse_args()
    forms = args.forms.split(",")
    bad = [f for f in forms if f not in QUANT_FORMS]
    if bad:
        ap.error(f"--forms: unknown form(s) {bad}; choose from {list(QUANT_FORMS)}")

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
            onnx.save(model, fp32)
            iname = model.graph.input[0].name
            shape = (1, 3, args.size, args.size)
            calib = rng.standard_normal((args.calib,) + shape[1:]).astype(np.float32)
            x = rng.standard_normal(shape).astype(np.float32)

            ours32 = load_module(build_model(fp32))
            ours16 = load_module(build_model(fp32, dtype="bfloat16"))
            s32 = ort_session(fp32)
            runs = {"ours_fp32": lambda: ours32(x)[0], "ours_bf16": lambda: ours16(x)[0],
                    "onnxruntime_fp32": lambda: s32.run(None, {iname: x})[0]}
            qdq, paths = {}, {}
            for form in forms:
                paths[form] = os.path.join(tmp, f"{name}_{form}.onnx")
                quantize_qdq(fp32, paths[form], iname, calib, form)
                qdq[form] = build_model(paths[form], target="llvm", quantize="int8")
                sessions = {f"onnxruntime_int8_{form}": ort_session(paths[form])}
                if QUANT_FORMS[form].get("activation_type", "QInt8") == "QInt8":
                    sessions[f"onnxruntime_int8_{form}_int8allowed"] = ort_session(
                        paths[form], int8_allowed=True)
                runs[f"ours_int8_{form}"] = (lambda m=load_module(qdq[form]): m(x)[0])
                for tag, sess in sessions.items():
                    runs[tag] = (lambda sess=sess: sess.run(None, {iname: x})[0])
            assert num_threads() == 1, "libgomp started before OMP_NUM_THREADS was set"
            for tag, fn in openvino_runners({"fp32": fp32, "qdq": paths[forms[0]]}, iname).items():
                runs[tag] = (lambda fn=fn: fn(x))
            outs = {tag: np.asarray(fn()) for tag, fn in runs.items()}
            times = {tag: [] for tag in runs}
            cpu = {tag: [] for tag in runs}
            for _ in range(args.rounds):
                for tag, fn in runs.items():
                    wall, used = timed_cpu(fn, args.repeat)
                    times[tag] += wall
                    cpu[tag] += used
            ref = outs["onnxruntime_fp32"]
            cos = {}
            for form in forms:
                ours = outs[f"ours_int8_{form}"]
                for tag in (f"onnxruntime_int8_{form}", f"onnxruntime_int8_{form}_int8allowed"):
                    if tag in outs:
                        cos[f"ours_int8_{form}_vs_{tag}"] = cosine(ours, outs[tag])
                cos[f"ours_int8_{form}_vs_fp32"] = cosine(ours, ref)
                cos[f"onnxruntime_int8_{form}_vs_fp32"] = cosine(outs[f"onnxruntime_int8_{form}"], ref)
            for tag in ("ours_bf16", "openvino_bf16", "openvino_int8"):
                if tag in outs:
                    cos[f"{tag}_vs_fp32"] = cosine(outs[tag], ref)
            paths_used = {f: qdq[f].stats["int8_path"] for f in forms}
            print(f"{name} (our int8 path: {paths_used})")
            for tag, ts in times.items():
                best, med = min(ts) * 1e3, float(np.median(ts)) * 1e3
                print(f"  {tag:34s} {best:8.2f} ms  (median {med:.2f}, CPU {min(cpu[tag]) * 1e3:.2f})")
                figures[f"{name}_{tag}_ms"] = round(best, 3)
                figures[f"{name}_{tag}_cpu_ms"] = round(min(cpu[tag]) * 1e3, 3)
            for form in forms:
                for other in (f"onnxruntime_int8_{form}", f"onnxruntime_int8_{form}_int8allowed"):
                    if f"{name}_{other}_ms" not in figures:
                        continue
                    for unit, key in (("ms", "int8_ratio"), ("cpu_ms", "int8_cpu_ratio")):
                        r = figures[f"{name}_ours_int8_{form}_{unit}"] / figures[f"{name}_{other}_{unit}"]
                        figures[f"{name}_{key}_vs_{other}"] = round(r, 3)
                    print(f"  ours int8 / {other}: {figures[f'{name}_int8_ratio_vs_{other}']:.2f}x "
                          f"(CPU {figures[f'{name}_int8_cpu_ratio_vs_{other}']:.2f}x)")
            for k, v in cos.items():
                print(f"  cosine {k:58s} {v:.6f}")
                figures[f"{name}_{k}_cos"] = round(v, 6)
            for prec in ("int8", "bf16"):
                if f"{name}_openvino_{prec}_ms" in figures:
                    ours = f"ours_int8_{forms[0]}" if prec == "int8" else "ours_bf16"
                    r = figures[f"{name}_{ours}_ms"] / figures[f"{name}_openvino_{prec}_ms"]
                    figures[f"{name}_{prec}_ratio_vs_openvino"] = round(r, 3)
                    print(f"  {ours} / OpenVINO {prec}: {r:.2f}x")
    for form in forms:
        for name in args.models.split(","):
            c = figures[f"{name}_ours_int8_{form}_vs_onnxruntime_int8_{form}_cos"]
            r = figures[f"{name}_int8_cpu_ratio_vs_onnxruntime_int8_{form}"]
            print(f"bars, {name} {form} (cosine to onnxruntime int8 >= 0.999: {c:.6f}"
                  f"{'' if c >= 0.999 else ' NOT met'}; CPU-time ratio {r:.2f}x)")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
