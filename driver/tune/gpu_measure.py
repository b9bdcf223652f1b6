"""Build and time one GPU candidate: a fused group's kernels at a config point, on the device.

The group is lowered as ``compiler.build_model(..., target="cuda"|"opencl")`` lowers it
(``graph_lower.gpu.gpu_stages`` at the config), printed into one source, built for the
device (OpenCL C by the OpenCL driver; CUDA to a cubin by NVRTC or nvcc) and run
through the runtime's own device backend (``driver.gpu_runtime.BACKENDS``) on seeded
random inputs. With ``check`` (the default) its output must equal the default point's
to 1e-4 relative. Costs: seconds per run of all the group's launches, device-synchronised.
"""
from __future__ import annotations

import time

import numpy as np

_REFERENCE: dict = {}        # per process: (node, target) -> the default point's output


class _Files:
    """The kernel file of one candidate, as ``gpu_runtime`` backends read a module folder."""

    where = "a tuning candidate"

    def __init__(self, files: dict):
        self.files = files

    def read(self, name: str) -> bytes:
        return self.files[name]


def _printer_and_file(kind: str):
    from compiler.codegen.gpu import cuda, opencl
    return {"cuda": (cuda.CUDAPrinter, "kernels.cubin"),
            "opencl": (opencl.OpenCLPrinter, "kernels.cl")}[kind]


class _Candidate:
    """The group's kernels at ``config``, loaded on the device with its buffers filled."""

    def __init__(self, payload: dict, config):
        from compiler.codegen.gpu import c_source, cuda
        from compiler.graph_lower.gpu import declare_target, gpu_stages, parse_gpu_target
        from compiler.graph_lower.lower import lower_group
        from driver.gpu_runtime import BACKENDS

        from .measure import arg_types, inputs
        node = payload["node"]
        kind, arch = parse_gpu_target(payload["target"])
        kdef = lower_group(node, "cand", declare_target(), None)
        stages, extras = gpu_stages(kdef, "cand", config)
        printer, fname = _printer_and_file(kind)
        code, sources = c_source.print_module(printer, [st.func for st in stages])
        data = cuda.compile_source(code, "cand", arch, "cubin") if kind == "cuda" else code.encode()
        self.dev = BACKENDS[kind](_Files({fname: data}))
        self.host = inputs(node, kdef.packs, arg_types(kdef), kdef.constants, 0)
        self.bufs = [self.dev.alloc(a.nbytes) for a in self.host]
        for b, a in zip(self.bufs, self.host):
            self.dev.upload(b, a)
        extra = [self.dev.alloc(nb) for nb in extras]
        self.dev.prepare([(ks.name, ks.launch.grid, ks.launch.block,
                           [extra[i[1]] if isinstance(i, tuple) else self.bufs[i]
                            for i in st.arg_index])
                          for st, ks in zip(stages, sources)])

    def run(self) -> None:
        self.dev.run()
        self.dev.sync()

    def output(self) -> np.ndarray:
        out = np.empty_like(self.host[-1])
        self.dev.download(self.bufs[-1], out)
        return out


def _check(payload: dict, out: np.ndarray) -> None:
    key = (payload["node"], payload["target"])
    if key not in _REFERENCE:
        ref = _Candidate(payload, None)
        ref.run()
        _REFERENCE[key] = ref.output()
    ref = _REFERENCE[key]
    scale = float(np.max(np.abs(ref))) or 1.0
    if not np.allclose(out, ref, rtol=1e-4, atol=1e-4 * scale):
        raise ArithmeticError(f"wrong result: differs from the default schedule's by up to "
                              f"{float(np.max(np.abs(out - ref))):.3g} (tolerance 1e-4 relative)")


def measure_gpu(payload: dict, config, options: dict) -> list:
    """Seconds per run of the group ``payload["node"]``'s kernels at ``config`` on the device
    of ``payload["target"]`` (options as ``measure.py``; ``flush_cache`` does not apply).

    Raises:
        ArithmeticError: the output differs from the default point's (with ``check``).
        compiler.codegen.gpu.cuda.CudaCompileError, RuntimeError: a build or launch fails.
    """
    c = _Candidate(payload, config)
    for _ in range(options.get("warmup", 1)):
        c.run()
    if options.get("check", True):
        _check(payload, c.output())
    t0 = time.perf_counter()
    c.run()
    once = max(time.perf_counter() - t0, 1e-7)
    number = options.get("number") or max(1, int(options.get("min_repeat_ms", 20) / 1e3 / once))
    costs = []
    for _ in range(options.get("repeats", 3)):
        t0 = time.perf_counter()
        for _ in range(number):
            c.dev.run()
        c.dev.sync()
        costs.append((time.perf_counter() - t0) / number)
    return costs
