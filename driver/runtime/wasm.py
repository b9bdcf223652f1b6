"""Run a web module (one .wasm file, ``compiler/graph_lower/web.py``) from Python through wasmtime.

The same file and static memory plan as the JavaScript runtime
(``driver/web/vta_runtime.mjs``): it lets tests and scripts check a WebAssembly build
against the native module without Node. Needs PyPI ``wasmtime`` (in the ``dev``
extra); nothing here imports the compiler.

Usage::

    from driver.runtime.wasm import load_wasm
    m = load_wasm("out/digits.wasm")                # a path or the file's bytes
    y = m.run(image=x)["logits"]                    # x: numpy float32[1, 1, 8, 8]
"""
from __future__ import annotations

import json
import math

import numpy as np

from .errors import RuntimeModuleError

SECTION = "vta.model"
ALIGN = 64
PAGE = 65536
_STATUS = {-1: "a NULL pointer", -2: "a pointer that is not 64-byte aligned"}

# name (without the float "f" suffix) -> Python function, for the kernels' libm imports
_LIBM = {"exp": math.exp, "exp2": lambda x: 2.0 ** x, "log": math.log, "log2": math.log2,
         "log10": math.log10, "sqrt": math.sqrt, "sin": math.sin, "cos": math.cos,
         "tan": math.tan, "tanh": math.tanh, "pow": math.pow, "atan": math.atan,
         "asin": math.asin, "acos": math.acos, "sinh": math.sinh, "cosh": math.cosh,
         "atan2": math.atan2, "erf": math.erf, "fabs": math.fabs, "floor": math.floor,
         "ceil": math.ceil, "trunc": math.trunc, "roundeven": lambda x: float(np.rint(x)),
         "rint": lambda x: float(np.rint(x)), "nearbyint": lambda x: float(np.rint(x)),
         "round": lambda x: math.copysign(math.floor(abs(x) + 0.5), x), "fmin": min, "fmax": max,
         "fma": lambda a, b, c: a * b + c, "fmod": math.fmod}


def _libm(name: str):
    return _LIBM.get(name) or (_LIBM.get(name[:-1]) if name.endswith("f") else None)


def _leb128(data: bytes, at: int) -> tuple:
    value = shift = 0
    while True:
        if at >= len(data):
            raise IndexError("LEB128 runs past the end")
        byte = data[at]
        value |= (byte & 0x7F) << shift
        at, shift = at + 1, shift + 7
        if not byte & 0x80:
            return value, at


def custom_section(wasm: bytes, name: str) -> "bytes | None":
    """The payload of the custom section ``name`` of a WebAssembly binary, or None.

    Raises:
        IndexError: the binary ends inside a section (truncated).
    """
    at = 8
    while at < len(wasm):
        sid = wasm[at]
        size, body = _leb128(wasm, at + 1)
        if body + size > len(wasm):
            raise IndexError(f"section {sid} runs past the end")
        if sid == 0:
            nlen, nat = _leb128(wasm, body)
            if wasm[nat:nat + nlen] == name.encode():
                return wasm[nat + nlen:body + size]
        at = body + size
    return None


def read_interface(wasm: bytes, where: str) -> dict:
    """The ``vta.model`` interface of a web module's bytes.

    Raises:
        RuntimeModuleError: not WebAssembly, truncated, or no/foreign ``vta.model`` section.
    """
    if wasm[:4] != b"\0asm":
        raise RuntimeModuleError(f"{where} is not a WebAssembly file (starts {wasm[:4]!r}); "
                                 "build one with compiler.graph_lower.web.build_web")
    try:
        payload = custom_section(wasm, SECTION)
    except IndexError as exc:
        raise RuntimeModuleError(f"{where} ({len(wasm)} bytes) is truncated ({exc}): build or "
                                 "copy it again") from None
    if payload is None:
        raise RuntimeModuleError(f"{where} has no {SECTION!r} section: it is truncated, or not "
                                 "a model built by compiler.graph_lower.web")
    try:
        doc = json.loads(payload)
    except ValueError as exc:
        raise RuntimeModuleError(f"{where}: section {SECTION!r} is not JSON ({exc}); the file "
                                 "is damaged: build or copy it again") from None
    if doc.get("format") != "vta-web" or doc.get("version") != 1:
        raise RuntimeModuleError(f"{where}: section {SECTION!r} is not format 'vta-web' version 1;"
                                 " rebuild the module")
    return doc


class WasmModule:
    """A web module instantiated in wasmtime: ``run(**inputs)`` -> outputs by name.

    Args:
        wasm: the .wasm file's path or bytes.

    Attributes:
        inputs, outputs: ``[(name, shape, dtype)]``; ``workspace_bytes``,
        ``constant_bytes``: bytes of scratch and of parameters in the module.

    Raises:
        ImportError: wasmtime is not installed (``pip install wasmtime``).
        RuntimeModuleError: the file is missing, truncated or foreign, or imports something
            this runtime does not provide.
    """

    def __init__(self, wasm: "str | bytes"):
        import wasmtime

        where = "the module" if isinstance(wasm, bytes) else str(wasm)
        if not isinstance(wasm, bytes):
            try:
                with open(wasm, "rb") as f:
                    wasm = f.read()
            except OSError as exc:
                raise RuntimeModuleError(f"{where}: cannot read it ({exc.strerror})") from None
        doc = read_interface(wasm, where)
        self.doc = doc
        self._store = wasmtime.Store()
        try:
            module = wasmtime.Module(self._store.engine, wasm)
        except wasmtime.WasmtimeError as exc:
            raise RuntimeModuleError(f"{where} is not a valid WebAssembly module ({exc}); build "
                                     "or copy it again") from None
        imports = []
        for imp in module.imports:
            fn = _libm(imp.name) if imp.module == "env" else None
            if fn is None or not isinstance(imp.type, wasmtime.FuncType):
                raise RuntimeModuleError(f"{where} imports {imp.module}.{imp.name}, which this "
                                         "runtime does not provide; rebuild it")
            imports.append(wasmtime.Func(self._store, imp.type, fn))
        ex = wasmtime.Instance(self._store, module, imports).exports(self._store)
        self._memory, self._entry = ex["memory"], ex[doc["entry"]]
        self._base = -(-ex["__heap_base"].value(self._store) // ALIGN) * ALIGN
        need, have = self._base + doc["memory_bytes"], self._memory.data_len(self._store)
        if need > have:
            self._memory.grow(self._store, -(-(need - have) // PAGE))
        for kind in ("input", "output"):
            ptrs = np.array([self._base + e["offset"] for e in doc[kind + "s"]], "<u4")
            self._memory.write(self._store, ptrs.tobytes(), self._base + doc[kind + "_ptrs"])
        self.inputs = [(i["name"], tuple(i["shape"]), i["dtype"]) for i in doc["inputs"]]
        self.outputs = [(o["name"], tuple(o["shape"]), o["dtype"]) for o in doc["outputs"]]
        self.workspace_bytes, self.constant_bytes = doc["workspace_bytes"], doc["constant_bytes"]

    def run(self, **inputs) -> dict:
        """Run once; ``inputs``: every input by name (numpy arrays of the declared shape,
        cast to its dtype). Returns ``{name: numpy array}`` of the outputs (copies).

        Raises:
            RuntimeModuleError: an unknown or missing input, a wrong shape, a non-zero status.
        """
        doc, base = self.doc, self._base
        names = [i["name"] for i in doc["inputs"]]
        unknown = sorted(set(inputs) - set(names))
        if unknown:
            raise RuntimeModuleError(f"unknown input(s) {unknown}; the model's inputs are {names}")
        for entry in doc["inputs"]:
            if entry["name"] not in inputs:
                raise RuntimeModuleError(f"input {entry['name']!r} is missing; pass "
                                         f"{entry['dtype']}{entry['shape']}")
            x = np.asarray(inputs[entry["name"]])
            if list(x.shape) != entry["shape"]:
                raise RuntimeModuleError(f"input {entry['name']!r} must have shape "
                                         f"{entry['shape']}, not {list(x.shape)}")
            data = np.ascontiguousarray(x, dtype=entry["dtype"]).tobytes()
            self._memory.write(self._store, data, base + entry["offset"])
        rc = self._entry(self._store, base + doc["input_ptrs"], base + doc["output_ptrs"],
                         base + doc["workspace"])
        if rc != 0:
            raise RuntimeModuleError(f"{doc['entry']} returned {rc} "
                                     f"({_STATUS.get(rc, 'a kernel failed')}), not 0")
        out = {}
        for o in doc["outputs"]:
            n = int(np.prod(o["shape"])) * np.dtype(o["dtype"]).itemsize
            raw = self._memory.read(self._store, base + o["offset"], base + o["offset"] + n)
            out[o["name"]] = np.frombuffer(bytes(raw), o["dtype"]).reshape(o["shape"])
        return out


def load_wasm(wasm: "str | bytes") -> WasmModule:
    """Load a web module from its path or bytes (see :class:`WasmModule`)."""
    return WasmModule(wasm)
