"""Run compiled models: one loader for every module (numpy + ctypes; no compiler).

A module is a folder of the one format, version 3 (``compiler/graph_lower/module_file.py``)::

    model.vtamod/
      manifest.json   format "vtamod", version 3, targets, CPU features, files + sha256, ...
      graph.json      the execution plan: inputs, outputs, slots, calls ("kernel" / "vta")
      kernels.so      CPU kernels (C ABI); GPU modules: kernels.cubin or kernels.cl
      params.npz      constants the kernels read
      programs/*.vtaprog   accelerator programs (accelerator modules)

or a ``compiler.graph_lower.CompiledModel`` in memory (no save/load round trip).

Usage::

    from driver.runtime import load_module
    m = load_module("out/resnet18.vtamod")             # CPU (or GPU: cuda / opencl)
    m = load_module("out/digits_vta.vtamod", device="fsim")   # accelerator: tsim by default
    m.set_input("image", x); m.run(); y = m.get_output(0)     # or: y, = m(x)
    m.input_info(), m.output_info(), m.benchmark(), m.stats()
    m.set_input("image", torch_tensor)                  # DLPack: no copy when dtype, shape,
    t = torch.from_dlpack(m.get_output(0, copy=False))  # contiguity and alignment allow

Loading checks, each a one-line :class:`RuntimeModuleError` (a ValueError) that
names the file and says what to do: folders of an earlier format (recompile),
a file whose sha256 differs from the manifest, CPU features the kernels need and
this machine lacks (``cpu_features.py``), a missing kernel, parameter or program.

Layout: ``source`` (folder or memory, manifest and hashes), ``cpu_features``,
``dlpack`` (``Array``: zero-copy views for DLPack consumers; inputs from producers),
``native`` (buffers, params, shared libraries, libgomp), ``executor``
(:class:`GraphModule`: CPU and accelerator calls), ``aot`` (:class:`AotModule`: the
one call into an AOT module's ``vtamod_run``), ``vta_call`` (the "vta" call);
GPU modules run in ``driver.gpu_runtime``. Nothing here imports ``compiler``,
llvmlite or onnx.
"""
from __future__ import annotations

import os

from .aot import AotModule
from .amx import needs_amx, request_amx
from .cpu_features import check_cpu, host_cpu_flags
from .dlpack import Array
from .errors import RuntimeModuleError
from .executor import GraphModule
from .native import check_shared_library, load_params, num_threads
from .source import FORMAT, OLD_FORMATS, VERSION, ModuleSource, from_memory, open_folder, read_manifest
from .variants import select_variant

__all__ = ["AotModule", "FORMAT", "OLD_FORMATS", "VERSION", "Array", "GraphModule", "ModuleSource", "RuntimeModuleError",
           "check_cpu", "check_shared_library", "host_cpu_flags", "load_module", "load_params",
           "num_threads", "open_folder", "read_manifest"]

#: the accelerator backend of load_module(..., device=None)
DEFAULT_DEVICE = "tsim"


def _source(module) -> ModuleSource:
    if isinstance(module, ModuleSource):
        return module
    if isinstance(module, (str, os.PathLike)):
        return open_folder(module)
    if all(hasattr(module, a) for a in ("graph_json", "files", "params", "targets")):
        return from_memory(module)
    raise TypeError(f"load_module takes a module folder (str or path) or a CompiledModel from "
                    f"compiler.build_model, not {type(module).__name__}")


def _device(source: ModuleSource, device, device_options: dict):
    from driver.device import Device
    from vta_hw.config import VTAConfig
    if isinstance(device, Device):
        if device_options:
            raise TypeError(f"device options {', '.join(device_options)} apply when the device "
                            "is named by a string, not to a Device instance")
        return device
    vta = source.manifest.get("vta") or {}
    if "config" not in vta:
        raise RuntimeModuleError(f"{source.where}: an accelerator module without an accelerator "
                                 "config in its manifest; recompile it with `vta compile`")
    return Device(device or DEFAULT_DEVICE, config=VTAConfig.from_dict(vta["config"]),
                  **device_options)


def _open_graph(source: ModuleSource, device, timeout_s, device_options) -> GraphModule:
    dev = _device(source, device, device_options) if source.kind == "vta" else None
    return GraphModule(source, dev, timeout_s)


def _open_aot(source: ModuleSource, device, timeout_s, device_options) -> AotModule:
    return AotModule(source)


#: the manifest's ``executor`` -> ``(source, device, timeout_s, device_options) -> module``
EXECUTORS = {"graph": _open_graph, "aot": _open_aot}


def load_module(module, device=None, timeout_s: "float | None" = None, **device_options):
    """Open a compiled module for running.

    Args:
        module: a module folder (``str`` / path) or a ``CompiledModel`` (runs from memory;
            its kernels.so is opened from memory, as a folder's is after its hash check).
        device: accelerator modules only: a backend name ("tsim", the default; "fsim",
            "rtl") or a ``driver.device.Device`` of the module's config.
        timeout_s: accelerator modules: seconds one program run may take (None: no limit).
        **device_options: passed to ``Device`` (``dram_timing``, ``max_cycles``).

    Returns:
        a :class:`GraphModule` (CPU and accelerator modules), an :class:`AotModule`
        (``executor: "aot"``: one C call runs the model), or a
        ``driver.gpu_runtime.GpuGraphModule`` (cuda / opencl).

    Raises:
        RuntimeModuleError: no module there, an earlier format (recompile), a damaged
            or edited file (sha256), a CPU feature this machine lacks (a fleet module: no
            variant this machine runs; ``variants.py``), a device given
            for a module that runs on no accelerator, or a part the plan names is absent.
        driver.device.DeviceError: an unknown backend name.
    """
    source = _source(module)
    kind = source.kind
    if kind != "vta" and (device is not None or device_options or timeout_s is not None):
        what = device if device is not None else ", ".join(device_options) or "timeout_s"
        raise RuntimeModuleError(f"{source.where} is a {'GPU' if kind == 'gpu' else 'CPU'} module "
                                 f"(targets: {', '.join(source.targets)}); device {what!r} applies "
                                 "to accelerator modules: compile with --target vta for the "
                                 "accelerator")
    source = select_variant(source)
    if needs_amx(source.manifest.get("cpu")):
        request_amx(source.where)
    if kind == "gpu":
        from driver.gpu_runtime import GpuGraphModule
        return GpuGraphModule(source)
    executor = source.manifest.get("executor", "graph")
    if executor not in EXECUTORS:
        raise RuntimeModuleError(f"{source.where}: executor {executor!r}, this runtime runs "
                                 f"{', '.join(map(repr, EXECUTORS))}; update it or recompile the "
                                 "module with `vta compile`")
    return EXECUTORS[executor](source, device, timeout_s, device_options)
