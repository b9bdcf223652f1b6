"""Build and measure one candidate: ``MEASURES[task kind](payload, config, options)``.

Each returns the list of costs (seconds per run on the CPU, cycles on the cycle
model) and raises on a failed build or a wrong result (the runner turns any
exception into the trial's error). Options (all optional): ``warmup`` runs
(default 1), ``repeats`` (default 3), ``number`` runs per repeat (default: enough
for about ``min_repeat_ms``, default 20 ms), ``check`` (default True: the output
must equal the default point's to 1e-4 relative; accelerator programs bit-exact),
``flush_cache`` (default False: write a 64 MiB buffer before each repeat).
"""
from __future__ import annotations

import time

import numpy as np

_REFERENCE: dict = {}        # per-process cache: task payload id -> default point's output


def _inputs(kdef, node, seed: int) -> list:
    from compiler.graph_lower.packing import pack_param
    rng = np.random.default_rng(seed)
    args = []
    for i, src in enumerate(node.src):
        v = rng.standard_normal(src.shape).astype(src.dtype) if src.shape else \
            np.asarray(rng.standard_normal(), src.dtype)
        tag = kdef.packs[i]
        v = pack_param(v, tag) if tag is not None else v
        args.append(np.ascontiguousarray(v).reshape(kdef.args[i].shape))
    args += [np.asarray(c) for c in kdef.constants]
    args += [np.zeros(t.shape, t.dtype) for t in kdef.args[len(args):]]
    return args


def _build_llvm(node, target, config):
    import compiler.build
    from compiler.graph_lower.lower import lower_group
    kdef = lower_group(node, "cand", target, config)
    return kdef, compiler.build(kdef.schedule, kdef.args, target, name="cand", fp_contract=True)


def measure_llvm(payload: dict, config, options: dict) -> list:
    """Seconds per run of the fused group ``payload["node"]`` at ``config``."""
    node, target = payload["node"], payload["target"]
    kdef, f = _build_llvm(node, target, config)
    args = _inputs(kdef, node, 0)
    for _ in range(options.get("warmup", 1)):
        f(*args)
    if options.get("check", True):
        key = (node, target)
        if key not in _REFERENCE:
            dk, df = _build_llvm(node, target, None)
            ref_args = _inputs(dk, node, 0)
            df(*ref_args)
            _REFERENCE[key] = ref_args[-1].copy()
        ref, out = _REFERENCE[key], args[-1]
        scale = float(np.max(np.abs(ref))) or 1.0
        if out.shape != ref.shape or not np.allclose(out, ref, rtol=1e-4, atol=1e-4 * scale):
            err = float(np.max(np.abs(out - ref))) if out.shape == ref.shape else float("nan")
            raise ArithmeticError(f"wrong result: differs from the default schedule's by up to "
                                  f"{err:.3g} (tolerance 1e-4 relative)")
    return _time(f, args, options)


def _time(f, args, options: dict) -> list:
    """Seconds per call of kernel ``cand`` of module ``f`` over ``args`` (module docstring)."""
    # time the raw entry point over pointers (args checked by the first call): the numpy
    # wrapper's checks cost tens of microseconds, as much as a small kernel
    raw = f.get_function("cand")._cfunc
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
    args = _inputs(kdef, node, 0)
    for _ in range(options.get("warmup", 1)):
        f(*args)
    if options.get("check", True) and not np.array_equal(
            args[-1], layout_transform(args[0], p["src"], p["dst"])):
        raise ArithmeticError(f"wrong result: the {p['src']} -> {p['dst']} kernel differs from "
                              "numpy's transform")
    return _time(f, args, options)


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
MEASURES = {"llvm": measure_llvm, "vta_conv2d": measure_vta_conv2d,
            "layout_transform": measure_layout_transform}


def measure(kind: str, payload: dict, config, options: dict) -> tuple:
    """``("ok", costs)`` or ``("error", one line)``: never raises for a bad candidate."""
    if kind not in MEASURES:
        return "error", f"no measure function for task kind {kind!r}; kinds: {sorted(MEASURES)}"
    try:
        return "ok", MEASURES[kind](payload, config, options)
    except Exception as e:        # a candidate's failure is a result, not a tuner crash
        msg = str(e).splitlines()[0] if str(e) else ""
        return "error", f"{type(e).__name__}: {msg}"[:500]
