"""Run a ``vtamod-vta-2`` module folder (``compiler.quant.module``) on a ``driver.device.Device``.

The plan's steps run in order: ``cpu`` steps in numpy (``compiler.quant.qgraph.eval_node``,
the oracle's own code), ``pack``/``unpack`` convert layouts, ``vta`` steps copy their
packed inputs into the node's program's "input" buffers (in order: "data" of a
conv/dense, "lhs" and "rhs" of an add), run it on the device and copy "out" out.
``vtamod-vta-1`` folders (single-input steps, no ``arg``) load too.

Usage::

    m = load_vta_module("out/digits_vta.vtamod", device="tsim")
    logits, = m.run({"image": x})
    m.stats()   # cycles, GEMM utilization, DRAM bytes, per accelerator node
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from vta_hw.config import VTAConfig
from vta_hw.program import Program

from .device import Device

# the plan's pieces (compiler.quant) load with the first module, so that ``is_vta_module``
# costs the CPU runtime nothing (it runs without llvmlite and onnx)

FORMAT = "vtamod-vta-2"
#: formats this runtime reads (version 1: conv/dense steps only)
FORMATS = ("vtamod-vta-1", FORMAT)


def is_vta_module(path) -> bool:
    """True for a folder whose graph.json names an accelerator format; also for one whose
    graph.json is damaged but sits beside ``programs/`` (so that loading it names the damage
    instead of the CPU runtime asking for a kernels.so)."""
    p = Path(path) / "graph.json"
    if not p.is_file():
        return False
    try:
        doc = json.loads(p.read_text())
    except (ValueError, OSError):
        return (Path(path) / "programs").is_dir()
    return isinstance(doc, dict) and doc.get("format") in FORMATS


class VtaModule:
    """A loaded accelerator module (module docstring)."""

    def __init__(self, path, device: Device | str = "tsim", *, dram_timing=None,
                 timeout_s: float | None = None):
        from compiler.quant.partition import Step, input_buffers
        from compiler.quant.qgraph import QGraph
        from .runtime import load_params
        path = Path(path)
        try:
            doc = json.loads((path / "graph.json").read_text())
        except ValueError as exc:
            raise ValueError(f"{path / 'graph.json'} is not valid JSON ({exc}); the file is "
                             "truncated or damaged: recompile the module with `vta compile`"
                             ) from None
        if not isinstance(doc, dict) or doc.get("format") not in FORMATS:
            fmt = doc.get("format") if isinstance(doc, dict) else None
            raise ValueError(f"{path}: format {fmt!r}, this runtime reads "
                             f"{' or '.join(map(repr, FORMATS))}; recompile the model")
        self.path, self.doc = path, doc
        self.cfg = VTAConfig.from_dict(doc["config"])
        if not (path / "params.npz").is_file():
            raise ValueError(f"module {str(path)!r} has no params.npz; recompile it with "
                             "`vta compile`")
        params = load_params(str(path / "params.npz"))
        self.qgraph = QGraph.from_json(doc["qgraph"], params)
        self.steps = [Step.from_json(s) for s in doc["steps"]]
        missing = [f for f in doc["programs"].values() if not (path / f).is_file()]
        if missing:
            raise ValueError(f"module {str(path)!r} has no {missing[0]} (named in graph.json); "
                             "recompile it with `vta compile`")
        self.programs = {int(k): Program.load(path / f) for k, f in doc["programs"].items()}
        if isinstance(device, str):
            device = Device(device, config=self.cfg, dram_timing=dram_timing)
        self.device = device
        self.loaded = {k: device.load(p) for k, p in self.programs.items()}
        self.inputs_of = {k: input_buffers(p) for k, p in self.programs.items()}
        self.timeout_s = timeout_s
        self.layer_counters: dict[int, dict] = {}

    def input_info(self):
        return [(i["name"], tuple(i["shape"]), i["dtype"]) for i in self.doc["inputs"]]

    def output_info(self):
        return [(o["name"], tuple(o["shape"]), o["dtype"]) for o in self.doc["outputs"]]

    def run(self, inputs: dict[str, np.ndarray], *, keep: bool = False):
        """Outputs (a list, graph output order); with ``keep`` a dict of every value by name."""
        from compiler.quant.partition import pack_value, unpack_value
        from compiler.quant.qgraph import eval_node
        qg = self.qgraph
        vals: dict[str, np.ndarray] = {}
        for i in qg.inputs:
            n = qg.nodes[i]
            x = np.asarray(inputs[n.name], np.float32)
            if x.shape != n.shape:
                raise ValueError(f"input {n.name!r} has shape {list(x.shape)}, the module was "
                                 f"compiled for {list(n.shape)}; give an array of that shape or "
                                 f"recompile with --input-shape "
                                 f"{n.name}:{'x'.join(map(str, x.shape))}")
            vals[f"%{i}"] = x
        for s in self.steps:
            n = qg.nodes[s.node]
            if s.kind == "cpu":
                vals[s.output] = eval_node(n, [vals[v] for v in s.inputs], qg.params)
            elif s.kind == "pack":
                buf = self.loaded[s.node].program.buffer(self.inputs_of[s.node][s.arg])
                vals[s.output] = pack_value(self.cfg, vals[s.inputs[0]], buf.shape)
            elif s.kind == "unpack":
                vals[s.output] = unpack_value(vals[s.inputs[0]], n.shape)
            elif s.kind == "vta":
                h = self.loaded[s.node]
                for name, v in zip(self.inputs_of[s.node], s.inputs, strict=True):
                    h.copy_in(name, vals[v])
                r = self.device.run_sync(h, self.timeout_s)
                c = self.layer_counters.setdefault(s.node, {"name": n.name, "runs": 0, "cycles": 0,
                                                            "gemm_macs": 0, "dram_bytes": 0})
                c["runs"] += 1
                c["cycles"] += r.cycles or 0
                c["gemm_macs"] += r.gemm_macs or 0
                c["dram_bytes"] += (r.dram_read_bytes or 0) + (r.dram_write_bytes or 0)
                vals[s.output] = h.copy_out("out")
            else:
                raise ValueError(f"unknown plan step kind {s.kind!r}")
        if keep:
            return vals
        return [vals[f"%{o}"] for o in qg.outputs]

    def stats(self) -> dict:
        c = self.device.counters
        return {"device": self.device.backend_name, "runs": c["runs"], "cycles": c["cycles"],
                "gemm_utilization": self.device.gemm_utilization(),
                "dram_bytes": c["dram_read_bytes"] + c["dram_write_bytes"],
                "layers": self.layer_counters}


def load_vta_module(path, device: str | Device = "tsim", **kw) -> VtaModule:
    return VtaModule(path, device, **kw)
