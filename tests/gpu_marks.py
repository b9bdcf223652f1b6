"""Skip markers of the GPU tests, shared by the kernel tests and the model tests.

In CI (``CI=true``) OpenCL on PoCL is part of the set-up, so a missing runtime
fails the tests there instead of skipping them.
"""
import os

import pytest

from compiler.codegen.gpu import cuda, opencl

needs_opencl = pytest.mark.skipif(
    not opencl.available() and not os.environ.get("CI"),
    reason="no OpenCL device: pip install pyopencl and apt-get install pocl-opencl-icd ocl-icd-libopencl1")
needs_gpu = pytest.mark.skipif(not cuda.gpu_available(),
                               reason="no CUDA GPU (driver and device) on this machine")
needs_cuda_compiler = pytest.mark.skipif(
    not (cuda.nvrtc_available() or cuda.nvcc_path()),
    reason="no CUDA compiler: pip install cuda-bindings 'nvidia-cuda-nvrtc>=13.0,<13.1' or put nvcc on PATH")
