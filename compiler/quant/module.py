"""``build_vta_model``: ONNX -> quantized, partitioned, compiled model; its ``.vtamod`` folder.

Folder layout (format ``vtamod-vta-2``; ``driver.vta_runtime`` runs it)::

    graph.json          format, config (VTAConfig fields), inputs/outputs (name, shape,
                        dtype), the quantized graph (``QGraph.to_json``), the plan steps
                        (``Step.to_json``: kind, node, inputs, output, arg), programs
                        (node index -> file), compile figures
    params.npz          the quantized graph's params (int8 weights, int32 biases); the
                        CPU nodes read them, and the oracle
    programs/nK.vtaprog one accelerator program per offloaded node (conv2d, dense, add),
                        weights and identity blocks baked in

Version 2 (residual adds on the accelerator): a ``vta`` step has one input per
"input" buffer of its program, a ``pack`` step names the buffer by ``arg``.
"""
from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Mapping

import numpy as np

from compiler.graph import Graph
from vta_hw.config import VTAConfig, load_config
from vta_hw.timing import DramTiming

from .partition import Plan, build_plan
from .qgraph import QGraph
from .quantize import quantize

FORMAT = "vtamod-vta-2"


@dataclasses.dataclass
class VtaCompiledModel:
    plan: Plan
    quantize_s: float

    @property
    def qgraph(self) -> QGraph:
        return self.plan.qgraph

    def io(self) -> tuple[list[dict], list[dict]]:
        qg = self.qgraph
        ins = [{"name": qg.nodes[i].name, "shape": list(qg.nodes[i].shape), "dtype": "float32"}
               for i in qg.inputs]
        outs = [{"name": nm, "shape": list(qg.nodes[o].shape), "dtype": qg.nodes[o].dtype}
                for nm, o in zip(qg.output_names, qg.outputs)]
        return ins, outs

    def save(self, path: str | Path) -> None:
        path = Path(path)
        (path / "programs").mkdir(parents=True, exist_ok=True)
        files = {}
        for i, prog in self.plan.programs.items():
            files[str(i)] = f"programs/n{i}.vtaprog"
            prog.save(path / files[str(i)])
        ins, outs = self.io()
        doc = {"format": FORMAT, "config": self.plan.config.to_dict(),
               "config_name": self.plan.config.name, "inputs": ins, "outputs": outs,
               "qgraph": self.qgraph.to_json(), "steps": [s.to_json() for s in self.plan.steps],
               "programs": files,
               "stats": {"quantize_s": self.quantize_s, "compile_s": self.plan.compile_s,
                         "layers": {str(k): v for k, v in self.plan.layer_stats.items()}}}
        (path / "graph.json").write_text(json.dumps(doc, indent=1))
        np.savez(path / "params.npz", **self.qgraph.params)


def load_calibration(path: str | Path, input_name: str, scale: float = 1.0) -> dict[str, np.ndarray]:
    """Samples from an .npz: the array named after the input, else 'images'/'x'/'calib', times ``scale``."""
    data = np.load(path)
    for key in (input_name, "images", "x", "calib"):
        if key in data.files:
            return {input_name: data[key].astype(np.float32) * np.float32(scale)}
    raise ValueError(f"{path}: no array {input_name!r}, 'images', 'x' or 'calib' "
                     f"(it has {', '.join(data.files)})")


def build_vta_model(model, *, config: VTAConfig | str | None = None,
                    calib: Mapping[str, np.ndarray] | None = None,
                    input_shapes: Mapping[str, tuple] | None = None, params=None,
                    vthreads: int = 2, dram: DramTiming | None = None, measure=None,
                    min_channels: int | None = None, seed: int = 0,
                    per_channel: bool = False) -> VtaCompiledModel:
    """Quantize, partition and compile a model for the accelerator.

    Args:
        model: ONNX path/bytes/ModelProto, or a ``compiler.graph.Graph`` (then ``params``).
        config: VTAConfig or preset name (default preset).
        calib: input name -> samples (trailing dims = the input's). None: 8 seeded
            standard-normal samples (a smoke calibration; pass real data for accuracy).
        input_shapes: static input shapes (the batch the programs are compiled for).
        vthreads, dram, measure: passed to ``conv2d_program``.
        min_channels: ``partition``'s channel rule.
        per_channel: per-output-channel weight exponents (``quantize``).

    Returns:
        VtaCompiledModel (``.save(path)`` writes the module folder).
    """
    cfg = config if isinstance(config, VTAConfig) else load_config(config)
    if isinstance(model, Graph):
        graph, fparams = model, dict(params or {})
    else:
        from compiler.frontend.onnx import from_onnx
        graph, fparams = from_onnx(model, input_shapes=input_shapes)
    if calib is None:
        rng = np.random.default_rng(seed)
        calib = {i.name: rng.standard_normal((8,) + tuple(i.shape[1:])).astype(np.float32)
                 for i in graph.inputs}
    t0 = time.perf_counter()
    qg = quantize(graph, fparams, calib, per_channel=per_channel)
    tq = time.perf_counter() - t0
    plan = build_plan(qg, cfg, vthreads=vthreads, dram=dram, measure=measure,
                      min_channels=min_channels)
    return VtaCompiledModel(plan, tq)
