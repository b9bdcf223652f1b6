"""Structure of the printed CUDA and OpenCL kernels."""

import re

import pytest

from compiler.codegen.gpu import cuda, opencl
from compiler.codegen.gpu.c_source import launch_config
from compiler.tir import ir
from compiler.tir.ops import ForKind
from compiler.topi import gpu

S = ForKind.SERIAL


def test_matmul_cuda_structure():
    src = cuda.print_kernel(gpu.matmul(256, 256, 64))
    code = src.code
    assert src.launch.grid == (2, 2, 1) and src.launch.block == (16, 16, 1)
    assert src.shared_bytes == 2 * 8 * 128 * 4
    assert 'extern "C" __global__ void __launch_bounds__(256) matmul_float32_256x256x64(' in code
    assert "const float* __restrict__ A" in code and "float* __restrict__ C" in code
    assert "const float* __restrict__ C" not in code
    assert code.count("__shared__ __align__(16) float") == 2
    assert "((int)blockIdx.y)" in code and "((int)threadIdx.x)" in code
    # the two K-loop barriers, nothing more
    assert code.count("__syncthreads();") == 2
    # float4 global loads, shared loads and global stores
    assert "(*(const float4*)(A + " in code and "(*(const float4*)(B + " in code
    assert "(*(float4*)(A_shared + " in code and "*(float4*)(C + " in code
    # register tiles are plain arrays in unrolled loops
    assert "float C_local[64];" in code and "#pragma unroll" in code
    # power-of-two floor division as shifts and masks
    assert ">> 1" in code and "& 1)" in code and " / " not in code


def test_matmul_opencl_structure():
    src = opencl.print_kernel(gpu.matmul(256, 256, 64))
    code = src.code
    assert "__kernel __attribute__((reqd_work_group_size(16, 16, 1))) void matmul_float32_256x256x64(" in code
    assert "__global const float* restrict A" in code
    assert code.count("__local float") == 2 and code.count("barrier(CLK_LOCAL_MEM_FENCE);") == 2
    assert "get_group_id(1)" in code and "get_local_id(0)" in code
    assert "vload4(0, A + " in code and "vstore4(" in code
    assert src.launch.global_size == (32, 32, 1)


def test_fp16_is_storage_with_fp32_arithmetic():
    c = cuda.print_kernel(gpu.matmul(128, 128, 16, "float16")).code
    assert "const unsigned short* __restrict__ A" in c and "__half_to_float(A[" in c
    assert "__shared__ __align__(16) float A_shared" in c
    o = opencl.print_kernel(gpu.softmax_rows(4, 100, "float16")).code
    assert "__global const half* restrict X" in o and "vload_half(" in o and "vstore_half_rte(" in o


def test_softmax_barriers_and_guards():
    src = cuda.print_kernel(gpu.softmax_rows(8, 300, threads=64))
    # 6 tree steps + result read, twice, plus the WAR before the array is reused
    assert src.code.count("__syncthreads();") == 2 * 7 + 1
    assert "expf(" in src.code and "__int_as_float(0xff800000)" in src.code
    assert src.launch.grid == (8, 1, 1) and src.launch.block == (64, 1, 1)


def test_elementwise_vector_and_scalar_tail():
    v = cuda.print_kernel(gpu.add_relu(4096)).code
    assert "(*(const float4*)(in0 + " in v and "__vmax_float4(" in v and "__syncthreads" not in v
    assert "operator+(float4 a, float4 b)" in v
    t = cuda.print_kernel(gpu.add_relu(1001)).code
    assert "if (" in t and "float4" not in t and "fmaxf(" in t


def test_narrow_thread_loop_is_guarded_and_min_offset():
    tx, tx2 = ir.var("tx"), ir.var("tx2")
    A = ir.Buffer("A", "float32", (64,))
    body = ir.seq(ir.For(tx, ir.const(0), ir.const(64), S, ir.Store(A, ir.const(1.0), (tx,)), "threadIdx.x"),
                  ir.For(tx2, ir.const(0), ir.const(16), S, ir.Store(A, ir.const(2.0), (tx2,)), "threadIdx.x"))
    f = ir.PrimFunc("k", (A,), body)
    code = cuda.print_kernel(f).code
    assert "if (((int)threadIdx.x) < 16) {" in code
    assert launch_config(f).block == (64, 1, 1)


def test_floor_division_by_non_power_of_two():
    n = ir.var("n")
    A = ir.Buffer("A", "int32", (8,))
    tx = ir.var("tx")
    f = ir.PrimFunc("k", (A, n), ir.For(tx, ir.const(0), ir.const(8), S, ir.seq(
        ir.Store(A, tx // 3, (tx,)), ir.Store(A, (tx - n) // 3, (tx,))), "threadIdx.x"))
    code = cuda.print_kernel(f).code
    assert "(tx / 3)" in code                       # non-negative: plain division
    assert "floordiv_int((tx - n), 3)" in code      # maybe negative: floor helper
    assert "__device__ __forceinline__ int floordiv_int(int a, int b)" in code
    assert ", int n)" in code


def test_unaligned_vector_falls_back_to_lanes_in_cuda():
    A = ir.Buffer("A", "float32", (64,))
    B = ir.Buffer("B", "float32", (64,))
    tx = ir.var("tx")
    idx = ir.ramp(tx * 4 + 1, 1, 4)
    f = ir.PrimFunc("k", (A, B), ir.For(tx, ir.const(0), ir.const(8), S, ir.Store(
        B, ir.load(A, [idx], 4), (ir.ramp(tx * 4, 1, 4),)), "threadIdx.x"))
    code = cuda.print_kernel(f).code
    assert "make_float4(A[" in code and "*(float4*)(B + " in code


def test_errors_name_the_problem():
    A = ir.Buffer("A", "float32", (64,))
    tx, n = ir.var("tx"), ir.var("n")
    bad_axis = ir.PrimFunc("k", (A,), ir.For(tx, ir.const(0), ir.const(8), S, ir.Store(A, ir.const(0.0), (tx,)), "vthread"))
    with pytest.raises(ValueError, match="bound to 'vthread'"):
        cuda.print_kernel(bad_axis)
    sym = ir.PrimFunc("k", (A, n), ir.For(tx, ir.const(0), n, S, ir.Store(A, ir.const(0.0), (tx,)), "threadIdx.x"))
    with pytest.raises(ValueError, match="must be a constant integer"):
        cuda.print_kernel(sym)
    wide = ir.PrimFunc("k", (A,), ir.Store(A, ir.broadcast(ir.const(0.0), 8), (ir.ramp(ir.const(0), 1, 8),)))
    with pytest.raises(ValueError, match="vector of 8 lanes"):
        cuda.print_kernel(wide)
    par = ir.PrimFunc("k", (A,), ir.For(tx, ir.const(0), ir.const(8), ForKind.PARALLEL, ir.Store(A, ir.const(0.0), (tx,))))
    with pytest.raises(ValueError, match="PARALLEL"):
        cuda.print_kernel(par)


def test_names_are_sanitized():
    A = ir.Buffer("A.global", "float32", (8,))
    v = ir.var("i.outer")
    f = ir.PrimFunc("k", (A,), ir.For(v, ir.const(0), ir.const(8), S, ir.Store(A, ir.const(0.0), (v,)), "threadIdx.x"))
    code = opencl.print_kernel(f).code
    assert "A_global[i_outer] = 0.0f;" in code
    assert re.search(r"int i_outer = \(\(int\)get_local_id\(0\)\);", code)


def test_kernels_are_in_the_verified_flat_form():
    from compiler.tir import verify
    for f in (gpu.matmul(256, 256, 64), gpu.matmul(128, 128, 16, "float16", prefetch=False),
              gpu.matmul_naive(32, 32, 8), gpu.add_relu(1001), gpu.add_relu(100, "float16"),
              gpu.sigmoid_mul(77), gpu.softmax_rows(3, 100, "float16")):
        verify(f, flat=True)


def test_buffers_allocated_in_sibling_scopes_print_once_per_scope():
    # loop partitioning copies a loop body, and with it the Allocate of its buffers
    tx = ir.var("tx")
    A = ir.Buffer("A", "float32", (64,))
    sh = ir.Buffer("sh", "float32", (64,), scope="shared")
    loc = ir.Buffer("loc", "float32", (1,), scope="local")

    def part(k):
        return ir.Allocate(sh, ir.Allocate(loc, ir.seq(
            ir.Store(loc, ir.load(A, [tx]) + float(k), (ir.const(0),)),
            ir.Store(sh, ir.load(loc, [ir.const(0)]), (tx,)),
            ir.Store(A, ir.load(sh, [63 - tx]), (tx,)))))
    f = ir.PrimFunc("k", (A,), ir.For(tx, ir.const(0), ir.const(64), S, ir.seq(part(1), part(2)), "threadIdx.x"))
    code = opencl.print_kernel(f).code
    assert code.count("__local float sh[64]") == 1 and code.count("float loc[1];") == 2
    assert code.count("barrier(CLK_LOCAL_MEM_FENCE);") == 3   # RAW, WAR, RAW
