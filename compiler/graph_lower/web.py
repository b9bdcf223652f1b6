"""A wasm32 AOT model -> one self-contained WebAssembly file that browsers, Node and wasmtime run.

``web_module(cm)`` links the AOT module's object (``model.o``: the kernels, the
entry ``vtamod_run`` and the parameters as constant data, ``aot.py``) with wasm-ld
(``compiler/codegen/llvm/wasm_link.py``) and appends a custom section
``vta.model`` holding the interface as JSON::

    {"format": "vta-web", "version": 1, "entry": "vtamod_run",
     "inputs":  [{"name", "shape", "dtype", "offset"}, ...],
     "outputs": [{"name", "shape", "dtype", "offset"}, ...],
     "input_ptrs": offset, "output_ptrs": offset, "workspace": offset,
     "workspace_bytes": n, "constant_bytes": n, "memory_bytes": n}

Offsets are bytes from a base the runtime picks (the module's exported
``__heap_base`` rounded up to 64): every input and output buffer, the two arrays of
4-byte wasm32 pointers the entry takes (``inputs[i]``, ``outputs[i]``) and the
workspace, each 64-byte aligned; ``memory_bytes`` is the end of the plan. The
runtime grows the memory once, writes the pointer arrays once, and a run is: copy
the inputs in, call ``vtamod_run(base + input_ptrs, base + output_ptrs, base +
workspace)`` (0 on success), copy the outputs out. ``driver/web/vta_runtime.mjs``
(JavaScript) and ``driver.runtime.wasm`` (Python, wasmtime) read it. A truncated
file fails WebAssembly validation or lacks the section (it is the last one), so
both runtimes refuse it with a message.
"""
from __future__ import annotations

import json

import numpy as np

from .build import CompiledModel

FORMAT = "vta-web"
VERSION = 1
SECTION = "vta.model"
ALIGN = 64
POINTER_BYTES = 4          # wasm32


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def _leb128(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def custom_section(name: str, payload: bytes) -> bytes:
    """A WebAssembly custom section (id 0) named ``name`` holding ``payload``."""
    body = _leb128(len(name.encode())) + name.encode() + payload
    return b"\0" + _leb128(len(body)) + body


def interface(graph_json: dict, aot: dict) -> dict:
    """The ``vta.model`` section's content (module docstring) of an AOT plan and its
    manifest entry ``aot`` (``workspace_bytes``, ``constant_bytes``, ``entry``)."""
    at, doc = 0, {"format": FORMAT, "version": VERSION, "entry": aot["entry"]}
    for kind in ("inputs", "outputs"):
        doc[kind] = []
        for spec in graph_json[kind]:
            doc[kind].append({"name": spec["name"], "shape": list(spec["shape"]),
                              "dtype": spec["dtype"], "offset": at})
            at += _align(int(np.prod(spec["shape"])) * np.dtype(spec["dtype"]).itemsize)
    for kind in ("inputs", "outputs"):
        doc[kind[:-1] + "_ptrs"] = at
        at += _align(POINTER_BYTES * len(graph_json[kind]))
    doc["workspace"] = at
    at += _align(aot["workspace_bytes"])
    doc.update(workspace_bytes=aot["workspace_bytes"], constant_bytes=aot["constant_bytes"],
               memory_bytes=at)
    return doc


def web_module(cm: CompiledModel) -> bytes:
    """The ``.wasm`` file of ``cm``, a model built with ``target="wasm32", executor="aot"``.

    Returns:
        the module's bytes: exports ``memory``, ``__heap_base`` and ``vtamod_run``;
        imports only libm functions from ``env`` (``expf``, ``tanhf``, ...) when the
        kernels call them; ends with the ``vta.model`` section.

    Raises:
        ValueError: ``cm`` is not a wasm32 AOT model (the message says how to build one).
        compiler.codegen.llvm.wasm_link.WasmLinkError: wasm-ld is missing (names the
            Debian package ``lld``) or failed.
    """
    from compiler.codegen.llvm.wasm_link import link_wasm

    triple = (cm.cpu or {}).get("triple", "")
    if not triple.startswith("wasm32") or cm.aot is None or "model.o" not in cm.files:
        raise ValueError(f"a web module is built from a wasm32 AOT model, not one for "
                         f"{cm.targets!r} with executor {cm.executor!r}; use "
                         "build_model(model, target='wasm32', executor='aot')")
    wasm = link_wasm([cm.files["model.o"]], [cm.aot["entry"]])
    doc = json.dumps(interface(cm.graph_json, cm.aot), separators=(",", ":")).encode()
    return wasm + custom_section(SECTION, doc)


def build_web(model, **options) -> bytes:
    """``web_module(build_model(model, target="wasm32", executor="aot", **options))``:
    any model ``build_model`` takes (ONNX, PyTorch with ``example_inputs``, a graph)."""
    from compiler.build_model import build_model

    return web_module(build_model(model, target="wasm32", executor="aot", **options))
