"""Run a web module (model.wasm + model.json + params.bin) from Python through wasmtime.

The same format and memory plan as the JavaScript runtime (``driver/web/vta_runtime.mjs``;
the format is described in ``compiler/graph_lower/web.py``): it lets tests and scripts
check a WebAssembly build against the native module without Node. Needs PyPI
``wasmtime`` (in the ``dev`` extra); nothing here imports the compiler.

Usage::

    from driver.runtime.wasm import load_wasm
    m = load_wasm("out/digits_web")                 # the folder of the three files
    y = m.run(image=x)["logits"]                    # x: numpy float32[1, 1, 8, 8]
"""
from __future__ import annotations

import hashlib
import json
import math
import os

import numpy as np

from .errors import RuntimeModuleError

ALIGN = 64
PAGE = 65536

# name (without the float "f" suffix) -> Python function, for the kernels' libm imports
_LIBM = {"exp": math.exp, "exp2": lambda x: 2.0 ** x, "log": math.log, "log2": math.log2,
         "log10": math.log10, "sqrt": math.sqrt, "sin": math.sin, "cos": math.cos,
         "tan": math.tan, "tanh": math.tanh, "pow": math.pow, "atan": math.atan,
         "asin": math.asin, "acos": math.acos, "sinh": math.sinh, "cosh": math.cosh,
         "atan2": math.atan2, "erf": math.erf, "fabs": math.fabs, "floor": math.floor,
         "ceil": math.ceil, "trunc": math.trunc, "roundeven": lambda x: float(np.rint(x)),
         "rint": lambda x: float(np.rint(x)), "nearbyint": lambda x: float(np.rint(x)),
         "round": lambda x: float(np.round(x)), "fmin": min, "fmax": max,
         "fma": lambda a, b, c: a * b + c, "fmod": math.fmod}


def _libm(name: str):
    if name in _LIBM:
        return _LIBM[name]
    if name.endswith("f") and name[:-1] in _LIBM:
        return _LIBM[name[:-1]]
    return None


class WasmModule:
    """A web module instantiated in wasmtime: ``run(**inputs)`` -> outputs by name.

    Args:
        folder: the folder of model.wasm, model.json and params.bin.

    Attributes:
        inputs, outputs: ``[(name, shape, dtype)]``.

    Raises:
        ImportError: wasmtime is not installed (``pip install wasmtime``).
        RuntimeModuleError: a file is missing, truncated or from another build, or the
            module imports something this runtime does not provide.
    """

    def __init__(self, folder: str):
        import wasmtime

        def read(name):
            path = os.path.join(folder, name)
            try:
                with open(path, "rb") as f:
                    return f.read()
            except OSError as exc:
                raise RuntimeModuleError(f"{path}: cannot read it ({exc.strerror}); a web "
                                         "module folder holds model.wasm, model.json and "
                                         "params.bin") from None

        plan = json.loads(read("model.json"))
        if plan.get("format") != "vta-web" or plan.get("version") != 1:
            raise RuntimeModuleError(f"{folder}/model.json is not format 'vta-web' version 1; "
                                     "rebuild the web module")
        wasm, blob = read("model.wasm"), read("params.bin")
        if hashlib.sha256(wasm).hexdigest() != plan.get("wasm_sha256"):
            raise RuntimeModuleError(f"{folder}/model.wasm ({len(wasm)} bytes) is not the module "
                                     "model.json was built with (sha256 differs): truncated "
                                     "or from another build; copy the files again")
        if len(blob) != plan["params_bytes"]:
            raise RuntimeModuleError(f"{folder}/params.bin holds {len(blob)} bytes, the plan "
                                     f"needs {plan['params_bytes']}; copy it again")
        self.plan, self.folder = plan, folder
        self._store = wasmtime.Store()
        module = wasmtime.Module(self._store.engine, wasm)
        imports = []
        for imp in module.imports:
            fn = _libm(imp.name) if imp.module == "env" else None
            if fn is None or not isinstance(imp.type, wasmtime.FuncType):
                raise RuntimeModuleError(f"{folder}/model.wasm imports {imp.module}.{imp.name}, "
                                         "which this runtime does not provide; rebuild it")
            imports.append(wasmtime.Func(self._store, imp.type, fn))
        inst = wasmtime.Instance(self._store, module, imports)
        ex = inst.exports(self._store)
        self._memory = ex["memory"]
        self._base = -(-ex["__heap_base"].value(self._store) // ALIGN) * ALIGN
        need = self._base + plan["memory_bytes"]
        have = self._memory.data_len(self._store)
        if need > have:
            self._memory.grow(self._store, -(-(need - have) // PAGE))
        self._calls = [(ex[c["kernel"]], [self._base + a for a in c["args"]], c)
                       for c in plan["calls"]]
        self._memory.write(self._store, blob, self._base)
        self.inputs = [(i["name"], tuple(i["shape"]), i["dtype"]) for i in plan["inputs"]]
        self.outputs = [(o["name"], tuple(o["shape"]), o["dtype"]) for o in plan["outputs"]]

    def run(self, **inputs) -> dict:
        """Run once; ``inputs``: every input by name (numpy arrays of the plan's shape,
        cast to its dtype). Returns ``{name: numpy array}`` of the outputs (copies).

        Raises:
            RuntimeModuleError: an unknown or missing input, a wrong shape, a kernel
                that returns non-zero.
        """
        names = [i["name"] for i in self.plan["inputs"]]
        unknown = sorted(set(inputs) - set(names))
        if unknown:
            raise RuntimeModuleError(f"unknown input(s) {unknown}; the model's inputs are {names}")
        for entry in self.plan["inputs"]:
            if entry["name"] not in inputs:
                raise RuntimeModuleError(f"input {entry['name']!r} is missing; pass "
                                         f"{entry['dtype']}{entry['shape']}")
            x = np.asarray(inputs[entry["name"]])
            if list(x.shape) != entry["shape"]:
                raise RuntimeModuleError(f"input {entry['name']!r} must have shape "
                                         f"{entry['shape']}, not {list(x.shape)}")
            data = np.ascontiguousarray(x, dtype=entry["dtype"]).tobytes()
            self._memory.write(self._store, data, self._base + entry["offset"])
        for fn, args, call in self._calls:
            rc = fn(self._store, *args)
            if rc != 0:
                raise RuntimeModuleError(f"kernel {call['kernel']} (node {call['node']}) "
                                         f"returned {rc}, not 0")
        out = {}
        for o in self.plan["outputs"]:
            n = int(np.prod(o["shape"])) * np.dtype(o["dtype"]).itemsize
            at = self._base + o["offset"]
            raw = self._memory.read(self._store, at, at + n)
            out[o["name"]] = np.frombuffer(bytes(raw), o["dtype"]).reshape(o["shape"])
        return out


def load_wasm(folder: str) -> WasmModule:
    """Load the web module in ``folder`` (see :class:`WasmModule`)."""
    return WasmModule(folder)
