"""Int8 quantization for the accelerator: calibration, the quantized graph, partitioning.

- ``qgraph``: ``QGraph`` / ``QNode`` / ``QOp`` and ``run`` (the exact numpy oracle).
- ``quantize``: ``prepare`` (batch-norm folding) -> ``calibrate`` -> ``quantize``
  (power-of-two scales, requantization by shifts).
- ``partition``: accelerator vs CPU, ``build_plan`` (programs + steps with pack/unpack).
- ``module``: ``build_vta_model`` and the ``.vtamod`` folder (run by ``driver.vta_runtime``).
"""
from .module import FORMAT, VtaCompiledModel, build_vta_model, load_calibration
from .partition import Plan, Step, build_plan, partition
from .qgraph import QGraph, QNode, QOp, run
from .quantize import QuantizeError, calibrate, exponent_for, prepare, quantize

__all__ = ["FORMAT", "Plan", "QGraph", "QNode", "QOp", "QuantizeError", "Step", "VtaCompiledModel",
           "build_plan", "build_vta_model", "calibrate", "exponent_for", "load_calibration",
           "partition", "prepare", "quantize", "run"]
