"""The accelerator route of ``build_model``: a graph -> int8 -> partition -> one module.

    quantize     calibrate on ``calib`` samples, power-of-two scales, requantization by
                 shifts (``compiler.quant.quantize``); a QDQ model instead keeps its own
                 scales (``compiler.quant.qdq``: shifts, or multipliers where a scale
                 ratio is not a power of two)
    build_plan   accelerator vs CPU per node, one program per offloaded node (conv2d,
                 dense, residual add; weights baked in), pack/unpack steps
                 (``compiler.quant.partition``)
    lower_plan   the execution plan: "vta" calls for the programs, the CPU steps (stem
                 conv, pooling, softmax, pack/unpack, quantize, ...) as compiled kernels
                 in one shared library (``compiler.quant.lower_plan``)

The result is a :class:`~compiler.graph_lower.CompiledModel` with targets
``[<cpu target>, "vta"]``, the accelerator config, the programs, and ``plan``
(in memory) for the quantized oracle (``compiler.quant.run(cm.plan.qgraph, ...)``).
"""
from __future__ import annotations

import time
from typing import Mapping

import numpy as np

from compiler.graph_lower import CompiledModel
from vta_hw.config import VTAConfig, load_config
from vta_hw.timing import DramTiming


def build_vta(graph, params: dict, *, config: "VTAConfig | str | None" = None,
              calib: "Mapping[str, np.ndarray] | None" = None, per_channel: bool = False,
              cpu_target="llvm", vthreads: int = 2, dram: "DramTiming | None" = None,
              measure=None, min_channels: "int | None" = None, seed: int = 0,
              tuning_log=None,
              opt_level: int = 3, progress=None, placement="supported",
              clock_mhz: "float | None" = None, force: "Mapping[str, str] | None" = None
              ) -> CompiledModel:
    """Quantize, partition and compile ``graph`` for the accelerator (module docstring).

    Args:
        graph, params: the imported float model (``compiler.frontend.import_model``).
        config: VTAConfig or preset name (default preset).
        calib: input name -> samples ``[N, *input dims[1:]]`` (any layout of each
            sample's values; read as the input's dtype). None: 8 seeded samples per
            input and a ``RandomCalibrationWarning`` (``quant.calibration.smoke_calibration``;
            pass real data for accuracy); a QDQ model ignores it.
        per_channel: per-output-channel weight exponents.
        cpu_target: LLVM host target of the CPU steps' kernels.
        vthreads, dram, measure: passed to the accelerator schedules
            (``topi.vta.conv2d_program``).
        min_channels: the partition's channel rule (default BLOCK_IN / 4).
        tuning_log: a ``vta tune --target vta`` log (or a list): each accelerator conv's
            tiling (tile sizes and virtual threads) from the best record for this preset
            and shape, if any (else the tile search's with ``vthreads``); the shipped logs (``compiler/autotune/logs/``) apply in any case.
        seed: of the smoke calibration.
        opt_level: LLVM optimisation level of the CPU kernels.
        progress: optional ``(iterable, total, desc) -> iterable`` (e.g. tqdm).
        placement: "supported" (default: every node the accelerator runs), "cost" (each
            such node where its estimated time is lower, ``compiler.quant.placement``), or
            a ``compiler.quant.placement.Placement`` (also a cycle runner or a stated
            host's throughput; ``driver.placement.cost_placement`` builds the CLI's).
        clock_mhz: the accelerator clock for "cost", MHz (required there).
        force: op type ("conv2d", "dense", "add") -> "cpu" | "vta", under either placement.

    Returns:
        a CompiledModel; ``stats`` adds ``quantize_s``, ``partition_s``,
        ``quantized_nodes``, ``config``, ``vta_nodes`` (one entry per
        accelerator node: op, name, shape, shift, relu, for adds la/lb and, where a QDQ
        model's scale ratio is not a power of two, mult, post and err) and ``placement``
        (one ``Decision.to_json()`` per weighed or forced node).

    Raises:
        vta_hw.config.ConfigError: a bad config name (the message lists the presets).
        compiler.quant.QuantizeError: calibration samples that are missing for an input,
            empty, not numeric, not finite, or not of the input's size
            (``calibration.check_calibration``), a calibration that cannot fit in this
            machine's memory (``calibration.check_calibration_memory``: the bytes
            needed), or an operator the quantizer does not handle.
        compiler.quant.placement.PlacementError: a bad placement, clock or force entry.
    """
    from compiler.quant import build_plan, quantize
    from compiler.quant.calibration import check_calibration_memory, checked_calibration
    from compiler.quant.lower_plan import lower_plan
    from compiler.quant.placement import Placement
    from compiler.quant.qdq import import_qdq, is_qdq
    from compiler.topi.vta.environment import Env

    cfg = config if isinstance(config, VTAConfig) else load_config(config)
    check_calibration_memory(graph, max((len(v) for v in (calib or {}).values()
                                         if np.ndim(v)), default=8))
    if not isinstance(placement, Placement):
        placement = Placement(kind=placement, clock_mhz=clock_mhz, force=dict(force or {}),
                              cpu_target=cpu_target)
    qdq = is_qdq(graph)
    if not qdq or calib is not None:
        calib = checked_calibration(graph.inputs, calib, seed)
    t0 = time.perf_counter()
    if qdq:   # the model's own scales; calib and per_channel do not apply
        qg = import_qdq(graph, params, group_channels=Env(cfg).BLOCK_IN)
    else:
        qg = quantize(graph, params, calib, per_channel=per_channel, group_channels=Env(cfg).BLOCK_IN)
    t1 = time.perf_counter()
    from compiler.autotune import load_tuning
    tuning = load_tuning(tuning_log or ())
    plan = build_plan(qg, cfg, vthreads=vthreads, dram=dram, measure=measure,
                      min_channels=min_channels, placement=placement,
                      tiling_for=tuning.vta_tiling_for(cfg))
    t2 = time.perf_counter()
    cm = lower_plan(plan, cpu_target, progress=progress, opt_level=opt_level)
    cm.stats.update(quantize_s=t1 - t0, partition_s=t2 - t1, config=cfg.name,
                    quantized_nodes=len(plan.qgraph.nodes), vta_nodes=vta_nodes(plan),
                    tuning=tuning.report(),
                    placement=[d.to_json() for d in plan.placement])
    return cm


def vta_nodes(plan) -> list:
    """One dict per accelerator node of ``plan``: op, name, shape, shift (an int, or a list
    per output channel), relu, la/lb for adds, and mult (likewise), post and err (the
    requantization's error bound in output LSBs) for a QDQ model's multipliers, and zero (the
    output's zero point) where it is not 0 (what ``vta compile`` prints)."""
    out = []
    for n in plan.qgraph.nodes:
        if n.target != "vta":
            continue
        sh = n.attrs["shift"]
        d = {"op": n.op.value, "name": n.name, "shape": list(n.shape),
             "shift": [int(v) for v in sh] if isinstance(sh, (tuple, list)) else int(sh),
             "relu": bool(n.attrs["relu"])}
        if "la" in n.attrs:
            d["la"], d["lb"] = int(n.attrs["la"]), int(n.attrs["lb"])
        if n.attrs.get("mult") is not None:
            m = n.attrs["mult"]
            d.update(mult=[int(v) for v in m] if isinstance(m, (tuple, list)) else int(m),
                     post=int(n.attrs["post"]), err=float(n.attrs["err"]))
        if n.zp:
            d["zero"] = int(n.zp)
        out.append(d)
    return out
