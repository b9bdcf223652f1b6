"""Fused graph -> GPU module (CUDA or OpenCL): kernel source (+ cubin) + graph JSON + parameters.

The groups are declared as for the CPU (``lower.lower_group``), for one fixed CPU
target (:data:`DECLARE_TARGET`, 128-bit vectors: SSE4.2) whatever the build machine, so the
CPU-only choices of the strategies (Winograd and column-vectorised 1x1 convs on 256- and
512-bit targets, their channel blocks and register tiles) stay out
of GPU kernels and a GPU build does not depend on the host; each
group's root stages (padded copies, helper stages, the output) become one GPU
kernel each (``topi.gpu.stage``: thread-bound te schedules, reductions per
thread), printed by ``codegen.cuda`` / ``codegen.opencl`` into ONE source,
compiled once. A saved module is a folder of the one module format (version 3,
``module_file.py``; manifest ``targets`` ``["cuda -arch=sm_90"]`` or ``["opencl"]``,
no ``cpu`` entry)::

    model.vtamod/
      manifest.json   targets, files with their sha256, inputs/outputs, stats
      graph.json      the execution plan (below)
      kernels.cu      CUDA C source (target cuda)   | kernels.cl  OpenCL C (target opencl)
      kernels.cubin   SASS for ``arch`` (target cuda; NVRTC or nvcc, no GPU needed)
      params.npz      constants, packed as for the CPU

graph.json is the CPU plan (see ``build.py``) with:

* buffer refs ``{"kind": "scratch", "index": j}`` instead of workspace offsets:
  scratch buffer j (``scratch_bytes[j]``) holds the j-th workspace tensor of
  whichever group runs, so no sub-buffer offsets are needed on OpenCL;
* ``calls``: one per GPU kernel launch, each with ``grid`` and ``block`` (x, y, z);
* ``kernels``: name -> argument shapes/dtypes.

``driver.gpu_runtime`` runs it through the CUDA driver API or pyopencl.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from compiler import te
from compiler.graph import Graph, Op
from compiler.te.tensor import PlaceholderOp, tensors_read

from .build import CompiledModel, _nbytes, graph_outputs, plan_calls
from .lower import signature
from .plan_file import io_entry, plan_json
from .gpu_space import AUTO, StageInfo, space_of, value
from .space import Config, ConfigSpace

TARGETS = ("cuda", "opencl")


@dataclass
class GpuStage:
    """One kernel launch of a group: lowered ``func``; ``arg_index`` maps its parameters to the
    group's ABI arguments (``KernelDef.args``)."""

    func: object
    arg_index: list


#: the CPU target GPU groups are declared for (see the module docstring)
DECLARE_TARGET = "llvm -mtriple=x86_64-unknown-linux-gnu -mcpu=x86-64-v2"


def declare_target():
    """The parsed :data:`DECLARE_TARGET` (a ``Target``)."""
    from compiler.codegen.llvm.target import parse_target
    return parse_target(DECLARE_TARGET)


def parse_gpu_target(target: str) -> tuple[str, str | None]:
    """``"cuda"``, ``"cuda -arch=sm_80"``, ``"opencl"`` -> (kind, arch or None).

    Raises ValueError for another kind or option."""
    parts = target.split()
    kind = parts[0] if parts else ""
    if kind not in TARGETS:
        raise ValueError(f"GPU target must be 'cuda' or 'opencl', not {target!r}")
    arch = "sm_90" if kind == "cuda" else None
    for p in parts[1:]:
        if kind == "cuda" and p.startswith("-arch="):
            arch = p[len("-arch="):]
        else:
            raise ValueError(f"unknown option {p!r} in target {target!r}; "
                             + ("cuda takes -arch=sm_XX only (e.g. 'cuda -arch=sm_80')"
                                if kind == "cuda" else "opencl takes no options"))
    return kind, arch


def _root_order(mats: list) -> list:
    """The materialised tensors, producers first."""
    mset = set(mats)
    order, seen = [], set()

    def deps(t):
        out, stack, vis = [], list(t.op.reads()), set()
        while stack:
            x = stack.pop()
            if x in vis or isinstance(x.op, PlaceholderOp):
                continue
            vis.add(x)
            if x in mset:
                out.append(x)
            else:
                stack.extend(x.op.reads())
        return out

    def visit(t):
        if t in seen:
            return
        seen.add(t)
        for d in deps(t):
            visit(d)
        order.append(t)
    for t in mats:
        visit(t)
    return order


def _cut_stages(kdef):
    """The group's materialised tensors (producers first), each cut out of the chain
    (``stage.split_stage``): [(tensor, its cut-out output, its per-thread reductions)],
    and the map placeholder -> the tensor it stands for."""
    from compiler.topi.gpu.stage import split_stage
    mats = _root_order(list(kdef.workspace) + [kdef.args[-1]])
    cut = {t: te.placeholder(t.shape, t.dtype, t.name) for t in mats}
    orig = {ph: t for t, ph in cut.items()}
    stages = []
    for t in mats:
        out, reds = split_stage(t, {x: ph for x, ph in cut.items() if x is not t})
        stages.append((t, out, reds))
    return stages, orig


def gpu_space(kdef) -> ConfigSpace:
    """The config space of the group ``kdef``'s GPU kernels (``gpu_space.py``); its default
    point gives the kernels of an untuned build."""
    stages, _ = _cut_stages(kdef)
    return space_of([StageInfo(out, tuple(reds)) for _, out, reds in stages])


def gpu_stages(kdef, kname: str, config: "Config | None" = None) -> tuple[list, list]:
    """The kernel launches of one group (see the module docstring), in execution order, and
    the bytes of each extra scratch buffer they use beyond the group's workspace.

    ``config``: a point of ``gpu_space(kdef)`` (None: its default point, today's kernels).
    ``GpuStage.arg_index`` entries are ABI argument indices, or ``("extra", k)`` for extra
    scratch buffer k (the partial sums of a split-K reduction)."""
    from compiler.tir import lower
    from compiler.topi.gpu.stage import (conv_tile, replace_reads, schedule_partial, schedule_stage,
                                         split_k, split_k_factor)

    args = kdef.args
    index = {t: i for i, t in enumerate(args)}
    cut_stages, orig = _cut_stages(kdef)
    threads, unroll = value(config, "threads"), value(config, "unroll")
    adapt = threads == AUTO
    threads = 256 if adapt else threads
    tile_v, split_v, ptile_v = value(config, "tile"), value(config, "split_k"), value(config, "ptile")
    extra: list = []
    stages = []

    def placeholders(ts):
        reads = []
        for x in ts:
            for y in tensors_read(x.op.body):
                if isinstance(y.op, PlaceholderOp) and y not in reads:
                    reads.append(y)
        return reads

    def where(y):
        return orig[y] if y in orig else y

    for j, (t, out, reds) in enumerate(cut_stages):
        info = StageInfo(out, tuple(reds))
        tile = conv_tile(out, reds) if tile_v == AUTO or not info.conv_block else tile_v
        if len(reds) == 1:
            acc = reds[0]
            tile_p = ((4 if len(acc.shape) >= 2 and acc.shape[-1] % 4 == 0 else 1)
                      if ptile_v == AUTO or acc.shape[-1] % ptile_v else ptile_v)
            parts = (split_k_factor(acc, tile_p) if split_v == AUTO or not info.split_axis
                     else split_v)
            if parts > 1:
                partial, total = split_k(acc, parts)
                ph = te.placeholder(partial.shape, partial.dtype, partial.name)
                orig[ph] = ("extra", len(extra))
                extra.append(_nbytes(partial))
                total = replace_reads(total, partial, ph)
                out, reds = replace_reads(out, acc, total), [total]
                reads = placeholders([partial])
                sp = schedule_partial(partial, threads, tile_p, unroll, adapt)
                func = lower(sp, reads + [partial], f"{kname}_s{j}p")
                stages.append(GpuStage(func, [_arg(where(y), index) for y in reads] + [orig[ph]]))
        s = schedule_stage(out, reds, threads, tile, value(config, "vector"), unroll, adapt,
                           value(config, "shared"))
        reads = placeholders([out, *reds])
        func = lower(s, reads + [out], f"{kname}_s{j}")
        stages.append(GpuStage(func, [_arg(where(y), index) for y in reads] + [index[t]]))
    return stages, extra


def _arg(x, index):
    return x if isinstance(x, tuple) else index[x]


def compile_graph_gpu(graph: Graph, params: dict, memory_plan, target: str = "cuda",
                      progress=None, tuning=None, device: "dict | None" = None) -> CompiledModel:
    """Lower every group to GPU kernels, print them into one source, compile it (cuda).

    ``tuning`` (a ``compiler.autotune.TuningContext``, or None) gives each group the config
    of the best record measured on ``device``, this machine's device of ``target``'s kind
    (its tuning-log record, ``compiler.autotune.gpu_task.gpu_target_record``; None: no
    device here) (``TuningContext.config_for_gpu``); other groups take the default point.

    Raises:
        ValueError: an unknown target, or a graph that is not fully fused.
        compiler.graph_lower.LoweringError: an operator without a lowering.
        RuntimeError: the CUDA compiler (NVRTC or nvcc) is missing or fails.
    """
    from compiler.codegen.gpu import c_source
    kind, arch = parse_gpu_target(target)
    t0 = time.perf_counter()
    kernels, calls, out_params, _ = plan_calls(graph, params, memory_plan, progress,
                                               target=declare_target())
    node_of = {signature(n): n for n in graph.nodes() if n.op is Op.FUSED}
    todo = list(kernels.items())
    it = progress(todo, len(todo), "lowering") if progress else todo
    stages, extras = {}, {}
    for sig, (kname, kdef) in it:
        cfg = tuning.config_for_gpu(node_of[sig], kdef, device) if tuning is not None else None
        stages[kname], extras[kname] = gpu_stages(kdef, kname, cfg)
    t2 = time.perf_counter()
    funcs = [st.func for sts in stages.values() for st in sts]
    if kind == "cuda":
        from compiler.codegen.gpu import cuda
        code, sources = c_source.print_module(cuda.CUDAPrinter, funcs)
    else:
        from compiler.codegen.gpu import opencl
        code, sources = c_source.print_module(opencl.OpenCLPrinter, funcs)
    src_of = {k.name: k for k in sources}
    defs = {kname: kdef for kname, kdef in kernels.values()}

    scratch: list = []
    gcalls, kspec = [], {}
    for call in calls:
        kdef = defs[call["kernel"]]
        refs = list(call["args"])
        ws = 0
        for i, r in enumerate(refs):
            if r["kind"] == "workspace":
                nb = _nbytes(kdef.args[i])
                if ws == len(scratch):
                    scratch.append(0)
                scratch[ws] = max(scratch[ws], nb)
                refs[i] = {"kind": "scratch", "index": ws}
                ws += 1
        extra_index = []
        for nb in extras[call["kernel"]]:
            if ws == len(scratch):
                scratch.append(0)
            scratch[ws] = max(scratch[ws], nb)
            extra_index.append(ws)
            ws += 1
        for st in stages[call["kernel"]]:
            ks = src_of[st.func.name]
            aref = [{"kind": "scratch", "index": extra_index[i[1]]} if isinstance(i, tuple) else refs[i]
                    for i in st.arg_index]
            kspec.setdefault(ks.name, [{"shape": list(p.shape), "dtype": p.dtype}
                                       for p in st.func.params])
            gcalls.append({"kind": "kernel", "kernel": ks.name, "args": aref, "node": call["node"],
                           "grid": list(ks.launch.grid), "block": list(ks.launch.block)})
    files = {}
    if kind == "cuda":
        files["kernels.cu"] = code.encode()
        files["kernels.cubin"] = cuda.compile_source(code, "model", arch, "cubin")
    else:
        files["kernels.cl"] = code.encode()
    t3 = time.perf_counter()
    gj = plan_json([io_entry(n.name, n.shape, n.dtype) for n in graph.inputs],
                   graph_outputs(graph, params, memory_plan, out_params),
                   memory_plan.slot_bytes, gcalls, kspec, scratch_bytes=scratch)
    stats = {"kernels": len(kspec), "calls": len(gcalls), "lower_s": t2 - t0,
             "llvm_s": t3 - t2, "device_compile_s": t3 - t2}
    return CompiledModel(gj, files, out_params, stats,
                         targets=[f"cuda -arch={arch}" if kind == "cuda" else "opencl"])
