"""Shared cases of the GPU tests: every kernel with inputs and a numpy reference."""

import numpy as np

from compiler.topi import gpu


def softmax_ref(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


# (name, PrimFunc builder, inputs maker, reference, tolerance): every kernel the tests run
def kernel_cases():
    rng = np.random.default_rng(0)

    def mm(m, n, k, dtype):
        a = rng.standard_normal((m, k)).astype(dtype)
        b = rng.standard_normal((k, n)).astype(dtype)
        return [a, b, np.zeros((m, n), np.float32)], a.astype(np.float64) @ b.astype(np.float64)

    def ew(n, dtype, fn):
        a = rng.standard_normal(n).astype(dtype)
        b = rng.standard_normal(n).astype(dtype)
        return [a, b, np.zeros(n, dtype)], fn(a.astype(np.float64), b.astype(np.float64))

    def sm(r, c, dtype):
        x = (3 * rng.standard_normal((r, c))).astype(dtype)
        return [x, np.zeros_like(x)], softmax_ref(x)

    small = dict(block_m=64, block_n=64)
    return [
        ("matmul_fp32", gpu.matmul(128, 128, 32, **small), mm(128, 128, 32, np.float32), 1e-4),
        ("matmul_fp32_default_tiles", gpu.matmul(128, 256, 16), mm(128, 256, 16, np.float32), 1e-4),
        ("matmul_fp32_no_prefetch", gpu.matmul(64, 128, 24, prefetch=False, **small), mm(64, 128, 24, np.float32), 1e-4),
        ("matmul_fp16_fp32acc", gpu.matmul(128, 64, 32, "float16", **small), mm(128, 64, 32, np.float16), 1e-4),
        ("matmul_naive", gpu.matmul_naive(32, 48, 20), mm(32, 48, 20, np.float32), 1e-4),
        ("add_relu_fp32_vec4", gpu.add_relu(4096), ew(4096, np.float32, lambda a, b: np.maximum(a + b, 0)), 1e-6),
        ("add_relu_fp32_tail", gpu.add_relu(1001), ew(1001, np.float32, lambda a, b: np.maximum(a + b, 0)), 1e-6),
        ("add_relu_fp16", gpu.add_relu(1000, "float16"), ew(1000, np.float16, lambda a, b: np.maximum(a + b, 0)), 2e-3),
        ("sigmoid_mul_fp32", gpu.sigmoid_mul(777), ew(777, np.float32, lambda a, b: a / (1 + np.exp(-b))), 1e-5),
        ("softmax_fp32", gpu.softmax_rows(6, 300, threads=64), sm(6, 300, np.float32), 1e-5),
        ("softmax_fp16", gpu.softmax_rows(3, 128, "float16", threads=128), sm(3, 128, np.float16), 2e-3),
    ]


def check_outputs(case, run):
    name, func, (args, ref), tol = case
    args = [a.copy() for a in args]
    run(func, args)
    out = args[-1].astype(np.float64)
    err = np.abs(out - ref).max() / max(1.0, np.abs(ref).max())
    assert err < tol, f"{name}: relative error {err:.3g} >= {tol}"
