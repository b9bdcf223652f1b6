"""A quantized graph run entirely on the CPU in int8: every node a CPU step.

The accelerator's plan (``partition.build_plan``) sends convs, dense layers and adds to
the accelerator; here none goes, so the convs and dense layers run as int8 x int8 ->
int32 kernels with the requantization fused (``kernels/select.py``: VNNI where the target
has it) and the module's plan is all ``"kernel"`` calls, run by the same executor.
:func:`build_int8_cpu` is what ``build_model(model, target="llvm", quantize="int8")``
calls.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from .qgraph import QGraph, QOp


def cpu_plan(qg: QGraph, config=None):
    """The plan of ``qg`` with every node on the CPU (a ``partition.Plan`` without programs).
    ``config`` is recorded only (default preset)."""
    from vta_hw.config import load_config

    from .partition import Plan, Step, _value
    nodes = [dataclasses.replace(n, target="cpu") for n in qg.nodes]
    qg = QGraph(nodes, list(qg.inputs), list(qg.outputs), list(qg.output_names), qg.params)
    steps = [Step("cpu", i, tuple(_value(s) for s in n.src), _value(i))
             for i, n in enumerate(nodes) if n.op is not QOp.INPUT]
    return Plan(qg, steps, {}, config or load_config(), {}, 0.0)


def build_int8_cpu(graph, params: dict, *, calib=None, per_channel: bool = True,
                   cpu_target="llvm", seed: int = 0, opt_level: int = 3, progress=None):
    """Quantize ``graph`` and compile it for the CPU ``cpu_target``: a QDQ model at its own
    scales (``qdq.import_qdq``; ``calib`` and ``per_channel`` do not apply), any other at
    the project's power-of-two scales (``quantize``, calibrated on ``calib``: input name ->
    float samples ``[N, *dims[1:]]``; None: 8 seeded samples). Returns a ``CompiledModel`` whose ``stats``
    add ``int8_path`` (``kernels.select``'s choice) and ``quantize_s``.

    Raises:
        compiler.quant.QuantizeError: (a ValueError) calibration samples missing or malformed
            (``calibration.checked_calibration``, as ``build_vta``).
        compiler.quant.QuantizeError: an operator the quantizer does not handle, or a QDQ
            model outside what ``import_qdq`` accepts (a per-axis activation scale, ...).
    """
    import time

    from .calibration import checked_calibration
    from .qdq import import_qdq, is_qdq
    from .quantize import quantize

    t0 = time.perf_counter()
    if is_qdq(graph):       # the model's own scales; calib and per_channel do not apply
        qg = import_qdq(graph, params, requant="float")   # onnxruntime's float32 scales
        return _lower(qg, cpu_target, progress, opt_level, t0)
    calib = checked_calibration(graph.inputs, calib, seed)
    t0 = time.perf_counter()
    qg = quantize(graph, params, calib, per_channel=per_channel)
    return _lower(qg, cpu_target, progress, opt_level, t0)


def _lower(qg: QGraph, cpu_target, progress, opt_level: int, t0: float):
    import time

    from compiler.codegen.llvm.target import parse_target

    from .kernels import select
    from .lower_plan import lower_plan
    from .fuse_pad import fuse_pads
    from .lut import fuse_tables
    t1 = time.perf_counter()
    cm = lower_plan(cpu_plan(fuse_pads(fuse_tables(qg))), cpu_target, progress=progress,
                    opt_level=opt_level)
    cm.targets, cm.vta = cm.targets[:1], None      # a CPU module: no accelerator device
    cm.stats.update(quantize_s=t1 - t0, int8_path=select(parse_target(cpu_target).features).name)
    return cm
