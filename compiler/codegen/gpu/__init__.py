"""The GPU backends: CUDA C (``cuda``, compiled by NVRTC or nvcc) and OpenCL C (``opencl``),
printed from thread-bound loop IR by one C-like printer (``c_source``). The barrier
pass they need is a loop-IR pass: ``compiler.tir.passes.gpu_barriers``.
"""
