"""Build and measure one candidate: ``MEASURES[task kind](payload, config, options)``.

Each returns the list of costs (seconds per run on the CPU or the GPU, cycles on the
cycle model; GPU groups in ``gpu_measure.py``) and raises on a failed build or a wrong result (the runner turns any
exception into the trial's error). Options (all optional): ``warmup`` runs
(default 1), ``repeats`` (default 3), ``number`` runs per repeat (default: enough
for about ``min_repeat_ms``, default 20 ms), ``check`` (default True: the output
must equal the default point's to 1e-4 relative; accelerator programs bit-exact),
``flush_cache`` (default False: write a 64 MiB buffer before each repeat).
"""
from __future__ import annotations

import time

import numpy as np

from .gpu_measure import measure_gpu

_REFERENCE: dict = {}        # per-process cache: task payload id -> default point's output


def arg_types(kdef) -> list:
    """``(shape, dtype)`` of each kernel argument of ``kdef`` (picklable)."""
    return [(tuple(int(d) for d in t.shape), str(t.dtype)) for t in kdef.args]


def inputs(node, packs, types, constants, seed: int) -> list:
    """Seeded random arguments of a fused group's kernel: its inputs (constants packed
    by their tags), its compile-time tables, zeroed workspaces and output."""
    from compiler.graph_lower.packing import pack_param
    rng = np.random.default_rng(seed)
    args = []
    for i, src in enumerate(node.src):
        v = rng.standard_normal(src.shape).astype(src.dtype) if src.shape else \
            np.asarray(rng.standard_normal(), src.dtype)
        tag = packs[i]
        v = pack_param(v, tag) if tag is not None else v
        args.append(np.ascontiguousarray(v).reshape(types[i][0]))
    args += [np.asarray(c) for c in constants]
    args += [np.zeros(shape, dtype) for shape, dtype in types[len(args):]]
    return args


def _build_llvm(node, target, config):
    import compiler.build
    from compiler.graph_lower.lower import lower_group
    kdef = lower_group(node, "cand", target, config)
    return kdef, compiler.build(kdef.schedule, kdef.args, target, name="cand", fp_contract=True)


def _check(node, target, out) -> None:
    """Raise ArithmeticError unless ``out`` equals the default point's output to 1e-4."""
    key = (node, target)
    if key not in _REFERENCE:
        dk, df = _build_llvm(node, target, None)
        ref_args = inputs(node, dk.packs, arg_types(dk), dk.constants, 0)
        df(*ref_args)
        _REFERENCE[key] = ref_args[-1].copy()
    ref = _REFERENCE[key]
    scale = float(np.max(np.abs(ref))) or 1.0
    if out.shape != ref.shape or not np.allclose(out, ref, rtol=1e-4, atol=1e-4 * scale):
        err = float(np.max(np.abs(out - ref))) if out.shape == ref.shape else float("nan")
        raise ArithmeticError(f"wrong result: differs from the default schedule's by up to "
                              f"{err:.3g} (tolerance 1e-4 relative)")


def time_kernel(payload: dict, func, args: list, options: dict) -> list:
    """Seconds per run of the kernel ``func`` (a ``CompiledFunction``) on ``args``: warm-up,
    the output check against the default point (option ``check``), then ``repeats``
    timings of ``number`` runs each."""
    for _ in range(options.get("warmup", 1)):
        func(*args)
    if options.get("check", True):
        _check(payload["node"], payload["target"], args[-1])
    # time the raw entry point over pointers (args checked by the call above): the numpy
    # wrapper's checks cost tens of microseconds, as much as a small kernel
    raw = func._cfunc
    ptrs = [a.ctypes.data for a in args]
    t0 = time.perf_counter()
    raw(*ptrs)
    once = max(time.perf_counter() - t0, 1e-7)
    number = options.get("number") or max(1, int(options.get("min_repeat_ms", 20) / 1e3 / once))
    flush = np.empty(8 << 20) if options.get("flush_cache") else None
    costs = []
    for _ in range(options.get("repeats", 3)):
        if flush is not None:
            flush.fill(1.0)
        t0 = time.perf_counter()
        for _ in range(number):
            raw(*ptrs)
        costs.append((time.perf_counter() - t0) / number)
    return costs


def measure_llvm(payload: dict, config, options: dict) -> list:
    """Seconds per run of the fused group ``payload["node"]`` at ``config`` (built here)."""
    node = payload["node"]
    kdef, f = _build_llvm(node, payload["target"], config)
    args = inputs(node, kdef.packs, arg_types(kdef), kdef.constants, 0)
    return time_kernel(payload, f.get_function("cand"), args, options)


def measure_layout_transform(payload: dict, config, options: dict) -> list:
    """Seconds per run of the kernel moving an NCHW-``payload["shape"]`` tensor from layout
    ``payload["src"]`` to ``payload["dst"]`` (``compiler.autotune.layout_stage``), built as
    a model build would (a fused injective group); checked against numpy's transform."""
    from compiler.graph import Graph, Op, input_node, make, optimize
    from compiler.graph.opdefs.transform import layout_transform
    p = payload
    x = input_node("x", p["shape"], p["dtype"])
    if p["src"] != "NCHW":
        x = input_node("x", make(Op.LAYOUT_TRANSFORM, x, src_layout="NCHW",
                                 dst_layout=p["src"]).shape, p["dtype"])
    y = make(Op.LAYOUT_TRANSFORM, x, src_layout=p["src"], dst_layout=p["dst"])
    node = optimize(Graph((x,), (y,), ("y",)), {}).graph.outputs[0]
    kdef, f = _build_llvm(node, p["target"], None)
    args = inputs(node, kdef.packs, arg_types(kdef), kdef.constants, 0)
    f(*args)
    if options.get("check", True) and not np.array_equal(
            args[-1], layout_transform(args[0], p["src"], p["dst"])):
        raise ArithmeticError(f"wrong result: the {p['src']} -> {p['dst']} kernel differs from "
                              "numpy's transform")
    return time_kernel(payload, f.get_function("cand"), args, dict(options, check=False))


def vta_kernel(payload: dict, config):
    """The accelerator program of a ``vta_conv2d`` task at ``config`` (its tiling)."""
    from compiler.topi.vta import conv2d_program
    from compiler.topi.vta.tiling import Tiling
    from vta_hw.config import load_config
    p = payload
    return conv2d_program(load_config(p["config"]), p["data_shape"], p["kernel_shape"],
                          p["strides"], p["padding"], shift=p["shift"], relu=p["relu"],
                          bias=True, tiling=Tiling(*config["tiling"]))


def measure_vta_conv2d(payload: dict, config, options: dict) -> list:
    """Cycles of the conv2d program on the cycle model (timing only; one value:
    the model is deterministic)."""
    from sim import cycle
    k = vta_kernel(payload, config)
    return [float(cycle.run(k.program, values=False).cycles)]


def check_vta_conv2d(payload: dict, config) -> "str | None":
    """Run the program on the functional model with seeded random int8 inputs: None if
    its output equals numpy's bit for bit, else why not."""
    from sim import functional
    k = vta_kernel(payload, config)
    rng = np.random.default_rng(0)
    (N, C, H, W), (O, _, KH, KW) = payload["data_shape"], payload["kernel_shape"]
    x = rng.integers(-128, 128, (N, C, H, W)).astype(np.int8)
    w = rng.integers(-128, 128, (O, C, KH, KW)).astype(np.int8)
    b = rng.integers(-5000, 5000, O).astype(np.int32)
    res = functional.run(k.program, k.program.dram_image(k.inputs(x, w, b)))
    got = k.unpack(k.program.read(res.dram, "out"))
    want = k.reference(x, w, b)
    if np.array_equal(got, want):
        return None
    return f"not bit-exact: {int(np.sum(got != want))} of {got.size} outputs differ from numpy"


#: task kind -> measure(payload, config, options) -> costs
MEASURES = {"llvm": measure_llvm, "vta_conv2d": measure_vta_conv2d, "gpu": measure_gpu,
            "layout_transform": measure_layout_transform}


def guarded(fn, *args) -> tuple:
    """``("ok", fn(*args))`` or ``("error", "Type: first line of the message")``."""
    try:
        return "ok", fn(*args)
    except Exception as e:        # a candidate's failure is a result, not a tuner crash
        msg = str(e).splitlines()[0] if str(e) else ""
        return "error", f"{type(e).__name__}: {msg}"[:500]


def measure(kind: str, payload: dict, config, options: dict) -> tuple:
    """``("ok", costs)`` or ``("error", one line)``: never raises for a bad candidate."""
    if kind not in MEASURES:
        return "error", f"no measure function for task kind {kind!r}; kinds: {sorted(MEASURES)}"
    return guarded(MEASURES[kind], payload, config, options)
