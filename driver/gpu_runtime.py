"""Run compiled GPU models: modules whose target is cuda or opencl (numpy + the GPU API).

The module (``compiler.build_model(..., target="cuda"|"opencl")``, saved as a folder
of the one module format, version 3, or in memory; plan in
``compiler/graph_lower/gpu.py``) holds ``graph.json``, ``params.npz`` and the
kernels: ``kernels.cubin`` (CUDA, loaded with the driver API from
``cuda-bindings``) or ``kernels.cl`` (OpenCL C, built with pyopencl on the first
OpenCL device; PoCL on machines without a GPU). Nothing here imports the compiler.

Usage (``driver.runtime.load_module`` checks the folder and picks this class for GPU modules)::

    m = load_module("out/resnet18_cuda.vtamod")
    y = m(x)[0]                      # set inputs, run, copy outputs back
    print(m.benchmark(repeat=50))    # seconds per run (median), device-synchronised

Every buffer (activation slots, scratch, inputs, params) lives in device memory,
allocated once at load time; ``run`` only enqueues kernel launches (on CUDA,
after the first run, one CUDA graph replay when the driver allows it).
"""
from __future__ import annotations

import logging
import time

import numpy as np

from driver.runtime.dlpack import host_array
from vta_hw.errors import VtaError

_log = logging.getLogger(__name__)


class GpuModuleError(VtaError, ValueError):
    """A GPU module folder is malformed, or its device API is missing."""


def _nbytes(spec) -> int:
    return int(np.prod(spec["shape"])) * np.dtype(spec["dtype"]).itemsize


class _Cuda:
    """CUDA driver API backend: device 0's primary context, one stream."""

    def __init__(self, source):
        path = source.where
        try:
            from cuda.bindings import driver
        except ImportError:
            raise GpuModuleError(f"{path} is a CUDA module: running it needs cuda-bindings (pip "
                                 "install cuda-bindings) and an NVIDIA driver; or compile with "
                                 "--target llvm or opencl") from None
        self.drv = driver
        try:
            self._check(driver.cuInit(0), "cuInit")
        except RuntimeError as e:  # DynamicLibNotFoundError (no libcuda), CUDA_ERROR_NO_DEVICE
            raise GpuModuleError(f"{path} is a CUDA module and no usable NVIDIA driver or device "
                                 f"was found ({e}); compile with --target llvm or opencl") from None
        dev = self._check(driver.cuDeviceGet(0), "cuDeviceGet")
        self.ctx = self._check(driver.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
        self._check(driver.cuCtxSetCurrent(self.ctx), "cuCtxSetCurrent")
        self.module = self._check(driver.cuModuleLoadData(source.read("kernels.cubin")),
                                  "cuModuleLoadData")
        self.stream = self._check(driver.cuStreamCreate(0), "cuStreamCreate")
        self.graph_exec = None
        self.allocs = []

    def _check(self, res, what):
        err = res[0]
        if int(err) != 0:
            _, msg = self.drv.cuGetErrorString(err)
            raise RuntimeError(f"{what} failed: {err} ({msg.decode() if msg else '?'})")
        return res[1] if len(res) == 2 else res[1:]

    def alloc(self, nbytes):
        p = self._check(self.drv.cuMemAlloc(max(nbytes, 1)), "cuMemAlloc")
        self.allocs.append(p)
        return int(p)

    def upload(self, buf, a):
        a = np.ascontiguousarray(a)
        self._check(self.drv.cuMemcpyHtoD(buf, a.ctypes.data, a.nbytes), "cuMemcpyHtoD")

    def download(self, buf, out):
        self.sync()
        self._check(self.drv.cuMemcpyDtoH(out.ctypes.data, buf, out.nbytes), "cuMemcpyDtoH")

    def prepare(self, calls):
        self.launches = []
        for name, grid, block, bufs in calls:
            fn = self._check(self.drv.cuModuleGetFunction(self.module, name.encode()),
                             f"cuModuleGetFunction({name})")
            holders = [np.array([b], dtype=np.uint64) for b in bufs]
            argv = np.array([h.ctypes.data for h in holders], dtype=np.uint64)
            self.launches.append((fn, tuple(grid), tuple(block), holders, argv, name))

    def launch_one(self, i):
        fn, g, b, _, argv, name = self.launches[i]
        self._check(self.drv.cuLaunchKernel(fn, *g, *b, 0, self.stream, argv.ctypes.data, 0),
                    f"cuLaunchKernel({name})")

    def _enqueue(self):
        launch = self.drv.cuLaunchKernel
        for fn, g, b, _, argv, name in self.launches:
            err = launch(fn, *g, *b, 0, self.stream, argv.ctypes.data, 0)[0]
            if int(err) != 0:
                raise RuntimeError(f"cuLaunchKernel({name}) failed: {err}")

    def run(self, graph: bool = True):
        if graph and self.graph_exec is None:
            exe = self._capture()
            self.graph_exec = False if exe is None else exe
        if graph and self.graph_exec is not False:
            self._check(self.drv.cuGraphLaunch(self.graph_exec, self.stream), "cuGraphLaunch")
        else:
            self._enqueue()

    def _capture(self):
        """One CUDA graph of all launches, or None when capture is not possible here (older
        drivers or bindings); then a warning on the ``driver.gpu_runtime`` logger says why and
        ``run`` launches the kernels one by one, with the same results."""
        d = self.drv
        try:
            mode = d.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
            self._check(d.cuStreamBeginCapture(self.stream, mode), "cuStreamBeginCapture")
            try:
                self._enqueue()
            finally:
                g = self._check(d.cuStreamEndCapture(self.stream), "cuStreamEndCapture")
            return self._check(d.cuGraphInstantiate(g, 0), "cuGraphInstantiate")
        except (RuntimeError, AttributeError) as e:  # a failed call; bindings without the enum
            _log.warning("CUDA graph capture failed (%s); launching the %d kernels one by one "
                         "instead", e, len(self.launches))
            return None

    def sync(self):
        self._check(self.drv.cuStreamSynchronize(self.stream), "cuStreamSynchronize")


class _OpenCL:
    """pyopencl backend on the first OpenCL device."""

    def __init__(self, source):
        try:
            import pyopencl as cl
        except ImportError:
            raise GpuModuleError("running an OpenCL module needs pyopencl and an OpenCL driver "
                                 "(PoCL: apt-get install pocl-opencl-icd)") from None
        self.cl = cl
        devs = [d for p in cl.get_platforms() for d in p.get_devices()]
        if not devs:
            raise GpuModuleError("no OpenCL device found")
        self.ctx = cl.Context([devs[0]])
        self.queue = cl.CommandQueue(self.ctx)
        src = source.read("kernels.cl").decode()
        self.program = cl.Program(self.ctx, src).build()

    def alloc(self, nbytes):
        return self.cl.Buffer(self.ctx, self.cl.mem_flags.READ_WRITE, max(nbytes, 4))

    def upload(self, buf, a):
        self.cl.enqueue_copy(self.queue, buf, np.ascontiguousarray(a))

    def download(self, buf, out):
        self.cl.enqueue_copy(self.queue, out, buf, is_blocking=True)

    def prepare(self, calls):
        self.launches = []
        for name, grid, block, bufs in calls:
            k = self.cl.Kernel(self.program, name)
            gsize = tuple(g * b for g, b in zip(grid, block))
            self.launches.append((k, gsize, tuple(block), bufs))

    def launch_one(self, i):
        k, gsize, block, bufs = self.launches[i]
        k.set_args(*bufs)
        self.cl.enqueue_nd_range_kernel(self.queue, k, gsize, block)

    def run(self, graph: bool = True):
        for k, gsize, block, bufs in self.launches:
            k.set_args(*bufs)
            self.cl.enqueue_nd_range_kernel(self.queue, k, gsize, block)

    def sync(self):
        self.queue.finish()


#: GPU target kind -> device backend: ``Backend(source)`` (``source.read(file)``, ``source.where``)
#: with alloc, upload, download, prepare(calls), launch_one, run, sync
BACKENDS = {"cuda": _Cuda, "opencl": _OpenCL}


class GpuGraphModule:
    """A loaded GPU model: ``set_input`` / ``run`` / ``get_output`` as ``runtime.GraphModule``.

    Args:
        source: a ``driver.runtime.source.ModuleSource`` (a checked folder, or memory).

    Attributes:
        target: ``"cuda -arch=sm_90"`` or ``"opencl"``; ``device``: None (no accelerator).

    Raises:
        GpuModuleError: a missing kernel file, parameter or device API.
    """

    device = None
    kind = "gpu"

    def __init__(self, source):
        self.path, self.graph = source.where, source.graph
        self.targets = source.targets
        self.target = self.targets[0]
        g = self.graph
        kind = self.target.split()[0]
        need = "kernels.cubin" if kind == "cuda" else "kernels.cl"
        if not source.has(need):
            raise GpuModuleError(f"module {self.path!r} has no {need}; recompile it with `vta "
                                 f"compile --target {kind}`")
        self.dev = BACKENDS[kind](source)
        host_params = source.params()
        self._params = {}
        for k, v in host_params.items():
            self._params[k] = self.dev.alloc(v.nbytes)
            self.dev.upload(self._params[k], v)
        self._slots = [self.dev.alloc(n) for n in g["slots"]]
        self._scratch = [self.dev.alloc(n) for n in g.get("scratch_bytes", [])]
        self._inputs = [self.dev.alloc(_nbytes(i)) for i in g["inputs"]]
        self.input_names = [i["name"] for i in g["inputs"]]
        self.output_names = [o["name"] for o in g["outputs"]]
        calls = []
        for c in g["calls"]:
            bufs = [self._buffer(r) for r in c["args"]]
            calls.append((c["kernel"], c["grid"], c["block"], bufs))
        self.dev.prepare(calls)

    def _buffer(self, ref):
        kind = ref["kind"]
        if kind == "slot":
            return self._slots[ref["slot"]]
        if kind == "input":
            return self._inputs[ref["index"]]
        if kind == "scratch":
            return self._scratch[ref["index"]]
        if kind == "param":
            if ref["name"] not in self._params:
                raise GpuModuleError(f"parameter {ref['name']!r} is missing from params.npz")
            return self._params[ref["name"]]
        raise GpuModuleError(f"unknown buffer kind {kind!r} in graph.json")

    def input_info(self) -> list:
        return [(i["name"], tuple(i["shape"]), i["dtype"]) for i in self.graph["inputs"]]

    def output_info(self) -> list:
        return [(o["name"], tuple(o["shape"]), o["dtype"]) for o in self.graph["outputs"]]

    @property
    def num_outputs(self) -> int:
        return len(self.graph["outputs"])

    def set_input(self, key, value) -> None:
        i = key if isinstance(key, (int, np.integer)) else self.input_names.index(key)
        spec = self.graph["inputs"][i]
        value = np.ascontiguousarray(host_array(value, f"input {spec['name']!r}"),
                                     dtype=spec["dtype"])
        if list(value.shape) != list(spec["shape"]):
            raise GpuModuleError(f"input {spec['name']!r} has shape {list(value.shape)}, the module "
                                 f"was compiled for {spec['shape']}")
        self.dev.upload(self._inputs[i], value)

    def run(self, **inputs) -> None:
        for k, v in inputs.items():
            self.set_input(k, v)
        self.dev.run()

    def get_output(self, index: int = 0) -> np.ndarray:
        o = self.graph["outputs"][index]
        out = np.empty(o["shape"], o["dtype"])
        ref = o["ref"]
        if ref["kind"] == "param" and ref["name"] in self._params:
            self.dev.download(self._params[ref["name"]], out)
        else:
            self.dev.download(self._buffer(ref), out)
        return out

    def __call__(self, *args, **kwargs) -> list:
        for i, a in enumerate(args):
            self.set_input(i, a)
        self.run(**kwargs)
        return [self.get_output(i) for i in range(self.num_outputs)]

    def benchmark(self, repeat: int = 20, warmup: int = 3) -> dict:
        """Seconds per ``run`` (device-synchronised each run): median, min, mean."""
        for _ in range(warmup):
            self.run()
        self.dev.sync()
        times = []
        for _ in range(repeat):
            t = time.perf_counter()
            self.run()
            self.dev.sync()
            times.append(time.perf_counter() - t)
        return {"median_s": float(np.median(times)), "min_s": float(min(times)),
                "mean_s": float(np.mean(times)), "repeat": repeat,
                "cuda_graph": getattr(self.dev, "graph_exec", False) not in (None, False)}

    def profile(self, repeat: int = 3) -> list:
        """Per-launch times: ``[(kernel, node label, median seconds)]`` in execution order
        (each launch synchronised alone, so launch overhead is included)."""
        self.run()
        self.dev.sync()
        launches = self.dev.launches
        times = [[] for _ in launches]
        for _ in range(repeat):
            for i in range(len(launches)):
                t = time.perf_counter()
                self.dev.launch_one(i)
                self.dev.sync()
                times[i].append(time.perf_counter() - t)
        return [(c["kernel"], c.get("node", ""), float(np.median(ts)))
                for c, ts in zip(self.graph["calls"], times)]

    def stats(self) -> dict:
        """No accelerator counters on a GPU (the same keys as ``GraphModule.stats``)."""
        return {"device": None, "runs": 0, "cycles": 0, "gemm_utilization": 0.0,
                "dram_bytes": 0, "layers": {}}

    def __repr__(self) -> str:
        return f"<GpuGraphModule {self.path}: {len(self.graph['calls'])} launches ({self.target})>"
