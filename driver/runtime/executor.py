"""The graph executor: one module's execution plan run on fixed buffers (numpy + ctypes).

Calls run in order: ``"kernel"`` calls are C calls into the module's kernels.so
(``int32 name(void *arg0, ...)``); ``"vta"`` calls run an accelerator program on the
module's device (``vta_call.py``). Every buffer (activation slots, scratch, inputs,
params) is allocated once at load time, 64-byte aligned, so ``run`` is a sequence of
calls on fixed pointers with no Python allocation.

Usage (``driver.runtime.load_module`` builds it)::

    m = load_module("out/resnet18.vtamod")
    m.set_input("input", x)          # or m.run(input=x); x: numpy, torch, any DLPack producer
    m.run()
    y = m.get_output(0)              # a copy, float32[1, 1000]
    v = m.get_output(0, copy=False)  # a DLPack view of the planned memory, valid until the next run
    t = torch.from_dlpack(v)         # no copy

Zero copy (``dlpack.py``): ``set_input`` runs the kernels on the caller's memory when the
value is a CPU array or DLPack producer of the compiled dtype and shape, C-contiguous and
64-byte aligned (the kernels then read it at every ``run`` until the next ``set_input``
of that input); otherwise it copies. Inputs that accelerator programs read are copied.
    print(m.benchmark(repeat=20))    # seconds per run (median)
    m.stats()                        # accelerator modules: cycles, GEMM utilization, DRAM bytes
"""
from __future__ import annotations

import ctypes
import time

import numpy as np

from .dlpack import Array, host_array, shareable
from .plan import check_params, check_plan
from .errors import RuntimeModuleError
from .input_check import check_input
from .native import aligned, aligned_copy, elf_problem, open_library
from .vta_call import vta_call


class GraphModule:
    """A loaded model (CPU or accelerator): ``set_input`` / ``run`` / ``get_output``.

    Args:
        source: a ``driver.runtime.source.ModuleSource`` (checked folder or memory).
        device: the ``driver.device.Device`` of an accelerator module (None for CPU ones).
        timeout_s: seconds one accelerator program run may take (None: no limit).

    Attributes:
        graph: the execution plan; ``targets``: the manifest's targets; ``kind``:
        ``"cpu"`` or ``"vta"`` (accelerator);
        device: the accelerator device or None; ``path``: the folder (or a label).

    Raises:
        RuntimeModuleError: a malformed plan or one needing more memory than this machine
            has (``plan.py``), a kernel, parameter or program the plan names is absent or
            of another shape, a buffer is smaller than its kernel argument, or kernels.so
            is no library.
    """

    def __init__(self, source, device=None, timeout_s: "float | None" = None):
        self.path, self.graph = source.where, source.graph
        self.targets, self.kind = source.targets, source.kind
        self.cpu_variant = source.variant_name
        self.device, self.timeout_s = device, timeout_s
        g = self.graph
        check_plan(g, self.path)
        params = source.params()
        check_params(g, params, self.path)
        self._params = {k: aligned_copy(v) for k, v in params.items()}
        self._slots = [aligned(n) for n in g["slots"]]
        self._workspace = aligned(g.get("workspace_bytes", 0))
        self._inputs = [aligned(int(np.prod(i["shape"])) * np.dtype(i["dtype"]).itemsize)
                        .view(i["dtype"]).reshape(i["shape"]) for i in g["inputs"]]
        self.input_names = [i["name"] for i in g["inputs"]]
        self.output_names = [o["name"] for o in g["outputs"]]
        self._layers: dict = {}
        self._layer_keys: dict = {}     # program -> key in self._layers
        kinds = {c.get("kind", "kernel") for c in g["calls"]}
        self._lib = self._open_library(source) if "kernel" in kinds else None
        self._loaded: dict = {}
        self._calls = [self._bind(c, source) for c in g["calls"]]
        self._outputs = [self._view(o["ref"], o["shape"], o["dtype"]) for o in g["outputs"]]
        self._own_inputs = list(self._inputs)
        self._input_args, self._input_shared = self._input_uses()

    def _input_uses(self) -> tuple:
        """Per input: the (call, argument) positions of kernel calls that read it, and
        whether the kernels may read it from caller memory (no vta call or output uses it)."""
        uses = [[] for _ in self._inputs]
        fixed = set()
        for ci, call in enumerate(self.graph["calls"]):
            if call.get("kind", "kernel") == "kernel":
                for ai, ref in enumerate(call["args"]):
                    if ref["kind"] == "input":
                        uses[ref["index"]].append((ci, ai))
            else:
                fixed |= {e["ref"]["index"] for e in call["inputs"] if e["ref"]["kind"] == "input"}
        fixed |= {o["ref"]["index"] for o in self.graph["outputs"] if o["ref"]["kind"] == "input"}
        return uses, [i not in fixed for i in range(len(self._inputs))]

    def _point_input(self, i: int, array: np.ndarray) -> None:
        """Make the kernel calls that read input ``i`` read ``array`` (kept alive here)."""
        self._inputs[i] = array
        for ci, ai in self._input_args[i]:
            fn, ptrs, name = self._calls[ci]
            ptrs = list(ptrs)
            ptrs[ai] = ctypes.c_void_p(array.ctypes.data)
            self._calls[ci] = (fn, tuple(ptrs), name)

    def _open_library(self, source):
        lib = source.library()
        where = f"{self.path}/kernels.so"
        bad = elf_problem(lib)
        if bad:
            raise RuntimeModuleError(f"{where}: {bad}; recompile the module with `vta compile`")
        return open_library(lib)

    def _bind(self, call: dict, source) -> tuple:
        """``(fn, args, name)``: ``fn(*args)`` performs the call and returns 0 on success."""
        kind = call.get("kind", "kernel")
        if kind == "vta":
            if self.device is None:
                raise RuntimeModuleError(f"{self.path}: call {call.get('node')!r} runs on the "
                                         "accelerator but the module has no device; load it "
                                         "with load_module(path, device='tsim')")
            name = call["program"]
            if name not in self._loaded:
                prog = source.program(name)
                self._loaded[name] = (prog, self.device.load(prog))
            prog, loaded = self._loaded[name]
            fn = vta_call(call, prog, loaded, self.device, self._view, self.timeout_s,
                          self._layers, self._layer_key(call.get("node") or name, name))
            return fn, (), call.get("node") or name
        if kind != "kernel":
            raise RuntimeModuleError(f"{self.path}: graph.json has a call of kind {kind!r}; this "
                                     "runtime runs 'kernel' and 'vta' calls: recompile the module")
        name = call["kernel"]
        try:
            fn = getattr(self._lib, name)
        except AttributeError:
            raise RuntimeModuleError(f"kernel {name!r} named in graph.json is not in "
                                     f"{self.path}/kernels.so; the files do not belong "
                                     "together") from None
        fn.restype = ctypes.c_int32
        ptrs = []
        for ref, arg in zip(call["args"], self.graph["kernels"][name]):
            buf = self._buffer(ref)
            need = int(np.prod(arg["shape"])) * np.dtype(arg["dtype"]).itemsize
            if buf.nbytes < need:
                raise RuntimeModuleError(f"kernel {name}: argument {ref} holds {buf.nbytes} bytes, "
                                         f"needs {need} ({arg['dtype']}{arg['shape']})")
            ptrs.append(ctypes.c_void_p(buf.ctypes.data))
        fn.argtypes = [ctypes.c_void_p] * len(ptrs)
        return fn, tuple(ptrs), name

    def _layer_key(self, label: str, program: str) -> str:
        """The counters key of ``program``'s calls: its node label, made unique (``label#2``,
        ...) when another program's calls already use that label (repeated node names)."""
        keys = self._layer_keys
        if program not in keys:
            taken = set(keys.values())
            key, k = label, 2
            while key in taken:
                key, k = f"{label}#{k}", k + 1
            keys[program] = key
        return keys[program]

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
        flat = buf.reshape(-1).view(np.uint8)
        if flat.nbytes < n:
            raise RuntimeModuleError(f"buffer {ref} holds {flat.nbytes} bytes, the plan reads "
                                     f"{dtype}{list(shape)} ({n} bytes) from it; recompile")
        return flat[:n].view(dtype).reshape(shape)

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

    def set_input(self, key, value) -> bool:
        """Set input ``key`` (a name or an index) from ``value``: a numpy array, a DLPack
        producer (torch tensor, ...) or anything ``np.asarray`` takes.

        Returns:
            True when the kernels will read ``value``'s memory directly (no copy: the
            compiled dtype and shape, C-contiguous, 64-byte aligned, an input no
            accelerator program reads); False when it was copied (the dtype converted).
            A shared value is read at every ``run`` until the next ``set_input`` of the
            input, so changes to it show in the next run.

        Raises:
            RuntimeModuleError: unknown input, a shape that differs from the compiled one,
                a producer that refuses DLPack export (a GPU tensor, one requiring grad), or
                NaN in an input an accelerator model quantizes (``input_check``).

        Warns:
            InputRangeWarning: values beyond such an input's calibrated range.
            InputNaNWarning: NaN in a float input the model reads as it is.
        """
        i = self._index(key)
        name = self.input_names[i]
        value = host_array(value, f"input {name!r}")
        dst = self._own_inputs[i]
        if value.shape != dst.shape:
            fix = f"give {dst.dtype}{list(dst.shape)}"
            if value.ndim == dst.ndim:   # another size of the same rank: a recompile can take it
                fix += (", or recompile the model for this shape (vta compile --input-shape "
                        f"{name}:{'x'.join(map(str, value.shape))})")
            raise RuntimeModuleError(f"input {name!r} has shape {list(value.shape)}, the module "
                                     f"was compiled for {list(dst.shape)}; {fix}")
        check_input(name, value, self.graph["inputs"][i].get("range"))
        if self._input_shared[i] and shareable(value, dst.shape, dst.dtype):
            self._point_input(i, value)
            return True
        if self._inputs[i] is not dst:
            self._point_input(i, dst)
        dst[...] = value
        return False

    def get_input(self, key, copy: bool = True):
        """Input ``key`` as the kernels will read it: an owning copy, or with ``copy=False``
        an :class:`~driver.runtime.dlpack.Array` view of that memory (the caller's own after a
        shared ``set_input``)."""
        a = self._inputs[self._index(key)]
        return a.copy() if copy else Array(a, self)

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
        """Run every call in order (after setting any ``inputs`` given by name).

        Raises:
            RuntimeError: a kernel returned non-zero.
            driver.device.DeviceError: an accelerator run failed or timed out.
        """
        for k, v in inputs.items():
            self.set_input(k, v)
        for fn, ptrs, name in self._calls:
            rc = fn(*ptrs)
            if rc:
                raise RuntimeError(f"kernel {name} failed with code {rc}")

    def get_output(self, index: int = 0, copy: bool = True):
        """Output ``index``: an owning numpy copy, or with ``copy=False`` a
        :class:`~driver.runtime.dlpack.Array` view of the executor's planned memory that
        ``torch.from_dlpack`` / ``np.from_dlpack`` take without a copy. The view (and any
        tensor made from it) is valid until the next ``run()`` of this module, which
        overwrites that memory; take ``.copy()`` to keep a result."""
        if not 0 <= index < len(self._outputs):
            raise RuntimeModuleError(f"output index {index} out of range; the module has "
                                     f"{len(self._outputs)} output(s)")
        return self._outputs[index].copy() if copy else Array(self._outputs[index], self)

    def __call__(self, *args, **kwargs) -> list:
        """Set inputs (positionally or by name), run, return all outputs (copies)."""
        for i, a in enumerate(args):
            self.set_input(i, a)
        self.run(**kwargs)
        return [o.copy() for o in self._outputs]

    def trace(self, *args, **kwargs) -> list:
        """Run once (inputs as for ``__call__``), keeping what every call wrote:
        ``[(call, value)]`` in execution order, ``call`` the graph.json call and ``value``
        a copy of its result (a kernel's last argument, shaped as in ``kernels``; a vta
        call's first output, shaped as the program's buffer). For comparing every layer
        with a reference.

        Raises:
            as :meth:`run`.
        """
        for i, a in enumerate(args):
            self.set_input(i, a)
        for k, v in kwargs.items():
            self.set_input(k, v)
        out = []
        for (fn, ptrs, name), call in zip(self._calls, self.graph["calls"]):
            rc = fn(*ptrs)
            if rc:
                raise RuntimeError(f"kernel {name} failed with code {rc}")
            if call.get("kind", "kernel") == "kernel":
                spec = self.graph["kernels"][call["kernel"]][-1]
                v = self._view(call["args"][-1], spec["shape"], spec["dtype"])
            else:
                prog = self._loaded[call["program"]][0]
                b = prog.buffer(call["outputs"][0]["buffer"])
                v = self._view(call["outputs"][0]["ref"], b.shape, b.dtype)
            out.append((call, v.copy()))
        return out

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
        """Per-call times: ``[(kernel or program, node label, median seconds)]`` in order."""
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

    def stats(self) -> dict:
        """Accelerator counters over every run since loading: ``device`` (backend name, None
        for CPU modules), ``runs`` (program runs), ``cycles``, ``gemm_utilization`` (MACs /
        (cycles x peak)), ``dram_bytes`` (read + written) and ``layers``: node label
        (``label#2``, ... for a label that several programs share) ->
        ``{name, runs, cycles, gemm_macs, dram_bytes}``. ``cycles`` and ``gemm_utilization``
        are None on a backend without timing (fsim). ``cpu_variant``: the CPU variant of a
        fleet module this machine loaded (``"x86-64-v3"``; ``variants.py``), else None."""
        if self.device is None:
            return {"device": None, "runs": 0, "cycles": 0, "gemm_utilization": 0.0,
                    "dram_bytes": 0, "layers": {}, "cpu_variant": self.cpu_variant}
        c = self.device.counters
        timed = self.device.backend.timed
        return {"device": self.device.backend_name, "cpu_variant": self.cpu_variant,
                "runs": c["runs"],
                "cycles": c["cycles"] if timed else None,
                "gemm_utilization": self.device.gemm_utilization() if timed else None,
                "dram_bytes": c["dram_read_bytes"] + c["dram_write_bytes"],
                "layers": self._layers}

    def __repr__(self) -> str:
        dev = f" on {self.device.backend_name}" if self.device is not None else ""
        return (f"<GraphModule {self.path}{dev}: {len(self._calls)} calls, inputs "
                f"{[(n, s) for n, s, _ in self.input_info()]}>")
