"""CUDA: every kernel compiles for sm_90 (and sm_80) without a GPU; runs against numpy with one."""

import shutil

import numpy as np
import pytest

from compiler.codegen.gpu import cuda

from gpu_kernel_cases import check_outputs, kernel_cases
from tests.gpu_marks import needs_cuda_compiler, needs_gpu

CASES = kernel_cases()
ELF = b"\x7fELF"


@needs_cuda_compiler
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_kernel_compiles_to_sm90_cubin(case):
    k = cuda.build(case[1], arch="sm_90")
    assert k.image[:4] == ELF and len(k.image) > 1000


@needs_cuda_compiler
def test_4096_matmul_kernels_compile():
    from compiler.topi import gpu
    for dtype in ("float32", "float16"):
        assert cuda.build(gpu.matmul(4096, 4096, 4096, dtype)).image[:4] == ELF


@pytest.mark.skipif(not cuda.nvrtc_available(), reason="NVRTC (cuda-bindings + nvidia-cuda-nvrtc) is not installed")
@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas (CUDA toolkit) is not on PATH")
def test_nvrtc_ptx_assembles_with_ptxas_for_sm80_and_sm90():
    src = cuda.print_kernel(CASES[0][1])
    ptx = cuda.compile_source(src.code, src.name, arch="sm_90", output="ptx", compiler="nvrtc")
    assert b".target sm_90" in ptx and f".entry {src.name}".encode() in ptx
    assert cuda.assemble_ptx(ptx, "sm_90")[:4] == ELF
    ptx80 = cuda.compile_source(src.code, src.name, arch="sm_80", output="ptx", compiler="nvrtc")
    assert cuda.assemble_ptx(ptx80, "sm_80")[:4] == ELF


@pytest.mark.skipif(cuda.nvcc_path() is None, reason="nvcc is not on PATH")
def test_nvcc_path_compiles():
    src = cuda.print_kernel(CASES[-1][1])
    assert cuda.compile_source(src.code, src.name, arch="sm_90", compiler="nvcc")[:4] == ELF


@needs_cuda_compiler
def test_compile_errors_carry_the_log_and_source():
    with pytest.raises(RuntimeError, match="undefined_thing"):
        cuda.compile_source('extern "C" __global__ void k() { undefined_thing(); }', "k")
    with pytest.raises(ValueError, match="arch must look like"):
        cuda.compile_source("", "k", arch="90")


@needs_gpu
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_kernel_on_gpu(case):
    check_outputs(case, lambda f, args: cuda.build(f)(*args))


@needs_gpu
def test_device_arrays_round_trip():
    a = np.arange(1000, dtype=np.float32)
    d = cuda.DeviceArray.from_numpy(a)
    np.testing.assert_array_equal(d.numpy(), a)
    d.free()
