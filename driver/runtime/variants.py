"""The CPU variant of a module that this machine runs: the one check every loader makes.

A module of one CPU (manifest ``cpu``) loads where this machine has every code feature it
records (``cpu_features.check_cpu``). A fleet module (manifest ``variants``, written by
``compiler/graph_lower/fleet.py``) holds a plan, kernels and parameters per CPU; the
variant loaded is the one with the most code features among those this machine can run
(``x86-64-v4`` over ``-v3`` over ``-v2``; on a tie, the later listed), and the module's
``stats()["cpu_variant"]`` names it.
"""
from __future__ import annotations

from .cpu_features import check_cpu, cpu_problem
from .errors import RuntimeModuleError
from .source import RECOMPILE, ModuleSource


def _entries(source: ModuleSource) -> list:
    variants = source.manifest.get("variants")
    if not isinstance(variants, list) or not all(
            isinstance(v, dict) and isinstance(v.get("name"), str)
            and isinstance(v.get("files"), dict) and isinstance(v.get("cpu"), dict)
            for v in variants):
        raise RuntimeModuleError(f"{source.where}/manifest.json: 'variants' must be a list of "
                                 "{name, cpu, targets, files} entries; " + RECOMPILE)
    names = [v["name"] for v in variants]
    twice = next((n for i, n in enumerate(names) if n in names[:i]), None)
    if twice is not None:
        raise RuntimeModuleError(f"{source.where}/manifest.json: CPU variant {twice!r} is listed "
                                 "twice; " + RECOMPILE)
    return variants


def select_variant(source: ModuleSource) -> ModuleSource:
    """``source`` itself for a module of one CPU (checked), or the view of the fleet
    module's best variant this machine runs (module docstring).

    Raises:
        RuntimeModuleError: the one CPU's check fails, or no variant runs here (the message
            gives each variant's reason, the first in full).
    """
    executor = source.manifest.get("executor", "graph")
    if "variants" not in source.manifest:
        check_cpu(source.manifest.get("cpu"), source.where, executor)
        return source
    variants = _entries(source)
    problems = [cpu_problem(v["cpu"], f"{source.where} (variant {v['name']})", executor)
                for v in variants]
    runnable = [(len(v["cpu"].get("features", [])), i) for i, (v, p) in
                enumerate(zip(variants, problems)) if p is None]
    if not runnable:
        names = ", ".join(v["name"] for v in variants)
        raise RuntimeModuleError(f"none of the {len(variants)} CPU variants ({names}) runs "
                                 f"here: {problems[0]}")
    return source.variant(variants[max(runnable)[1]])
