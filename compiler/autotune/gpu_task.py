"""GPU tuning tasks: one per distinct fused group of a model built for ``cuda`` or ``opencl``.

A group's kernels come from the ``topi.gpu.stage`` template whatever its ops, so
the task (kind ``"gpu"``) is the whole group and its space is
``graph_lower.gpu.gpu_space`` (block and thread tiles, split-K, vector width,
unroll). The runner builds the group's kernels at a config point, runs them on
the device and times them.

The log's ``target`` for these records names the device the costs were measured
on (:func:`gpu_target_record`): the target string, the device's name and its
driver version, so a log applies only where it was measured (a build asks for
the record of the device on the building machine).
"""
from __future__ import annotations

import hashlib

from compiler.graph import Graph, Op

from vta_hw.errors import VtaError

from .task import Task


class GpuDeviceError(VtaError, RuntimeError):
    """The GPU target has no device on this machine to measure on or to match logs against."""


def _opencl_record(target: str) -> "dict | None":
    try:
        import pyopencl as cl
    except ImportError:
        return None
    try:
        devs = [d for p in cl.get_platforms() for d in p.get_devices()]
    except cl.Error:        # no ICD loader, no platform
        return None
    if not devs:
        return None
    d = devs[0]      # the device driver.gpu_runtime and codegen.gpu.opencl run on
    return {"target": "opencl", "device": d.name.strip(), "driver": d.driver_version.strip(),
            "platform": d.platform.version.strip()}


def _cuda_record(target: str) -> "dict | None":
    from compiler.codegen.gpu import cuda
    from compiler.graph_lower.gpu import parse_gpu_target
    if not cuda.gpu_available():
        return None
    from cuda.bindings import driver
    _, arch = parse_gpu_target(target)
    err, version = driver.cuDriverGetVersion()
    return {"target": f"cuda -arch={arch}", "device": cuda.device_name(0),
            "driver": str(version) if int(err) == 0 else "unknown"}


#: GPU target kind -> record(target) of its device here, None if there is none
DEVICE_RECORDS = {"opencl": _opencl_record, "cuda": _cuda_record}


def gpu_target_record(target: str) -> "dict | None":
    """The tuning log's ``target`` for GPU ``target`` (``"opencl"``, ``"cuda -arch=sm_90"``) on
    this machine's device: ``{"target", "device", "driver"[, "platform"]}``; None when the
    machine has no such device (no record can then match)."""
    return DEVICE_RECORDS[target.split()[0]](target)


def require_device(target: str) -> dict:
    """:func:`gpu_target_record`, or ``GpuDeviceError`` naming the missing device and the fix."""
    rec = gpu_target_record(target)
    if rec is None:
        if target.split()[0] == "cuda":
            raise GpuDeviceError(
                f"target {target!r}: no CUDA GPU on this machine (cuda-bindings and an NVIDIA "
                "driver with a device are needed to measure candidates); tune with --target "
                "opencl here, or run `vta tune --target cuda` on a machine with a GPU")
        raise GpuDeviceError(f"target {target!r}: no OpenCL device on this machine; install "
                             "pyopencl and a driver (PoCL: apt-get install pocl-opencl-icd)")
    return rec


def gpu_workload_key(node) -> str:
    """``gpu:<group name>(<input shapes, c for constants>-><output shape>;<digest>)``: equal for
    groups of equal bodies and inputs (the digest covers every op, shape, dtype and attribute)."""
    body: Graph = node.attr("body")
    lines = [f"{s.shape}{s.dtype}{'c' if s.op is Op.PARAM else ''}" for s in node.src]
    names = {n: i for i, n in enumerate(body.inputs)}
    for n in body.nodes():
        if n in names:
            continue
        names[n] = len(names)
        attrs = ",".join(f"{k}={v!r}" for k, v in n.attrs)
        lines.append(f"{n.op.name}({[names[s] for s in n.src]})->{n.shape}{n.dtype};{attrs}")
    digest = hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]
    ins = ",".join("x".join(map(str, s.shape)) + ("c" if s.op is Op.PARAM else "") for s in node.src)
    name = node.attr("name").replace("fused_", "")
    return f"gpu:{name}({ins}->{'x'.join(map(str, node.shape))};{digest})"


def gpu_tasks(graph: Graph, target: str) -> list[Task]:
    """Tasks of an optimized (fused) graph's groups whose GPU space has more than one point.

    Raises:
        GpuDeviceError: no device of ``target``'s kind on this machine.
    """
    from compiler.graph_lower.gpu import declare_target, gpu_space
    from compiler.graph_lower.lower import lower_group
    rec = require_device(target)
    tasks: dict[str, Task] = {}
    for n in graph.nodes():
        if n.op is not Op.FUSED:
            continue
        key = gpu_workload_key(n)
        if key in tasks:
            tasks[key].weight += 1
            continue
        space = gpu_space(lower_group(n, "k", declare_target(), None))
        if space.size <= 1:
            continue
        tasks[key] = Task(key, "gpu", space, {"node": n, "target": target}, rec, 1,
                          n.label or n.attr("name"))
    return list(tasks.values())


def featurize_gpu(task, config) -> list[float]:
    """Loop-IR statistics summed over the group's kernels, then the knob values (log2 of
    numbers, -2 for ``"auto"``, -1 for 0, the index of an ``unroll`` choice), one slot per
    knob."""
    from compiler.graph_lower.gpu import declare_target, gpu_stages
    from compiler.graph_lower.gpu_space import AUTO, KNOBS, value
    from compiler.graph_lower.lower import lower_group
    from compiler.topi.gpu.stage import UNROLL

    from .loop_features import _log2, loop_features
    kdef = lower_group(task.payload["node"], "cand", declare_target(), None)
    stages, _ = gpu_stages(kdef, "cand", config)
    total = None
    for st in stages:
        f = loop_features(st.func)
        total = f if total is None else [a + b for a, b in zip(total, f)]
    knobs = []
    for k in KNOBS:
        v = value(config, k.name)
        knobs.append(-2.0 if v == AUTO else float(UNROLL.index(v)) if k.name == "unroll"
                     else _log2(v))
    return total + [float(len(stages))] + knobs
