"""Fused graph -> one shared library of kernels + graph JSON + parameters.

``compile_graph(optimized, target)`` lowers every FUSED node (kernels of equal
signature are lowered once and shared), emits all of them into ONE LLVM
module, optimises it once and links one shared library (``kernel_files``; for a
cross triple the module holds the relocatable object ``kernels.o`` instead).
The result, :class:`CompiledModel`, is saved as a module folder of format
version 3 (``compiler/graph_lower/module_file.py``: manifest.json with the
targets, CPU features and a sha256 per file, graph.json, kernels.so,
params.npz, and for accelerator models programs/*.vtaprog), which
``driver.runtime`` loads with numpy and ctypes only.

graph.json (the execution plan, one schema for CPU, GPU and accelerator models):

* ``inputs`` / ``outputs``: name, shape, dtype, and (outputs) a buffer ``ref``;
* buffer refs: ``{"kind": "input", "index": i}``, ``{"kind": "param", "name": n}``,
  ``{"kind": "slot", "slot": s}`` (activation storage from the memory plan:
  ``slots`` holds each slot's bytes), ``{"kind": "workspace", "offset": b}``
  (scratch shared by all kernels: ``workspace_bytes``);
* ``calls``: in execution order, ``{"kind": "kernel", "kernel": name, "args": [ref, ...],
  "node": label}``; accelerator models also ``{"kind": "vta", "program":
  "programs/n5.vtaprog", "inputs": [{"buffer": "data", "ref": ref}, ...], "outputs":
  [{"buffer": "out", "ref": ref}], "node": label}`` (each input ref's bytes, viewed as
  the program buffer's shape/dtype, are copied in; buffer "out" is copied to the
  output ref);
* ``kernels``: name -> argument shapes/dtypes (the ABI, for checking).

GPU modules (``gpu.py``) add launch fields (``grid``, ``block``, ``scratch`` refs).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from compiler.graph import Graph, Op
from compiler.graph.ops import LEAVES
from vta_hw.host_cpu import code_features

from .aot import PREFIX, aot_files
from .link import kernel_files
from .lower import lower_group, signature
from .packing import pack_param
from .plan_file import io_entry, kernel_abi, plan_json

ALIGN = 64


def _nbytes(t) -> int:
    return int(np.prod(t.shape)) * np.dtype(t.dtype).itemsize


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def cpu_record(tgt) -> dict:
    """The manifest's ``cpu`` entry of an LLVM ``Target``: triple, CPU name and the
    ``"+"`` code features its kernels were compiled with (``vta_hw.host_cpu.CODE_FEATURES``:
    system features such as RDSEED are not needs; a named CPU's include those it implies,
    see ``codegen.llvm.cpu_features``)."""
    return {"triple": tgt.triple, "cpu": tgt.cpu, "features": code_features(tgt.features)}


@dataclass
class CompiledModel:
    """A compiled model for any target: execution plan, kernel files, parameters, programs.

    Attributes:
        graph_json: the execution plan (see the module docstring).
        files: file name -> bytes of the kernels: ``kernels.so`` on the CPU;
            ``kernels.cu`` + ``kernels.cubin`` or ``kernels.cl`` on a GPU
            (``graph_lower.gpu``).
        params: name -> array, what the kernels read.
        stats: compile figures: ``kernels`` (distinct), ``calls``, seconds per phase
            (accelerator models: ``quantized_nodes``, ``vta_nodes``, ...).
        targets: target strings, e.g. ``["llvm -mtriple=x86_64-unknown-linux-gnu
            -mcpu=znver4"]``, plus ``"vta"`` for accelerator models, or
            ``["cuda -arch=sm_90"]`` / ``["opencl"]``.
        cpu: ``{"triple", "cpu", "features": ["+avx2", ...]}`` of the CPU kernels
            (None for GPU-only modules); the loader checks the features.
        programs: graph.json program path (``"programs/n5.vtaprog"``) ->
            ``vta_hw.program.Program`` (accelerator models).
        vta: ``{"config": VTAConfig.to_dict(), "config_name": name}`` (accelerator models).
        plan: the accelerator ``compiler.quant.Plan`` it was built from (in memory
            only, for inspection and the oracle; not saved).
        executor: ``"graph"`` (``driver.runtime`` runs the plan's calls) or ``"aot"``
            (one C-callable entry runs them: ``files`` holds ``model.so`` or ``model.o``
            and ``model.h``, ``params`` is empty: the constants are in the object).
        aot: the manifest's ``aot`` entry of AOT modules (``aot.aot_files``), else None.
        variants: a fleet module's CPU variants (``fleet.combine``): the manifest's
            ``variants`` entries, each ``{"name", "cpu", "targets", "files": part ->
            path}``; the first is the module's own plan, kernels and parameters, the
            others' parts that differ are in ``files`` under ``variants/<name>/``.
            None for a module of one CPU.
    """

    graph_json: dict
    files: dict
    params: dict
    stats: dict = field(default_factory=dict)
    targets: list = field(default_factory=list)
    cpu: "dict | None" = None
    programs: dict = field(default_factory=dict)
    vta: "dict | None" = None
    plan: object = None
    executor: str = "graph"
    aot: "dict | None" = None
    variants: "list | None" = None

    def manifest(self) -> dict:
        """The manifest.json this model saves with (hashes of every file)."""
        from .module_file import manifest, module_bytes
        return manifest(self, module_bytes(self))

    def save(self, path: str) -> str:
        """Write the module folder ``path`` atomically (a hidden folder beside it, renamed
        into place; an earlier module there is replaced whole); returns ``path``.

        Raises:
            ValueError: ``path`` is a folder that holds something other than a module.
            OSError: it cannot be written (an earlier module stays as it was).
        """
        from .module_file import write_module
        return write_module(self, path)


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)[:40]


def _graph_executor(funcs, graph_json, params, tgt, opt_level, prefix):
    return kernel_files(funcs, tgt, fp_contract=True, opt_level=opt_level), params, None


def _aot_executor(funcs, graph_json, params, tgt, opt_level, prefix):
    files, info = aot_files(funcs, graph_json, params, tgt, opt_level, prefix)
    return files, {}, info


#: executor name -> ``(funcs, graph_json, params, target, opt_level, aot prefix) -> (files,
#: params to save, manifest "aot" entry or None)``: what a module holds besides its plan (the
#: graph executor's kernels keep their own names: it has no prefix to apply)
EXECUTORS = {"graph": _graph_executor, "aot": _aot_executor}


def compile_graph(graph: Graph, params: dict, memory_plan, target="llvm", progress=None,
                  opt_level: int = 3, executor: str = "graph", tuning=None,
                  aot_prefix: str = PREFIX) -> CompiledModel:
    """Lower, build and link every kernel of a fused ``graph`` (see the module docstring).

    Args:
        graph: output of ``compiler.graph.optimize`` (every compute node FUSED).
        params: its constants.
        memory_plan: the ``MemoryPlan`` of that graph.
        target: an LLVM target (``"llvm"``, ``"llvm -mcpu=x86-64-v2"``: a shared library
            ``kernels.so``; a cross triple such as ``"aarch64"``: the relocatable object
            ``kernels.o``, to link for that machine).
        progress: optional callable ``(iterable, total, desc) -> iterable`` (e.g. tqdm).
        opt_level: LLVM optimisation level.
        executor: a key of ``EXECUTORS``: ``"graph"`` (kernels for ``driver.runtime`` to
            call) or ``"aot"`` (the same kernels and plan as one C-callable entry,
            ``compiler/graph_lower/aot.py``).
        tuning: optional ``compiler.autotune.TuningContext``: per group, the tuned config
            of its master (``config_for_node``), else the default point.
        aot_prefix: ``executor="aot"``: the start of every symbol the module exports and
            every name of its header (``aot.check_prefix``; default ``vtamod_``).

    Raises:
        compiler.graph_lower.LoweringError: an operator without a CPU lowering.
        ValueError: a bad target string, executor or ``aot_prefix``, or a graph that is not
            fully fused.
    """
    if executor not in EXECUTORS:
        raise ValueError(f"executor must be one of {', '.join(map(repr, EXECUTORS))}, not "
                         f"{executor!r}")
    from compiler.codegen.llvm.target import parse_target
    from compiler.tir import lower

    tgt = parse_target(target)
    t0 = time.perf_counter()
    kernels, calls, out_params, workspace_bytes = plan_calls(graph, params, memory_plan, progress, tgt,
                                                            tuning)
    t1 = time.perf_counter()

    todo = list(kernels.values())
    it = progress(todo, len(todo), "lowering") if progress else todo
    funcs = [lower(kdef.schedule, kdef.args, kname) for kname, kdef in it]
    t2 = time.perf_counter()
    gj = plan_json([io_entry(n.name, n.shape, n.dtype) for n in graph.inputs],
                   graph_outputs(graph, params, memory_plan, out_params),
                   memory_plan.slot_bytes, calls, kernel_abi(kernels.values()),
                   workspace_bytes=workspace_bytes)
    files, saved_params, aot = EXECUTORS[executor](funcs, gj, out_params, tgt, opt_level,
                                                     aot_prefix)
    t3 = time.perf_counter()
    stats = {"kernels": len(kernels), "calls": len(calls), "lower_s": t1 - t0 + t2 - t1,
             "llvm_s": t3 - t2}
    return CompiledModel(gj, files, saved_params, stats, targets=[str(tgt)],
                         cpu=cpu_record(tgt), executor=executor, aot=aot)


def plan_calls(graph: Graph, params: dict, memory_plan, progress=None, target=None, tuning=None):
    """Lower every FUSED node (once per signature) and plan its call.

    ``target`` (a ``Target``; None: the host) is what the operator strategies select
    implementations for (``lower_group``); ``tuning`` (see ``compile_graph``) picks each
    group's config point.

    Returns (kernels: signature -> (name, KernelDef), calls (graph.json form),
    params the calls read (packed), workspace bytes).

    Raises:
        ValueError: a node that is not fused.
        compiler.graph_lower.LoweringError: an operator without a lowering.
    """
    nodes = [n for n in graph.nodes() if n.op not in LEAVES]
    for n in nodes:
        if n.op is not Op.FUSED:
            raise ValueError(f"node {n!r} is not fused; run compiler.graph.optimize(..., fuse=True)")
    input_index = {n: i for i, n in enumerate(graph.inputs)}
    if tuning is not None and target is None:
        from compiler.codegen.llvm.target import host_target
        target = host_target()

    kernels: dict = {}      # signature -> (name, KernelDef)
    calls, out_params = [], {}
    workspace_bytes = 0
    it = progress(nodes, len(nodes), "scheduling") if progress else nodes
    for n in it:
        sig = signature(n)
        if sig not in kernels:
            kname = f"k{len(kernels)}_{_safe(n.attr('name').replace('fused_', ''))}"
            config = tuning.config_for_node(n, target) if tuning is not None else None
            kernels[sig] = (kname, lower_group(n, kname, target, config))
        kname, kdef = kernels[sig]
        args = []
        for i, src in enumerate(n.src):
            ref = _ref(src, input_index, memory_plan)
            tag = kdef.packs[i]
            if tag is not None:
                new = f"{src.name}#{tag}"
                if new not in out_params:
                    out_params[new] = pack_param(np.asarray(params[src.name]), tag)
                ref = {"kind": "param", "name": new}
            elif ref["kind"] == "param":
                out_params.setdefault(src.name, np.ascontiguousarray(params[src.name]))
            args.append(ref)
        for j, value in enumerate(kdef.constants):
            cname = f"{kname}#const{j}"
            out_params.setdefault(cname, value)
            args.append({"kind": "param", "name": cname})
        off = 0
        for w in kdef.workspace:
            args.append({"kind": "workspace", "offset": off})
            off += _align(_nbytes(w))
        workspace_bytes = max(workspace_bytes, off)
        args.append({"kind": "slot", "slot": memory_plan.storage[n]})
        calls.append({"kind": "kernel", "kernel": kname, "args": args, "node": n.label or n.attr("name")})

    return kernels, calls, out_params, workspace_bytes


def graph_outputs(graph: Graph, params: dict, memory_plan, out_params: dict) -> list:
    """graph.json ``outputs`` (constant outputs are added to ``out_params``)."""
    input_index = {n: i for i, n in enumerate(graph.inputs)}
    outputs = []
    for name, o in zip(graph.output_names or [f"output{i}" for i in range(len(graph.outputs))],
                       graph.outputs):
        outputs.append(io_entry(name, o.shape, o.dtype, ref=_ref(o, input_index, memory_plan)))
        if outputs[-1]["ref"]["kind"] == "param":
            out_params.setdefault(o.name, np.ascontiguousarray(params[o.name]))
    return outputs


def _ref(src, input_index, plan) -> dict:
    if src.op is Op.INPUT:
        return {"kind": "input", "index": input_index[src]}
    if src.op is Op.PARAM:
        return {"kind": "param", "name": src.name}
    return {"kind": "slot", "slot": plan.storage[src]}
