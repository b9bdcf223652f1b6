"""``run_kernel``: one accelerator kernel (``compiler.build(..., target="vta")``) on a device,
with numpy arrays in and out by name.

    k = compiler.build(s, [A, B, C], target="vta")
    r = run_kernel(k, {"A": a, "B": b}, device="tsim", trace=True)
    r["C"], r.cycles, r.gemm_utilization
    r.trace.write_chrome("mm.json")             # open in Perfetto (ui.perfetto.dev)
"""
from __future__ import annotations

import dataclasses

import numpy as np

from driver.device import Device, DeviceError


@dataclasses.dataclass
class KernelResult:
    """One run of a kernel.

    Attributes:
        outputs: output name -> array (the argument's packed shape and dtype).
        cycles: cycles from start to FINISH; None on an untimed device (fsim:
            "not timed", it has no clock).
        gemm_macs: multiply-accumulates done by GEMM instructions.
        gemm_utilization: gemm_macs / (cycles x peak MACs per cycle), 0..1; None
            where not timed.
        dram_read_bytes, dram_write_bytes: bytes on the memory port (None if unknown).
        trace: a ``sim.trace.Trace`` (tsim with ``trace=True``), else None.
        extra: the backend's own figures (per-module busy and stall cycles on tsim).
    """
    outputs: dict[str, np.ndarray]
    cycles: int | None
    gemm_macs: int | None
    gemm_utilization: float | None
    dram_read_bytes: int | None
    dram_write_bytes: int | None
    trace: object = None
    extra: dict = dataclasses.field(default_factory=dict)

    def __getitem__(self, name: str) -> np.ndarray:
        return self.outputs[name]

    def summary(self) -> str:
        """One line: cycles and GEMM utilization, or "not timed"."""
        if self.cycles is None:
            return "not timed (the functional simulator has no clock)"
        return f"{self.cycles} cycles, GEMM utilization {self.gemm_utilization:.1%}"


def run_kernel(kernel, inputs: dict[str, np.ndarray], device="tsim", *, trace: bool = False,
               timeout_s: float | None = None, **device_options) -> KernelResult:
    """Run ``kernel`` once with ``inputs`` and return its outputs by name.

    Args:
        kernel: a ``compiler.codegen.vta.kernel.VtaKernel`` (``compiler.build(...,
            target="vta")``).
        inputs: argument name -> array in the argument's packed shape and dtype
            (``compiler.topi.vta.layout``'s pack helpers make them). Arguments of
            kind "input" must all be given; a "param" given replaces its stored data.
        device: a backend name ("fsim", "tsim", "rtl", ...) or an open
            ``driver.device.Device`` of the kernel's config.
        trace: record the timeline (tsim only): ``result.trace``.
        timeout_s: bound on the run, seconds.
        device_options: passed to ``Device`` when ``device`` is a name.

    Raises:
        DeviceError: a missing or unknown input name, a wrong shape or dtype (the
            message names the argument and the shape it needs), a device of
            another config, or ``trace`` on a device other than tsim.
    """
    specs = {a.name: a for a in kernel.args}
    for name in inputs:
        if name not in specs:
            raise DeviceError(f"kernel {kernel.name!r} has no argument {name!r} (arguments: "
                              f"{', '.join(specs)})")
        if specs[name].kind == "output":
            raise DeviceError(f"argument {name!r} of kernel {kernel.name!r} is an output; pass "
                              f"only {', '.join(kernel.inputs)}")
    missing = [a.name for a in kernel.args if a.kind == "input" and a.name not in inputs]
    if missing:
        raise DeviceError(f"kernel {kernel.name!r} needs inputs {', '.join(missing)}")
    for name, arr in inputs.items():
        a = specs[name]
        arr = np.asarray(arr)
        if arr.shape != tuple(a.shape) or arr.dtype != np.dtype(a.dtype):
            raise DeviceError(f"input {name!r} must be {a.dtype}{list(a.shape)}, not "
                              f"{arr.dtype}{list(arr.shape)}; pack it with "
                              "compiler.topi.vta.layout (pack_matrix, pack_nchw, pack_oihw)")
    if trace:
        return _traced(kernel, inputs, device, device_options)
    own = not isinstance(device, Device)
    dev = Device(device, config=kernel.config, **device_options) if own else device
    try:
        h = dev.load(kernel.program)
        for name, arr in inputs.items():
            h.copy_in(name, np.asarray(arr))
        r = dev.run_sync(h, timeout_s)
        outputs = {n: h.copy_out(n) for n in kernel.outputs}
    finally:
        if own:
            dev.close()
    util = None if r.cycles is None else (r.gemm_macs or 0) / (r.cycles * kernel.config.macs_per_cycle)
    return KernelResult(outputs, r.cycles, r.gemm_macs, util, r.dram_read_bytes,
                        r.dram_write_bytes, None, r.extra)


def _traced(kernel, inputs, device, options) -> KernelResult:
    """A tsim run through ``sim.cycle`` directly, keeping its trace."""
    if device != "tsim" or options:
        raise DeviceError(f"trace=True needs device='tsim' (the cycle model keeps the timeline) "
                          f"and no device options, not {device!r} {options or ''}")
    from sim import cycle
    prog = kernel.program
    r = cycle.run(prog, prog.dram_image({k: np.asarray(v) for k, v in inputs.items()}), trace=True)
    outputs = {n: prog.read(r.dram, n) for n in kernel.outputs}
    util = r.gemm_macs / (r.cycles * kernel.config.macs_per_cycle)
    return KernelResult(outputs, r.cycles, r.gemm_macs, util, r.dram_read_bytes,
                        r.dram_write_bytes, r.trace,
                        {"modules": {m: s.to_dict() for m, s in r.modules.items()}})
