"""A wasm32 model -> the three files a browser or Node loads: model.wasm, model.json, params.bin.

::

    web/
      model.wasm    the kernels linked by wasm-ld (``compiler/codegen/llvm/wasm_link.py``);
                    exports memory, __heap_base and every kernel
      model.json    format "vta-web", version 1: a static memory plan and the calls
      params.bin    every parameter, laid out as the plan's parameter region

model.json places every buffer at a fixed byte offset from a base that the runtime
picks (``__heap_base`` rounded up to 64 bytes): the parameters from offset 0
(``params_bytes``, the size of params.bin), then the activation slots, the kernels'
shared workspace and the inputs; ``memory_bytes`` is the whole plan. ``calls`` lists,
in execution order, ``{"kernel": name, "args": [offset, ...], "node": label}``: each
call is ``int32 name(void *, ...)`` on those addresses and returns 0 on success.
``inputs`` / ``outputs`` hold ``name``, ``shape``, ``dtype`` and ``offset``. Running
the model allocates nothing: ``driver/web/vta_runtime.mjs`` (JavaScript) and
``driver.runtime.wasm`` (Python, wasmtime) read this format.
"""
from __future__ import annotations

import hashlib
import json
import os

import numpy as np

from .build import ALIGN, CompiledModel

FORMAT = "vta-web"
VERSION = 1
FILES = ("model.wasm", "model.json", "params.bin")


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def _nbytes(shape, dtype) -> int:
    return int(np.prod(shape)) * np.dtype(dtype).itemsize


def memory_plan(graph_json: dict, params: dict) -> tuple:
    """``(plan, params_blob)``: byte offsets of every buffer of ``graph_json`` (see the
    module docstring) and the parameter region's bytes.

    Raises:
        ValueError: the plan names a parameter that ``params`` lacks, or holds a call that
            is not a CPU kernel (accelerator and GPU modules do not run in WebAssembly).
    """
    g = graph_json
    used = []
    for call in g["calls"]:
        if call.get("kind", "kernel") != "kernel":
            raise ValueError(f"call {call.get('node')!r} is a {call.get('kind')!r} call; a web "
                             "module runs CPU kernels only: build the model with target='wasm32'")
        used += [r["name"] for r in call["args"] if r["kind"] == "param"]
    used += [o["ref"]["name"] for o in g["outputs"] if o["ref"]["kind"] == "param"]
    blob, param_at = bytearray(), {}
    for name in dict.fromkeys(used):
        if name not in params:
            raise ValueError(f"graph.json names parameter {name!r}, which the model's params lack")
        param_at[name] = len(blob)
        data = np.ascontiguousarray(params[name]).tobytes()
        blob += data + bytes(_align(len(data)) - len(data))
    at = len(blob)
    slot_at = []
    for nbytes in g["slots"]:
        slot_at.append(at)
        at += _align(nbytes)
    workspace_at = at
    at += _align(g.get("workspace_bytes", 0))
    inputs = []
    for i in g["inputs"]:
        inputs.append({"name": i["name"], "shape": list(i["shape"]), "dtype": i["dtype"],
                       "offset": at})
        at += _align(_nbytes(i["shape"], i["dtype"]))

    def offset(ref: dict) -> int:
        kind = ref["kind"]
        if kind == "slot":
            return slot_at[ref["slot"]]
        if kind == "input":
            return inputs[ref["index"]]["offset"]
        if kind == "param":
            return param_at[ref["name"]]
        if kind == "workspace":
            return workspace_at + ref["offset"]
        raise ValueError(f"graph.json has a buffer of kind {kind!r}; recompile the model")

    plan = {"format": FORMAT, "version": VERSION, "params_bytes": len(blob),
            "memory_bytes": at, "inputs": inputs,
            "outputs": [{"name": o["name"], "shape": list(o["shape"]), "dtype": o["dtype"],
                         "offset": offset(o["ref"])} for o in g["outputs"]],
            "calls": [{"kernel": c["kernel"], "args": [offset(r) for r in c["args"]],
                       "node": c.get("node", c["kernel"])} for c in g["calls"]]}
    return plan, bytes(blob)


def web_files(cm: CompiledModel) -> dict:
    """The web module of ``cm`` (built with a wasm32 target): file name -> bytes.

    Raises:
        ValueError: ``cm`` was not built for wasm32 (the message says how to build it).
        compiler.codegen.llvm.wasm_link.WasmLinkError: wasm-ld is missing or failed.
    """
    from compiler.codegen.llvm.wasm_link import link_wasm

    triple = (cm.cpu or {}).get("triple", "")
    if not triple.startswith("wasm32") or "kernels.o" not in cm.files:
        raise ValueError(f"a web module needs a model built for wasm32, not {cm.targets!r}; "
                         "use build_model(model, target='wasm32')")
    plan, blob = memory_plan(cm.graph_json, cm.params)
    kernels = sorted({c["kernel"] for c in plan["calls"]})
    wasm = link_wasm([cm.files["kernels.o"]], kernels)
    plan["wasm_sha256"] = hashlib.sha256(wasm).hexdigest()
    plan["params_sha256"] = hashlib.sha256(blob).hexdigest()
    return {"model.wasm": wasm, "model.json": json.dumps(plan, indent=1).encode(),
            "params.bin": blob}


def save_web(cm: CompiledModel, folder: str) -> str:
    """Write :func:`web_files` of ``cm`` into ``folder`` (created if absent); returns it.

    Raises:
        as :func:`web_files`; OSError when the folder cannot be written.
    """
    files = web_files(cm)
    os.makedirs(folder, exist_ok=True)
    for name, data in files.items():
        with open(os.path.join(folder, name), "wb") as f:
            f.write(data)
    return folder
