"""Accelerator compile time of VGG-19 (144 M parameters) with every conv and dense on the accelerator.

Builds VGG-19 with ``onnx.helper`` (seeded random weights, no download: 16 3x3 convs with
relu, 5 max pools, fully connected 25088 -> 4096 -> 4096 -> 1000), then compiles it for the
accelerator with ``build_model(target="vta", force={"conv2d": "vta", "dense": "vta"})``
(the stem conv over 3 channels too), calibrated on ``--calib`` seeded inputs. Prints the
phases (import, quantize, partition: the accelerator programs, lowering the CPU steps),
then one JSON line; the bar (issue 17) is ``total_s <= 60`` on the default preset. CPU
seconds (``time.process_time``) are printed beside wall seconds: on a shared machine the
wall time counts other processes' time slices.

Usage: ``python bench/vgg19_compile.py [--size 224] [--config PRESET] [--profile FILE]``
(``--profile`` writes cProfile stats of the compile).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

#: VGG-19's conv channels per stage (a max pool after each stage)
STAGES = ((64, 64), (128, 128), (256,) * 4, (512,) * 4, (512,) * 4)
BAR_S = 60.0


def build_vgg19(size: int = 224, classes: int = 1000, seed: int = 0) -> onnx.ModelProto:
    """VGG-19 (configuration E) at ``size`` x ``size`` with He-scaled seeded random weights."""
    rng = np.random.default_rng(seed)
    nodes, inits = [], []

    def const(name, a):
        inits.append(numpy_helper.from_array(a.astype(np.float32), name))
        return name

    x, cin, k = "input", 3, 0
    for stage in STAGES:
        for cout in stage:
            w = const(f"w{k}", rng.standard_normal((cout, cin, 3, 3)) * np.sqrt(2 / (9 * cin)))
            b = const(f"b{k}", rng.standard_normal(cout) * 0.01)
            nodes.append(helper.make_node("Conv", [x, w, b], [f"conv{k}"], kernel_shape=[3, 3],
                                          pads=[1, 1, 1, 1], name=f"conv{k}"))
            nodes.append(helper.make_node("Relu", [f"conv{k}"], [f"relu{k}"]))
            x, cin, k = f"relu{k}", cout, k + 1
        nodes.append(helper.make_node("MaxPool", [x], [f"pool{k}"], kernel_shape=[2, 2],
                                      strides=[2, 2]))
        x = f"pool{k}"
    nodes.append(helper.make_node("Flatten", [x], ["flat"]))
    x, width = "flat", 512 * (size // 32) ** 2
    for j, out in enumerate((4096, 4096, classes)):
        w = const(f"fc{j}", rng.standard_normal((out, width)) * np.sqrt(1 / width))
        b = const(f"fcb{j}", rng.standard_normal(out) * 0.01)
        nodes.append(helper.make_node("Gemm", [x, w, b], [f"fc{j}"], transB=1, name=f"fc{j}"))
        x, width = f"fc{j}", out
        if j < 2:
            nodes.append(helper.make_node("Relu", [x], [f"fcrelu{j}"]))
            x = f"fcrelu{j}"
    graph = helper.make_graph(nodes, "vgg19", [helper.make_tensor_value_info(
        "input", TensorProto.FLOAT, [1, 3, size, size])], [helper.make_tensor_value_info(
            x, TensorProto.FLOAT, [1, classes])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--config", default=None, help="accelerator preset (default preset)")
    ap.add_argument("--calib", type=int, default=1, help="seeded calibration inputs")
    ap.add_argument("--profile", default=None, metavar="FILE", help="write cProfile stats here")
    a = ap.parse_args(argv)
    from compiler import build_model

    model = build_vgg19(a.size)
    params = sum(int(np.prod(t.dims)) for t in model.graph.initializer)
    calib = {"input": np.random.default_rng(1).standard_normal(
        (a.calib, 3, a.size, a.size)).astype(np.float32)}
    prof = None
    if a.profile:
        import cProfile
        prof = cProfile.Profile()
        prof.enable()
    t0, c0 = time.perf_counter(), time.process_time()
    cm = build_model(model, target="vta", config=a.config, calib=calib,
                     force={"conv2d": "vta", "dense": "vta"})
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    if prof:
        prof.disable()
        prof.dump_stats(a.profile)
    st = cm.stats
    layers = st["layers"].values()
    slowest = max(layers, key=lambda d: d["compile_s"])
    print(f"VGG-19 {a.size}x{a.size}: {params / 1e6:.1f} M parameters, {len(st['vta_nodes'])} "
          f"accelerator nodes on {st['config']}")
    print(f"  import {st['import_s']:.1f} s, quantize {st['quantize_s']:.1f} s, programs "
          f"{st['partition_s']:.1f} s (slowest {slowest['name']} {slowest['compile_s']:.1f} s), "
          f"CPU steps {st['lower_s'] + st['llvm_s']:.1f} s")
    print(f"  total {wall:.1f} s wall, {cpu:.1f} s CPU (bar {BAR_S:.0f} s)")
    out = {"bench": "vgg19_compile", "config": st["config"], "size": a.size,
           "params_M": round(params / 1e6, 1), "vta_nodes": len(st["vta_nodes"]),
           "insns": sum(d["insns"] for d in layers),
           "import_s": round(st["import_s"], 2), "quantize_s": round(st["quantize_s"], 2),
           "programs_s": round(st["partition_s"], 2),
           "cpu_steps_s": round(st["lower_s"] + st["llvm_s"], 2),
           "total_wall_s": round(wall, 2), "total_cpu_s": round(cpu, 2), "bar_s": BAR_S,
           "meets_bar": wall <= BAR_S}
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
