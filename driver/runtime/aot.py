"""The AOT executor's runner: one call into the module's entry (numpy + ctypes).

An AOT module (``executor: "aot"`` in its manifest; ``compiler/graph_lower/aot.py``)
holds ``model.so``: the kernels, the parameters as constant data, and one entry
``int32_t <prefix>run(void *const *inputs, void *const *outputs, void *workspace)``
(``vtamod_run`` unless compiled with ``--aot-prefix``; the manifest's ``aot.entry``
names it) that runs the whole plan. :class:`AotModule` owns the 64-byte aligned input, output
and workspace buffers (the manifest states the workspace size) and makes ``run`` that
single C call; ``set_input`` / ``get_output`` / ``benchmark`` behave as for
:class:`~driver.runtime.executor.GraphModule`, whose interface it shares. Inputs are
always copied into the module's buffers (the entry reads fixed pointers).
"""
from __future__ import annotations

import ctypes

import numpy as np

from .errors import RuntimeModuleError
from .executor import GraphModule
from .native import aligned, elf_problem, open_library


class AotModule(GraphModule):
    """A loaded AOT module: ``set_input`` / ``run`` / ``get_output`` as ``GraphModule``.

    Args:
        source: a ``driver.runtime.source.ModuleSource`` whose manifest says
            ``"executor": "aot"`` and names ``aot.object`` (``model.so``) and ``aot.entry``.

    Attributes:
        workspace_bytes, constant_bytes: the manifest's sizes (bytes).

    Raises:
        RuntimeModuleError: no ``aot`` entry in the manifest, a library that is not a
            whole ELF shared library (a cross module's ``model.o``: link it with
            ``driver/aot/harness.c``), or a library without the entry symbol.
    """

    def __init__(self, source):
        self.path, self.graph = source.where, source.graph
        self.targets, self.kind = source.targets, source.kind
        self.device, self.timeout_s = None, None
        info = source.manifest.get("aot")
        if not isinstance(info, dict) or not {"entry", "object", "workspace_bytes"} <= set(info):
            raise RuntimeModuleError(f"{self.path}: an AOT module whose manifest has no complete "
                                     "'aot' entry (entry, object, workspace_bytes); recompile "
                                     "it with `vta compile --executor aot`")
        self.workspace_bytes = int(info["workspace_bytes"])
        self.constant_bytes = int(info.get("constant_bytes", 0))
        g = self.graph
        self._workspace = aligned(self.workspace_bytes)
        self._own_inputs = [aligned(int(np.prod(s["shape"])) * np.dtype(s["dtype"]).itemsize)
                            .view(s["dtype"]).reshape(s["shape"]) for s in g["inputs"]]
        self._inputs = list(self._own_inputs)
        self._outputs = [aligned(int(np.prod(s["shape"])) * np.dtype(s["dtype"]).itemsize)
                         .view(s["dtype"]).reshape(s["shape"]) for s in g["outputs"]]
        self.input_names = [s["name"] for s in g["inputs"]]
        self.output_names = [s["name"] for s in g["outputs"]]
        self._input_args = [[] for _ in self._inputs]
        self._input_shared = [False] * len(self._inputs)
        self._layers = {}
        self._lib = self._open(source, info["object"])
        try:
            fn = getattr(self._lib, info["entry"])
        except AttributeError:
            raise RuntimeModuleError(f"{self.path}/{info['object']} has no entry "
                                     f"{info['entry']!r}; recompile it with `vta compile "
                                     "--executor aot`") from None
        fn.restype = ctypes.c_int32
        fn.argtypes = [ctypes.c_void_p] * 3
        ins = (ctypes.c_void_p * max(len(self._inputs), 1))(*[a.ctypes.data for a in self._inputs])
        outs = (ctypes.c_void_p * max(len(self._outputs), 1))(*[a.ctypes.data for a in self._outputs])
        self._arrays = (ins, outs)    # kept alive: the call reads them
        self._calls = [(fn, (ctypes.cast(ins, ctypes.c_void_p), ctypes.cast(outs, ctypes.c_void_p),
                             ctypes.c_void_p(self._workspace.ctypes.data)), info["entry"])]

    def _open(self, source, name: str):
        if not name.endswith(".so"):
            raise RuntimeModuleError(f"{self.path}: an AOT module for another machine "
                                     f"({', '.join(self.targets)}) holding {name}; link it with "
                                     "driver/aot/harness.c for that machine (docs/deploy.md)")
        data = source.library(name)
        bad = elf_problem(data)
        if bad:
            raise RuntimeModuleError(f"{self.path}/{name}: {bad}; recompile the module with "
                                     "`vta compile --executor aot`")
        return open_library(data)

    def trace(self, *args, **kwargs) -> list:
        """Not available: an AOT module runs its calls inside one C function.

        Raises:
            RuntimeModuleError: always; trace the graph executor's module instead.
        """
        raise RuntimeModuleError(f"{self.path} is an AOT module (one C call runs every layer); "
                                 "compile with --executor graph to trace layer by layer")

    def profile(self, repeat: int = 5) -> list:
        """``[(entry, "whole model", median seconds)]``: the one call an AOT module makes."""
        fn, ptrs, name = self._calls[0]
        return [(name, "whole model", self.benchmark(repeat, warmup=1)["median_s"])]

    def __repr__(self) -> str:
        return (f"<AotModule {self.path}: entry {self._calls[0][2]}, workspace "
                f"{self.workspace_bytes} B, constants {self.constant_bytes} B, inputs "
                f"{[(n, s) for n, s, _ in self.input_info()]}>")
