"""An accelerator ``Plan`` -> the execution plan of a module: compiled CPU steps + programs.

``lower_plan(plan, cpu_target)`` turns the plan's steps (``partition.Step``) into the
graph.json execution plan of ``compiler.graph_lower.build`` (one schema for every
target) and returns a ``CompiledModel``:

- every value of the plan gets a buffer ref: graph inputs ``{"kind": "input"}``, FLOAT
  "PARAM" constants ``{"kind": "param"}`` (no call), everything else a slot
  (:func:`plan_slots`: greedy best-fit reuse after the value's last reader, as
  ``compiler.graph.passes.plan_memory``; outputs are never reused);
- a ``cpu``, ``pack`` or ``unpack`` step becomes a ``{"kind": "kernel"}`` call of a te
  kernel (``compiler.quant.kernels``; steps of equal signature share one kernel), its
  weights, biases and shift tables params named ``n<node>.c<j>``, its scratch a
  workspace ref;
- a ``vta`` step becomes ``{"kind": "vta", "program": "programs/n<node>.vtaprog",
  "inputs": [{"buffer", "ref"}...] (the program's "input" buffers in order),
  "outputs": [{"buffer": "out", "ref"}]}``;
- every kernel is lowered and linked into one shared library with floating-point
  contraction off (``link_library(..., fp_contract=False)``): quantize rounds half to
  even exactly as ``np.rint`` and float steps round as the numpy oracle does.

Inputs and outputs are in the QGraph's dtypes (float32, or integer / bool for token ids and
masks). An input that a QUANTIZE reads carries ``"range": [lo, hi]``, the calibrated values it
represents (``(-128 - zp) * 2**-exp`` to ``(127 - zp) * 2**-exp``): the runtime refuses NaN there and counts
values beyond it (``driver.runtime.input_check``).
"""
from __future__ import annotations

import time

import numpy as np

from compiler.graph.passes.plan_memory import best_fit
from compiler.graph_lower.build import ALIGN, CompiledModel, cpu_record
from compiler.graph_lower.link import link_library
from compiler.graph_lower.plan_file import io_entry, kernel_abi, plan_json

from . import kernels
from .partition import Plan, Step, input_buffers
from .qgraph import QOp


def _nbytes(shape, dtype) -> int:
    return int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def value_types(plan: Plan) -> dict[str, tuple[tuple, str]]:
    """Shape and dtype of every value the plan's steps read or write (graph inputs too).

    Packed values have the shape of the program buffer they feed ("input" buffer
    ``arg`` of a pack's node) or come from (a vta step's "out")."""
    qg = plan.qgraph
    types = {f"%{i}": (tuple(qg.nodes[i].shape), qg.nodes[i].dtype) for i in qg.inputs}
    for s in plan.steps:
        n = qg.nodes[s.node]
        if s.kind in ("cpu", "unpack"):
            types[s.output] = (tuple(n.shape), n.dtype)
        else:
            prog = plan.programs[s.node]
            buf = prog.buffer(input_buffers(prog)[s.arg] if s.kind == "pack" else "out")
            types[s.output] = (tuple(buf.shape), buf.dtype)
    return types


def _is_constant(plan: Plan, s: Step) -> bool:
    n = plan.qgraph.nodes[s.node]
    return s.kind == "cpu" and n.op is QOp.FLOAT and n.attrs["op"] == "PARAM"


def plan_slots(plan: Plan, types) -> tuple[dict[str, int], list[int]]:
    """Slot of every value a step writes, reusing slots after the value's last reader.

    Greedy best-fit in step order (``compiler.graph.passes.plan_memory``'s rule): the
    smallest free slot that is large enough, else the largest free slot grown, else a
    new one. A slot is freed after the step that reads its value last ran (never
    shared between one step's inputs and output); graph outputs are never freed.

    Returns:
        (value name -> slot index, bytes of each slot, multiples of 64).
    """
    keep = {f"%{o}" for o in plan.qgraph.outputs}
    order = ((None, 0, s.inputs) if _is_constant(plan, s)
             else (s.output, _align(_nbytes(*types[s.output])), s.inputs) for s in plan.steps)
    slot_of, sizes, _ = best_fit(order, keep)
    return slot_of, sizes


def _signature(plan: Plan, s: Step, types) -> tuple:
    """Steps with equal signatures run the same kernel (their constants are call args)."""
    ins = tuple(types[v] for v in s.inputs)
    if s.kind != "cpu":
        return (s.kind, ins, types[s.output])
    n = plan.qgraph.nodes[s.node]
    return ("cpu", n.op.value, repr(sorted(n.attrs.items())), n.exp, n.zp, ins, types[s.output])


def _kernel_def(plan: Plan, s: Step, types, name: str, target):
    qg = plan.qgraph
    if s.kind == "pack":
        return kernels.pack(types[s.inputs[0]][0], types[s.output][0], name)
    if s.kind == "unpack":
        return kernels.unpack(types[s.inputs[0]][0], types[s.output][0], name)
    n = qg.nodes[s.node]
    return kernels.cpu_kernel(n, [qg.nodes[i] for i in n.src], qg.params, name, target)


def lower_plan(plan: Plan, cpu_target="llvm", progress=None, opt_level: int = 3) -> CompiledModel:
    """The module of an accelerator plan (module docstring).

    Args:
        plan: from ``compiler.quant.build_plan``.
        cpu_target: host LLVM target of the CPU kernels (``"llvm"``, ``"llvm -mcpu=..."``).
        progress: optional ``(iterable, total, desc) -> iterable`` (e.g. tqdm).
        opt_level: LLVM optimisation level of the kernels.

    Returns:
        ``CompiledModel`` with ``files["kernels.so"]``, ``programs`` (graph.json path ->
        Program), ``targets`` ``[cpu target, "vta"]``, ``cpu`` (the kernels' features),
        ``vta`` (the config) and ``plan``.

    Raises:
        ValueError: a non-host ``cpu_target``, or a step without a CPU kernel.
        compiler.graph_lower.LoweringError: an INT8/FLOAT op without a CPU lowering.
    """
    from compiler.codegen.llvm.target import parse_target
    from compiler.tir import lower

    tgt = parse_target(cpu_target)
    qg = plan.qgraph
    t0 = time.perf_counter()
    types = value_types(plan)
    slot_of, slot_bytes = plan_slots(plan, types)
    refs: dict[str, dict] = {f"%{i}": {"kind": "input", "index": k} for k, i in enumerate(qg.inputs)}
    refs.update({v: {"kind": "slot", "slot": k} for v, k in slot_of.items()})
    params: dict[str, np.ndarray] = {}
    kdefs: dict[tuple, tuple[str, object]] = {}     # signature -> (name, KernelDef)
    calls, workspace_bytes = [], 0
    steps = progress(plan.steps, len(plan.steps), "CPU steps") if progress else plan.steps
    for s in steps:
        n = qg.nodes[s.node]
        label = n.name or f"%{s.node}"
        if _is_constant(plan, s):
            params[n.params[0]] = np.ascontiguousarray(qg.params[n.params[0]])
            refs[s.output] = {"kind": "param", "name": n.params[0]}
            continue
        if s.kind == "vta":
            prog = plan.programs[s.node]
            calls.append({"kind": "vta", "program": f"programs/n{s.node}.vtaprog",
                          "inputs": [{"buffer": b, "ref": refs[v]}
                                     for b, v in zip(input_buffers(prog), s.inputs, strict=True)],
                          "outputs": [{"buffer": "out", "ref": refs[s.output]}], "node": label})
            continue
        sig = _signature(plan, s, types)
        if sig not in kdefs:
            kname = f"k{len(kdefs)}_{s.kind}_{n.op.value if s.kind == 'cpu' else 'n%d' % s.node}"
            kdefs[sig] = (kname, _kernel_def(plan, s, types, kname, tgt))
            own = kdefs[sig][1]
        else:   # the shared kernel's code, this step's own constants (weights, tables)
            own = _kernel_def(plan, s, types, kdefs[sig][0], tgt)
        kname, kd = kdefs[sig]
        args = [refs[v] for v in s.inputs]
        for j, value in enumerate(own.constants):
            pname = f"n{s.node}.c{j}"
            params[pname] = value
            args.append({"kind": "param", "name": pname})
        off = 0
        for w in kd.workspace:
            args.append({"kind": "workspace", "offset": off})
            off += _align(_nbytes(w.shape, w.dtype))
        workspace_bytes = max(workspace_bytes, off)
        args.append(refs[s.output])
        calls.append({"kind": "kernel", "kernel": kname, "args": args, "node": label})
    t1 = time.perf_counter()
    todo = list(kdefs.values())
    it = progress(todo, len(todo), "lowering") if progress else todo
    funcs = [lower(kd.schedule, kd.args, kname) for kname, kd in it]
    library = link_library(funcs, tgt, fp_contract=False, opt_level=opt_level)
    t2 = time.perf_counter()
    input_range = {}  # graph input node -> the real range its QUANTIZE represents
    for n in qg.nodes:
        if n.op is QOp.QUANTIZE and n.src[0] in qg.inputs and n.exp is not None:
            scale = 2.0 ** -n.exp  # the real scale, a power of two or not (qgraph's exp)
            input_range[n.src[0]] = [(-128 - n.zp) * scale, (127 - n.zp) * scale]
    gj = plan_json(
        [io_entry(qg.nodes[i].name, qg.nodes[i].shape, qg.nodes[i].dtype,
                  **({"range": input_range[i]} if i in input_range else {})) for i in qg.inputs],
        [io_entry(nm, types[f"%{o}"][0], types[f"%{o}"][1], ref=refs[f"%{o}"])
         for nm, o in zip(qg.output_names, qg.outputs)],
        slot_bytes, calls, kernel_abi(kdefs.values()), workspace_bytes=workspace_bytes)
    stats = {"kernels": len(kdefs), "calls": len(calls),
             "vta_programs": len(plan.programs), "vta_compile_s": plan.compile_s,
             "lower_s": t1 - t0, "llvm_s": t2 - t1,
             "layers": {str(k): v for k, v in plan.layer_stats.items()}}
    return CompiledModel(gj, {"kernels.so": library}, params, stats,
                         targets=[str(tgt), "vta"], cpu=cpu_record(tgt),
                         programs={f"programs/n{k}.vtaprog": p for k, p in plan.programs.items()},
                         vta={"config": plan.config.to_dict(), "config_name": plan.config.name},
                         plan=plan)
