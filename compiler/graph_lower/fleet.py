"""One module for a fleet of CPUs: a kernel library per CPU or x86-64 level, in one folder.

``build_model(model, target="llvm -mcpu=x86-64-v2,x86-64-v3,x86-64-v4")`` (and
``cpu_target=`` of the accelerator route) builds the model once per ``-mcpu`` entry;
:func:`combine` folds the builds into one :class:`CompiledModel` whose manifest lists
every variant::

    "variants": [{"name": "x86-64-v2", "cpu": {...}, "targets": [...],
                  "files": {"graph.json": "graph.json", "kernels.so": "kernels.so",
                            "params.npz": "params.npz"}},
                 {"name": "x86-64-v3", "cpu": {...}, "targets": [...],
                  "files": {"graph.json": "variants/x86-64-v3/graph.json",
                            "kernels.so": "variants/x86-64-v3/kernels.so",
                            "params.npz": "variants/x86-64-v3/params.npz"},
                  "shared_params": ["w1", ...]}, ...]

The first variant is the module's own plan, kernels and parameters (a loader that knows
no variants runs it, its ``cpu`` is the manifest's). Each other variant's part is stored
under ``variants/<name>/`` unless it equals the first's byte for byte (the accelerator's
programs), then the entry names the first's file. Parameters are shared per array: a
variant's ``params.npz`` holds the arrays that differ from the first's (weights packed
for another vector width), its entry's ``shared_params`` names those it reads from the
first's ``params.npz``. The plan is
per variant because a target's vector width chooses its layouts and weight packing.
``driver.runtime`` loads the variant with the most code features this host has
(``driver/runtime/variants.py``). onnxruntime and OpenVINO dispatch by ISA inside each
kernel at run time; TVM builds for one ``-mcpu``.
"""
from __future__ import annotations

import numpy as np

from .build import CompiledModel
from .module_file import module_bytes, params_bytes


def _name(target: str) -> str:
    """The ``-mcpu`` value of a target string (the variant's name)."""
    return next(w.partition("=")[2] for w in target.split() if w.startswith("-mcpu="))


def _shared_params(base: dict, params: dict) -> set:
    """The names of ``params`` whose arrays equal ``base``'s of that name (dtype, shape and
    every value): a variant reads those from the first variant's params.npz."""
    return {k for k, v in params.items() if k in base and base[k].dtype == v.dtype
            and base[k].shape == v.shape and np.array_equal(base[k], v)}


def combine(builds: list) -> CompiledModel:
    """Fold ``builds`` (``(target string, CompiledModel)`` per CPU, of one model, the first
    the fallback) into one fleet module (module docstring); ``stats`` are the first's plus
    ``variants``: name -> that build's ``llvm_s`` and kernel-file bytes.

    Raises:
        ValueError: fewer than two builds, or builds of different inputs or outputs.
    """
    if len(builds) < 2:
        raise ValueError(f"a fleet module combines two or more builds, not {len(builds)}")
    first = builds[0][1]
    base = module_bytes(first)
    files, entries, stats = dict(first.files), [], {}
    for target, cm in builds:
        name = _name(target)
        if (cm.graph_json["inputs"], [o["shape"] for o in cm.graph_json["outputs"]]) != (
                first.graph_json["inputs"], [o["shape"] for o in first.graph_json["outputs"]]):
            raise ValueError(f"variant {name}: its inputs or outputs differ from the first "
                             "variant's; a fleet module holds builds of one model")
        entry = {"name": name, "cpu": cm.cpu, "targets": list(cm.targets), "files": {}}
        if cm is first:
            entry["files"] = {part: part for part in base}
        else:
            shared = _shared_params(first.params, cm.params)
            own = {k: v for k, v in cm.params.items() if k not in shared}
            # no own arrays: the first's params.npz, which then compares equal below
            for part, data in module_bytes(cm, params_bytes(own) if own else
                                           base["params.npz"]).items():
                path = part if base.get(part) == data else f"variants/{name}/{part}"
                entry["files"][part] = path
                if path != part:
                    files[path] = data
            if own:
                entry["shared_params"] = sorted(shared)
        entries.append(entry)
        stats[name] = {"llvm_s": cm.stats.get("llvm_s"),
                       "kernel_bytes": sum(len(d) for k, d in cm.files.items()
                                           if k.startswith(("kernels.", "model.")))}
    combined = CompiledModel(first.graph_json, files, first.params, dict(first.stats),
                             targets=list(first.targets), cpu=first.cpu,
                             programs=first.programs, vta=first.vta, plan=first.plan,
                             executor=first.executor, aot=first.aot, variants=entries)
    combined.stats["variants"] = stats
    return combined

