"""The "vta" call kind of the execution plan: run an accelerator program on a device.

A call ``{"kind": "vta", "program": "programs/n5.vtaprog", "inputs": [{"buffer": "data",
"ref": ref}, ...], "outputs": [{"buffer": "out", "ref": ref}], "node": label}`` copies
each input ref's bytes, viewed as the program buffer's shape/dtype, into the loaded
program (``Loaded.copy_in``), runs it on the module's ``driver.device.Device``
(``run_sync`` with a timeout) and copies each output buffer into its ref.
Packed accelerator values live in slots like any other value.
"""
from __future__ import annotations

from .errors import RuntimeModuleError


def new_counters(label: str) -> dict:
    """Per-layer counters: runs, cycles, GEMM MACs, DRAM bytes (read + written)."""
    return {"name": label, "runs": 0, "cycles": 0, "gemm_macs": 0, "dram_bytes": 0}


def vta_call(call: dict, program, loaded, device, view, timeout_s, counters: dict,
             key: "str | None" = None):
    """A zero-argument function that performs ``call`` and returns 0.

    Args:
        call: the graph.json call (module docstring).
        program: its ``vta_hw.program.Program``; ``loaded``: that program loaded on ``device``.
        view: ``(ref, shape, dtype) -> ndarray``, the executor's view of a buffer ref
            (raises RuntimeModuleError when the ref is too small).
        timeout_s: seconds one run may take (None: no limit).
        counters: layer key -> per-layer counters, updated on every run.
        key: this call's key in ``counters`` (default: its node label).

    Raises:
        RuntimeModuleError: a buffer the call names is not in the program.
    """
    label = call.get("node") or call["program"]

    def bind(entries, kind):
        out = []
        for e in entries:
            try:
                b = program.buffer(e["buffer"])
            except KeyError as exc:
                raise RuntimeModuleError(f"call {label!r}: {call['program']} {exc.args[0]}; the "
                                         "graph and the program do not belong together, "
                                         "recompile the module") from None
            if b.kind != kind:
                raise RuntimeModuleError(f"call {label!r}: buffer {e['buffer']!r} of "
                                         f"{call['program']} is an {b.kind} buffer, the graph "
                                         f"uses it as an {kind}; recompile the module")
            out.append((b.name, view(e["ref"], b.shape, b.dtype)))
        return out

    ins = bind(call["inputs"], "input")
    outs = bind(call["outputs"], "output")
    c = counters.setdefault(key or label, new_counters(label))

    def run() -> int:
        for name, v in ins:
            loaded.copy_in(name, v)
        r = device.run_sync(loaded, timeout_s)
        c["runs"] += 1
        c["cycles"] += r.cycles or 0
        c["gemm_macs"] += r.gemm_macs or 0
        c["dram_bytes"] += (r.dram_read_bytes or 0) + (r.dram_write_bytes or 0)
        for name, v in outs:
            v[...] = loaded.copy_out(name)
        return 0
    return run
