"""Int8 quantization for the accelerator: calibration, the quantized graph, partitioning.

- ``qgraph``: ``QGraph`` / ``QNode`` / ``QOp`` and ``run`` (the exact numpy oracle).
- ``quantize``: ``prepare`` (batch-norm folding) -> ``calibrate`` -> ``quantize``
  (power-of-two scales, requantization by shifts).
- ``partition``: accelerator vs CPU, ``build_plan`` (programs + steps with pack/unpack).
- ``qdq``: ``import_qdq`` (a QDQ model at its own scales into the same ``QGraph``;
  multipliers where scales are not powers of two), ``is_qdq``.
- ``calibration``: ``load_calibration`` (samples from an .npz).
- ``kernels``: the CPU steps (quantize/dequantize, the int8 stem conv, pooling, mean,
  pack/unpack, float ops) as scheduled ``te`` kernels, exact to the oracle.
- ``lower_plan``: a ``Plan`` -> the module's execution plan ("kernel" and "vta" calls,
  slots, params) and its one kernels.so (a ``compiler.graph_lower.CompiledModel``).

Whole models: ``compiler.build_model(model, target="vta", ...)`` (``compiler/build_vta.py``)
quantizes, partitions and lowers the plan into the one module format.
"""
from .calibration import load_calibration
from .partition import Plan, Step, build_plan, partition
from .qdq import import_qdq, is_qdq
from .qgraph import QGraph, QNode, QOp, run
from .quantize import QuantizeError, calibrate, exponent_for, prepare, quantize

__all__ = ["Plan", "QGraph", "QNode", "QOp", "QuantizeError", "Step",
           "build_plan", "calibrate", "exponent_for", "import_qdq", "is_qdq", "load_calibration",
           "partition", "prepare", "quantize", "run"]
