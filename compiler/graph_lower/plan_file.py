"""The one writer of a module's execution plan (graph.json) for every route: the CPU
(``build.py``), the GPUs (``gpu.py``) and the accelerator (``compiler/quant/lower_plan.py``);
the schema is ``build.py``'s module docstring, and ``driver/runtime/plan.py`` reads it."""
from __future__ import annotations


def io_entry(name: str, shape, dtype: str, **extra) -> dict:
    """One ``inputs`` / ``outputs`` entry: name, shape (a list), dtype, then ``extra``
    (``ref`` of an output, ``range`` of a calibrated input)."""
    return {"name": name, "shape": list(shape), "dtype": dtype, **extra}


def kernel_abi(kernels) -> dict:
    """The plan's ``kernels``: name -> argument shapes and dtypes, from ``(name, KernelDef)``
    pairs."""
    return {name: [{"shape": list(t.shape), "dtype": t.dtype} for t in kdef.args]
            for name, kdef in kernels}


def plan_json(inputs: list, outputs: list, slots, calls: list, kernels: dict,
              **scratch: int) -> dict:
    """graph.json: ``inputs``, ``outputs``, ``slots`` (bytes of each activation slot), the
    scratch size (``workspace_bytes=`` on CPUs, ``scratch_bytes=`` on GPUs), ``calls`` in
    execution order and ``kernels`` (:func:`kernel_abi`), in that key order."""
    return {"inputs": inputs, "outputs": outputs, "slots": list(slots), **scratch,
            "calls": calls, "kernels": kernels}
