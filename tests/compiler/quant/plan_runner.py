"""A minimal executor of an accelerator module's graph.json for the tests of ``lower_plan``
(until ``driver.runtime`` runs "vta" calls): slots as numpy byte arrays, kernels from
the module's kernels.so, "vta" calls on a ``driver.device.Device``."""
import os
import tempfile

import numpy as np

from compiler.codegen.llvm.artifact import load_library
from driver.device import Device


def run_module(cm, inputs: list, device: str = "fsim") -> list:
    """Run ``cm`` (a ``CompiledModel`` from ``lower_plan``) on float32 ``inputs`` (graph
    order); returns the outputs (copies)."""
    gj = cm.graph_json
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "kernels.so")
        with open(path, "wb") as f:
            f.write(cm.files["kernels.so"])
        lib = load_library(path)
    slots = [np.zeros(n, np.uint8) for n in gj["slots"]]
    workspace = np.zeros(max(gj["workspace_bytes"], 1), np.uint8)
    ins = [np.ascontiguousarray(x, np.float32) for x in inputs]
    dev = Device(device, config=cm.plan.config)
    loaded = {}

    def view(ref, shape, dtype):
        k = ref["kind"]
        if k == "input":
            return ins[ref["index"]]
        if k == "param":
            return cm.params[ref["name"]]
        raw = slots[ref["slot"]] if k == "slot" else workspace[ref["offset"]:]
        n = int(np.prod(shape)) * np.dtype(dtype).itemsize
        return raw[:n].view(dtype).reshape(shape)

    for c in gj["calls"]:
        if c["kind"] == "kernel":
            abi = gj["kernels"][c["kernel"]]
            lib[c["kernel"]](*(view(r, a["shape"], a["dtype"]) for r, a in zip(c["args"], abi)))
            continue
        prog = cm.programs[c["program"]]
        h = loaded.setdefault(c["program"], dev.load(prog))
        for i in c["inputs"]:
            b = prog.buffer(i["buffer"])
            h.copy_in(i["buffer"], view(i["ref"], b.shape, b.dtype))
        dev.run_sync(h, 600)
        b = prog.buffer("out")
        view(c["outputs"][0]["ref"], b.shape, b.dtype)[...] = h.copy_out("out")
    return [view(o["ref"], o["shape"], o["dtype"]).copy() for o in gj["outputs"]]
