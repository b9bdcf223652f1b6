"""GPU operator kernels (CUDA and OpenCL through `compiler.codegen.gpu.cuda` / `.opencl`).

Each builder returns a tir PrimFunc in the lowered flat form with thread-bound
loops, shared/local buffers and vector accesses: `matmul` (shared-memory and
register tiling, float4 loads, fp32 or fp16-in/fp32-accumulate), `elementwise`
and `add_relu` / `sigmoid_mul`, `softmax_rows`.
"""

from .elementwise import add_relu, elementwise, sigmoid_mul
from .matmul import flops, matmul, matmul_naive
from .softmax import softmax_rows

__all__ = ["add_relu", "elementwise", "flops", "matmul", "matmul_naive", "sigmoid_mul", "softmax_rows"]
