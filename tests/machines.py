"""Other machines' views of their CPUs, to build and load modules as if on them.

Each ``tests/fixtures/cpus/<name>.json`` holds one machine: what LLVM's host query
reports there (``llvm_cpu``, ``llvm_features``: name -> on) and the flags line its kernel
prints in ``/proc/cpuinfo`` (``cpuinfo_flags``), with ``source`` saying which machine it
is and what its kernel hides. :func:`as_host` makes the compiler's "this machine" and the
runtime's host view those of the fixture, so no test depends on the CPU it runs on.
"""
from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest

from vta_hw.host_cpu import parse_os_flags

FOLDER = Path(__file__).parent / "fixtures" / "cpus"
#: every fixture machine, by file name
MACHINES = {p.stem: json.loads(p.read_text()) for p in sorted(FOLDER.glob("*.json"))}
#: platform.machine() of each architecture
_MACHINE = {"x86_64": "x86_64", "aarch64": "aarch64"}


def os_flags(name: str) -> frozenset:
    """The flags fixture machine ``name``'s kernel lists."""
    return parse_os_flags("flags\t: " + MACHINES[name]["cpuinfo_flags"])


def host_target_of(name: str):
    """The compiler's "this machine" target on fixture machine ``name``."""
    from compiler.codegen.llvm.target import host_view_target
    m = MACHINES[name]
    return host_view_target(m["triple"], m["llvm_cpu"], m["llvm_features"], os_flags(name))


@contextlib.contextmanager
def as_host(name: str, compile_side: bool = True):
    """Within: the runtime's host view (flags, architecture) is fixture machine ``name``'s,
    and with ``compile_side`` the compiler's host target too (``host_target``)."""
    from compiler.codegen.llvm import target
    from compiler.graph_lower import lower
    from driver.runtime import cpu_features
    m = MACHINES[name]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cpu_features, "host_cpu_flags", lambda: os_flags(name))
        mp.setattr(cpu_features, "host_machine", lambda: _MACHINE[m["triple"].split("-")[0]])
        if compile_side:
            tgt = host_target_of(name)
            mp.setattr(target, "host_target", lambda: tgt)
            mp.setattr(lower, "host_target", lambda: tgt)
        yield
