"""Checks of a module's execution plan (graph.json) before the executor trusts it.

The hashes in manifest.json say the plan is the one the compiler wrote; this module says
it is one this runtime can run: every field of the right type, every reference inside
what it refers to, every parameter of the shape its kernels read, and every buffer the
plan needs fitting in this machine's memory. Each failure is a one-line
``RuntimeModuleError`` naming the file, the field, the value and the fix.

Plan layout (``compiler/graph_lower/build.py`` writes it)::

    inputs   [{"name", "shape": [int], "dtype"}]
    outputs  [{"name", "shape", "dtype", "ref": REF}]
    slots    [bytes]             activation buffers
    workspace_bytes  int         scratch shared by kernels
    kernels  {name: [{"shape", "dtype"}]}   each kernel's arguments
    calls    [{"kind": "kernel", "kernel", "args": [REF]}
              | {"kind": "vta", "program", "inputs"/"outputs": [{"buffer", "ref": REF}]}]
    REF      {"kind": "slot", "slot": i} | {"kind": "input", "index": i}
             | {"kind": "param", "name"} | {"kind": "workspace", "offset": bytes}
"""
from __future__ import annotations

import os

import numpy as np

from .errors import RuntimeModuleError

RECOMPILE = "recompile the module with `vta compile`"


def host_memory_bytes() -> int:
    """This machine's physical memory, bytes."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


class _Checker:
    def __init__(self, where: str):
        self.where = where

    def fail(self, field: str, what: str):
        raise RuntimeModuleError(f"{self.where}/graph.json: {field} {what}; the plan is "
                                 f"malformed: {RECOMPILE}")

    def count(self, field: str, v, below: "int | None" = None) -> int:
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            self.fail(field, f"must be a non-negative integer, not {v!r}")
        if below is not None and v >= below:
            self.fail(field, f"is {v}, past the {below} there are")
        return v

    def list(self, field: str, v) -> list:
        if not isinstance(v, list):
            self.fail(field, f"must be a list, not {type(v).__name__}")
        return v

    def dict(self, field: str, v) -> dict:
        if not isinstance(v, dict):
            self.fail(field, f"must be an object, not {type(v).__name__}")
        return v

    def text(self, field: str, v) -> str:
        if not isinstance(v, str):
            self.fail(field, f"must be a string, not {v!r}")
        return v

    def tensor(self, field: str, v) -> int:
        """Check a {"shape", "dtype"} spec; its size in bytes."""
        v = self.dict(field, v)
        shape = self.list(f"{field}.shape", v.get("shape"))
        size = 1
        for k, d in enumerate(shape):
            size *= self.count(f"{field}.shape[{k}]", d)
        try:
            dt = np.dtype(self.text(f"{field}.dtype", v.get("dtype")))
        except TypeError:
            dt = None
        if dt is None or dt.kind not in "biuf":
            self.fail(f"{field}.dtype", f"{v.get('dtype')!r} is not a numeric dtype")
        return size * dt.itemsize

    def ref(self, field: str, r, g: dict) -> None:
        r = self.dict(field, r)
        kind = r.get("kind")
        if kind == "slot":
            self.count(f"{field}.slot", r.get("slot"), len(g["slots"]))
        elif kind == "input":
            self.count(f"{field}.index", r.get("index"), len(g["inputs"]))
        elif kind == "param":
            self.text(f"{field}.name", r.get("name"))
        elif kind == "workspace":
            self.count(f"{field}.offset", r.get("offset"), g.get("workspace_bytes", 0) + 1)
        else:
            self.fail(f"{field}.kind", f"{kind!r} is not slot, input, param or workspace")


def check_plan(g, where: str) -> None:
    """Check the plan ``g`` (graph.json, parsed) of the module at ``where``.

    Raises:
        RuntimeModuleError: a field missing or of the wrong type, a reference out of
            range, a call of an unknown kind or kernel, or buffers that need more
            memory than this machine has (the message gives the bytes).
    """
    c = _Checker(where)
    g = c.dict("the plan", g)
    for key in ("inputs", "outputs", "slots", "calls"):
        c.list(key, g.get(key))
    need = c.count("workspace_bytes", g.get("workspace_bytes", 0))
    for k, n in enumerate(g["slots"]):
        need += c.count(f"slots[{k}]", n)
    for k, i in enumerate(g["inputs"]):
        need += c.tensor(f"inputs[{k}]", i)
        c.text(f"inputs[{k}].name", i.get("name"))
    for k, o in enumerate(g["outputs"]):
        c.tensor(f"outputs[{k}]", o)
        c.text(f"outputs[{k}].name", o.get("name"))
        c.ref(f"outputs[{k}].ref", o.get("ref"), g)
    kernels = c.dict("kernels", g.get("kernels", {}))
    for k, call in enumerate(g["calls"]):
        call = c.dict(f"calls[{k}]", call)
        kind = call.get("kind", "kernel")
        if kind == "kernel":
            name = c.text(f"calls[{k}].kernel", call.get("kernel"))
            if name not in kernels:
                c.fail(f"calls[{k}].kernel", f"{name!r} is not in its kernels table")
            specs = c.list(f"kernels[{name!r}]", kernels[name])
            args = c.list(f"calls[{k}].args", call.get("args"))
            if len(args) != len(specs):
                c.fail(f"calls[{k}].args", f"has {len(args)} arguments, kernel {name!r} takes "
                                           f"{len(specs)}")
            for a, (ref, spec) in enumerate(zip(args, specs)):
                c.tensor(f"kernels[{name!r}][{a}]", spec)
                c.ref(f"calls[{k}].args[{a}]", ref, g)
        elif kind == "vta":
            c.text(f"calls[{k}].program", call.get("program"))
            for side in ("inputs", "outputs"):
                for e, ent in enumerate(c.list(f"calls[{k}].{side}", call.get(side))):
                    ent = c.dict(f"calls[{k}].{side}[{e}]", ent)
                    c.text(f"calls[{k}].{side}[{e}].buffer", ent.get("buffer"))
                    c.ref(f"calls[{k}].{side}[{e}].ref", ent.get("ref"), g)
        else:
            c.fail(f"calls[{k}].kind", f"{kind!r} is not 'kernel' or 'vta' (this runtime runs "
                                       "those two)")
    have = host_memory_bytes()
    if need > have:
        shapes = ", ".join(f"{i['name']} {i['dtype']}{i['shape']}" for i in g["inputs"])
        raise RuntimeModuleError(
            f"{where}: running it needs {need} bytes ({need / 2**30:.1f} GiB) of buffers for "
            f"inputs {shapes}; this machine has {have} bytes ({have / 2**30:.1f} GiB) of "
            "memory: recompile it for smaller inputs (vta compile --input-shape ...) or run it "
            "on a larger machine")


def check_params(g: dict, params: dict, where: str) -> None:
    """Every parameter a kernel reads is in params.npz with the shape and dtype it reads.

    Raises:
        RuntimeModuleError: names the array, its shape and what graph.json's kernel reads.
    """
    for call in g["calls"]:
        if call.get("kind", "kernel") != "kernel":
            continue
        for ref, spec in zip(call["args"], g["kernels"][call["kernel"]]):
            if ref["kind"] != "param":
                continue
            name = ref["name"]
            if name not in params:
                raise RuntimeModuleError(f"{where}/params.npz has no array {name!r}, which "
                                         f"kernel {call['kernel']!r} reads; {RECOMPILE}")
            a = params[name]
            if list(a.shape) != list(spec["shape"]) or a.dtype != np.dtype(spec["dtype"]):
                raise RuntimeModuleError(
                    f"{where}/params.npz: array {name!r} is {a.dtype}{list(a.shape)}, kernel "
                    f"{call['kernel']!r} reads {spec['dtype']}{list(spec['shape'])}; the parts "
                    f"do not belong together: {RECOMPILE}")
