"""The CPU int8 kernels, in one folder: common helpers (``common.py``: the kernel ABI, the
requantizing epilogue) -> implementations (``generic.py``: every step on any CPU;
``vnni.py``: CONV2D / DENSE on VNNI; ``amx.py``: CONV2D on AMX tiles; ``pool.py``: int8
MAX_POOL) -> one selection table (``select.py``: :data:`CPU_KERNELS` per quantized op,
:data:`INT8_PATHS` for CONV2D and DENSE, :func:`select`).

The names below are the package's interface (``from compiler.quant import kernels;
kernels.conv2d(...)`` builds the plain path; ``kernels.cpu_kernel`` any step on the path the
target allows).
"""
from .common import requant8, table_clamp
from .generic import (DEPTHWISE_ROW, add, conv2d, dense, depthwise, dequantize,
                      graph_op_kernel, lut, mean, pack, quantize, rescale_add, unpack)
from .select import CPU_KERNELS, INT8_PATHS, Int8Path, cpu_kernel, select

__all__ = ["CPU_KERNELS", "DEPTHWISE_ROW", "INT8_PATHS", "Int8Path", "add", "conv2d",
           "cpu_kernel", "dense", "depthwise", "dequantize", "graph_op_kernel", "lut", "mean",
           "pack", "quantize", "requant8", "rescale_add", "select", "table_clamp", "unpack"]
