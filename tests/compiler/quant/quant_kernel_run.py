"""Running one CPU-step kernel of ``compiler.quant.kernels`` in the tests."""
import numpy as np


def run_kernel(kd, *inputs):
    """Build ``kd`` (a ``KernelDef``) with ``compiler.build`` (JIT, floating-point
    contraction off) and run it on ``inputs``; returns the output array."""
    import compiler
    f = compiler.build(kd.schedule, kd.args, name="kernel", fp_contract=False)
    out_t = kd.args[-1]
    out = np.zeros(out_t.shape, out_t.dtype)
    ws = [np.zeros(w.shape, w.dtype) for w in kd.workspace]
    f(*inputs, *kd.constants, *ws, out)
    return out
