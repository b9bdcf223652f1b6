"""Run compiled models: load a ``.vtamod`` folder and execute its graph (numpy + ctypes only).

A ``.vtamod`` folder (written by ``compiler.build_model(...).save(path)``) holds
``graph.json`` (the execution plan, format "vtamod-1", see
``compiler/graph_lower/build.py``), ``kernels.so`` (one shared library of
kernels, C ABI ``int32 name(void *arg0, ...)``) and ``params.npz``.

GPU folders (format "vtamod-gpu-1", ``--target cuda|opencl``) are run by
``driver.gpu_runtime.GpuGraphModule``; :func:`load_module` picks it.

Nothing here imports the compiler, llvmlite or onnx: a deployment needs
numpy, the shared library and libgomp (the OpenMP runtime the kernels' parallel
loops call; Debian package ``libgomp1``).

Usage::

    m = load_module("out/resnet18.vtamod")
    m.set_input("input", x)          # or m.run(input=x)
    m.run()
    y = m.get_output(0)              # a copy, float32[1, 1000]
    print(m.benchmark(repeat=20))    # seconds per run (median)

All buffers (activation slots, scratch, inputs, params) are allocated once at
load time, 64-byte aligned, so ``run`` is a sequence of C calls on fixed
pointers with no Python allocation.

Thread count: libgomp's (``OMP_NUM_THREADS``, else one per core), read when
the first module loads; ``OMP_WAIT_POLICY`` defaults to ``passive`` here
because spinning workers starve other processes on shared machines.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import time

import numpy as np

FORMAT = "vtamod-1"
ALIGN = 64


class RuntimeModuleError(ValueError):
    """A module folder is missing, malformed or does not match its library, or an input is wrong."""


def _aligned(nbytes: int) -> np.ndarray:
    """A zeroed uint8 array of ``nbytes`` whose data starts on a 64-byte boundary."""
    raw = np.zeros(max(nbytes, 1) + ALIGN, np.uint8)
    off = (-raw.ctypes.data) % ALIGN
    return raw[off:off + max(nbytes, 1)]


def _aligned_copy(a: np.ndarray) -> np.ndarray:
    buf = _aligned(a.nbytes).view(a.dtype)[:a.size].reshape(a.shape)
    buf[...] = a
    return buf


def load_params(path: str) -> dict[str, np.ndarray]:
    """The arrays of a module's ``params.npz``; RuntimeModuleError for a truncated or foreign
    file (an interrupted copy), instead of zipfile's traceback."""
    import zipfile
    try:
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, AttributeError) as exc:
        raise RuntimeModuleError(f"{path}: cannot read the module's parameters ({exc}); the file "
                                 "is truncated or damaged: recompile the module with `vta compile`"
                                 ) from None


def check_shared_library(path: str) -> None:
    """RuntimeModuleError unless ``path`` is a whole ELF shared library: ``dlopen`` of a
    truncated one maps pages past the end of the file and the process dies of SIGBUS."""
    import struct
    import sys
    if not sys.platform.startswith("linux"):
        return  # other platforms' library formats: left to the loader
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        head = f.read(64)
    bad = None
    if len(head) < 64 or head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
        bad = "not a 64-bit little-endian ELF shared library"
    else:
        phoff, shoff = struct.unpack_from("<QQ", head, 32)
        phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", head, 54)
        end = max(phoff + phentsize * phnum, shoff + shentsize * shnum)
        with open(path, "rb") as f:
            f.seek(phoff)
            ph = f.read(phentsize * phnum)
        if len(ph) == phentsize * phnum:
            for k in range(phnum):
                _, _, off, _, _, filesz = struct.unpack_from("<IIQQQQ", ph, k * phentsize)
                end = max(end, off + filesz)
        if end > size:
            bad = f"truncated: {size} bytes, its headers need {end}"
    if bad:
        raise RuntimeModuleError(f"{path}: {bad}; recompile the module with `vta compile`")


_GOMP = None


def _load_libgomp():
    """Load the OpenMP runtime globally (kernels.so links against it)."""
    global _GOMP
    if _GOMP is None:
        os.environ.setdefault("OMP_WAIT_POLICY", "passive")
        names = ["libgomp.so.1", "libgomp.so"]
        found = ctypes.util.find_library("gomp")
        if found:
            names.append(found)
        for name in names:
            try:
                _GOMP = ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)
                break
            except OSError:
                continue
        else:
            raise RuntimeModuleError("compiled kernels need the OpenMP runtime libgomp.so.1 "
                                     "(Debian: apt-get install libgomp1)")
    return _GOMP


def num_threads() -> int:
    """Threads the kernels' parallel loops use (``omp_get_max_threads()``)."""
    lib = _load_libgomp()
    lib.omp_get_max_threads.restype = ctypes.c_int
    return int(lib.omp_get_max_threads())


class GraphModule:
    """A loaded compiled model: a graph executor with ``set_input`` / ``run`` / ``get_output``.

    Args:
        path: the ``.vtamod`` folder.

    Raises:
        RuntimeModuleError: a file is missing, the graph JSON has another
            format, a kernel or parameter it names is absent, or a parameter's
            shape differs from the kernel's argument.
    """

    def __init__(self, path: str):
        self.path = path
        files = {f: os.path.join(path, f) for f in ("graph.json", "kernels.so", "params.npz")}
        if not os.path.isdir(path):
            raise RuntimeModuleError(f"{path!r} is not a compiled module folder; create one with "
                                     "`vta compile model.onnx -o model.vtamod`")
        for name, p in files.items():
            if not os.path.isfile(p):
                raise RuntimeModuleError(f"module {path!r} has no {name}; recompile it with "
                                         "`vta compile`")
        with open(files["graph.json"]) as f:
            try:
                g = json.load(f)
            except json.JSONDecodeError as exc:
                raise RuntimeModuleError(f"{files['graph.json']} is not valid JSON: {exc}") from None
        if g.get("format") != FORMAT:
            raise RuntimeModuleError(f"{files['graph.json']} has format {g.get('format')!r}, this "
                                     f"runtime reads {FORMAT!r}; recompile the model")
        self.graph = g
        _load_libgomp()
        check_shared_library(files["kernels.so"])
        self._params = {k: _aligned_copy(v) for k, v in load_params(files["params.npz"]).items()}
        self._lib = ctypes.CDLL(os.path.abspath(files["kernels.so"]))
        self._slots = [_aligned(n) for n in g["slots"]]
        self._workspace = _aligned(g["workspace_bytes"])
        self._inputs = [_aligned(int(np.prod(i["shape"])) * np.dtype(i["dtype"]).itemsize)
                        .view(i["dtype"]).reshape(i["shape"]) for i in g["inputs"]]
        self.input_names = [i["name"] for i in g["inputs"]]
        self.output_names = [o["name"] for o in g["outputs"]]
        self._calls = []
        for call in g["calls"]:
            name = call["kernel"]
            try:
                fn = getattr(self._lib, name)
            except AttributeError:
                raise RuntimeModuleError(f"kernel {name!r} named in graph.json is not in "
                                         f"{files['kernels.so']}; the files do not belong together") from None
            fn.restype = ctypes.c_int32
            spec = g["kernels"][name]
            ptrs = []
            for ref, arg in zip(call["args"], spec):
                buf = self._buffer(ref)
                need = int(np.prod(arg["shape"])) * np.dtype(arg["dtype"]).itemsize
                if buf.nbytes < need:
                    raise RuntimeModuleError(f"kernel {name}: argument {ref} holds {buf.nbytes} bytes, "
                                             f"needs {need} ({arg['dtype']}{arg['shape']})")
                ptrs.append(ctypes.c_void_p(buf.ctypes.data))
            fn.argtypes = [ctypes.c_void_p] * len(ptrs)
            self._calls.append((fn, tuple(ptrs), name))
        self._outputs = [self._view(o["ref"], o["shape"], o["dtype"]) for o in g["outputs"]]

    # ------------------------------------------------------------ buffers
    def _buffer(self, ref: dict) -> np.ndarray:
        kind = ref["kind"]
        if kind == "slot":
            return self._slots[ref["slot"]]
        if kind == "input":
            return self._inputs[ref["index"]]
        if kind == "param":
            if ref["name"] not in self._params:
                raise RuntimeModuleError(f"parameter {ref['name']!r} is missing from params.npz")
            return self._params[ref["name"]]
        if kind == "workspace":
            return self._workspace[ref["offset"]:]
        raise RuntimeModuleError(f"unknown buffer kind {kind!r} in graph.json")

    def _view(self, ref, shape, dtype) -> np.ndarray:
        buf = self._buffer(ref)
        n = int(np.prod(shape)) * np.dtype(dtype).itemsize
        return buf.reshape(-1).view(np.uint8)[:n].view(dtype).reshape(shape)

    # ------------------------------------------------------------ API
    @property
    def num_outputs(self) -> int:
        return len(self._outputs)

    def input_info(self) -> list:
        """``[(name, shape, dtype)]`` of the inputs."""
        return [(i["name"], tuple(i["shape"]), i["dtype"]) for i in self.graph["inputs"]]

    def output_info(self) -> list:
        """``[(name, shape, dtype)]`` of the outputs."""
        return [(o["name"], tuple(o["shape"]), o["dtype"]) for o in self.graph["outputs"]]

    def set_input(self, key, value) -> None:
        """Copy ``value`` into input ``key`` (a name or an index).

        Raises:
            RuntimeModuleError: unknown input, or a shape that differs from the
                compiled one (the dtype is converted).
        """
        i = self._index(key)
        value = np.asarray(value)
        dst = self._inputs[i]
        if value.shape != dst.shape:
            raise RuntimeModuleError(f"input {self.input_names[i]!r} has shape {list(value.shape)}, "
                                     f"the module was compiled for {list(dst.shape)}; recompile "
                                     f"with --input-shape {self.input_names[i]}:"
                                     + "x".join(map(str, value.shape)))
        dst[...] = value

    def _index(self, key) -> int:
        if isinstance(key, (int, np.integer)):
            if not 0 <= key < len(self._inputs):
                raise RuntimeModuleError(f"input index {key} out of range; the module has "
                                         f"{len(self._inputs)} input(s)")
            return int(key)
        if key not in self.input_names:
            raise RuntimeModuleError(f"no input named {key!r}; inputs: {', '.join(self.input_names)}")
        return self.input_names.index(key)

    def run(self, **inputs) -> None:
        """Run every kernel in order (after setting any ``inputs`` given by name).

        Raises:
            RuntimeError: a kernel returned non-zero.
        """
        for k, v in inputs.items():
            self.set_input(k, v)
        for fn, ptrs, name in self._calls:
            rc = fn(*ptrs)
            if rc:
                raise RuntimeError(f"kernel {name} failed with code {rc}")

    def get_output(self, index: int = 0) -> np.ndarray:
        """A copy of output ``index``."""
        if not 0 <= index < len(self._outputs):
            raise RuntimeModuleError(f"output index {index} out of range; the module has "
                                     f"{len(self._outputs)} output(s)")
        return self._outputs[index].copy()

    def __call__(self, *args, **kwargs) -> list:
        """Set inputs (positionally or by name), run, return all outputs (copies)."""
        for i, a in enumerate(args):
            self.set_input(i, a)
        self.run(**kwargs)
        return [o.copy() for o in self._outputs]

    def benchmark(self, repeat: int = 10, warmup: int = 2) -> dict:
        """Time ``run``: ``{"median_s", "min_s", "mean_s", "repeat"}`` (seconds)."""
        for _ in range(warmup):
            self.run()
        times = []
        for _ in range(repeat):
            t = time.perf_counter()
            self.run()
            times.append(time.perf_counter() - t)
        return {"median_s": float(np.median(times)), "min_s": float(min(times)),
                "mean_s": float(np.mean(times)), "repeat": repeat}

    def profile(self, repeat: int = 5) -> list:
        """Per-call times: ``[(kernel, node label, median seconds)]`` in execution order."""
        labels = [c.get("node", "") for c in self.graph["calls"]]
        times = [[] for _ in self._calls]
        self.run()
        for _ in range(repeat):
            for i, (fn, ptrs, name) in enumerate(self._calls):
                t = time.perf_counter()
                fn(*ptrs)
                times[i].append(time.perf_counter() - t)
        return [(name, label, float(np.median(ts)))
                for (fn, ptrs, name), label, ts in zip(self._calls, labels, times)]

    def __repr__(self) -> str:
        return (f"<GraphModule {self.path}: {len(self._calls)} calls, inputs "
                f"{[(n, s) for n, s, _ in self.input_info()]}>")


def load_module(path: str):
    """Load a ``.vtamod`` folder: a :class:`GraphModule` (CPU), or for a GPU module
    (graph.json format "vtamod-gpu-1") a ``driver.gpu_runtime.GpuGraphModule``."""
    gj = os.path.join(path, "graph.json")
    if os.path.isfile(gj):
        with open(gj) as f:
            try:
                fmt = json.load(f).get("format")
            except (json.JSONDecodeError, AttributeError):
                fmt = None
        if fmt == "vtamod-gpu-1":
            from driver.gpu_runtime import GpuGraphModule
            return GpuGraphModule(path)
    return GraphModule(path)
