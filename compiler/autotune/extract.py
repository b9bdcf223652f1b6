"""A model's tuning tasks for any target: the one entry (``vta tune``, ``driver.tune``) over
the task kinds of ``task.py`` (CPU groups, accelerator convs) and ``gpu_task.py`` (GPU
groups).
"""
from __future__ import annotations

from .gpu_task import gpu_tasks
from .task import Task, llvm_tasks, vta_tasks


def extract_tasks(model, target: str = "llvm", *, input_shapes=None, layout_block=None,
                  vta_config=None, calib=None) -> list[Task]:
    """The tuning tasks of ``model`` (anything ``build_model`` takes) for ``target``:
    ``"llvm"`` (or another LLVM target string), ``"vta"`` (the accelerator's conv2d and
    dense layers on ``vta_config``, a preset name or ``VTAConfig``; default preset), or
    ``"opencl"`` / ``"cuda"`` (the fused groups' GPU kernels, ``gpu_task.py``).

    Raises:
        ValueError: a target that is neither an LLVM target nor ``"vta"``, cuda, opencl.
        compiler.autotune.gpu_task.GpuDeviceError: a GPU target without its device here.
        compiler.frontend.FrontendError: the model does not import.
    """
    from compiler.frontend import import_model
    from compiler.graph import optimize
    graph, params = import_model(model, input_shapes=input_shapes)
    if target.split()[0] == "vta":
        from vta_hw.config import VTAConfig, load_config
        cfg = vta_config if isinstance(vta_config, VTAConfig) else load_config(vta_config)
        return vta_tasks(graph, params, cfg, calib)
    opt = optimize(graph, params, layout_block=layout_block)
    if target.split()[0] in ("cuda", "opencl"):
        return gpu_tasks(opt.graph, target)
    return llvm_tasks(opt.graph, target)
