"""Build the C harness (``harness.c``) for an AOT module and run it, here or under qemu.

Usage::

    from driver.aot import build_harness, run_harness
    exe = build_harness("out/digits_arm64.vtamod", "out/digits_arm64")  # aarch64-linux-gnu-gcc
    y, = run_harness(exe, "out/digits_arm64.vtamod", [x])                # qemu-aarch64 on x86-64

The module folder is checked first (``driver.runtime.open_folder``: format, sha256
of every file); the harness is compiled against its ``model.h``, with the symbol
prefix its manifest records, and linked with its ``model.o`` (statically, for a cross
machine) or ``model.so`` (the host: copied beside the program under its SONAME,
``lib<prefix>model.so``, and found through the rpath ``$ORIGIN``: the recipe of
``docs/deploy.md``, so the program runs from any working directory). Inputs travel as
raw files in the header's order, outputs come back the same way.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from driver.runtime import open_folder

from .errors import DeployError
from .toolchains import toolchain_for

#: the harness's C source
HARNESS_C = Path(__file__).with_name("harness.c")
#: exit status -> what it means (``harness.c``)
STATUS = {2: "wrong number of arguments", 3: "an input file cannot be read",
          4: "an input file has the wrong size", 5: "an output file cannot be written",
          6: "the model returned a non-zero status", 7: "out of memory"}


def _aot_source(module):
    source = open_folder(module)
    info = source.manifest.get("aot")
    if source.manifest.get("executor") != "aot" or not isinstance(info, dict):
        raise DeployError(f"{module}: not an AOT module (executor "
                          f"{source.manifest.get('executor', 'graph')!r}); compile it with "
                          "`vta compile --executor aot`")
    return source, info


def _link_args(folder: str, info: dict, static: bool, exe: str) -> list:
    """The link arguments of the harness: the cross object, or the host library copied
    beside ``exe`` under its SONAME and found there through ``$ORIGIN``. (A module from
    before SONAMEs and prefixes records neither; its names are the default ``vtamod_``.)"""
    obj = os.path.join(folder, info["object"])
    if static:
        return [obj, "-static", "-fopenmp"]
    lib = info.get("soname", f"lib{info.get('prefix', 'vtamod_')}model.so")
    here = os.path.dirname(os.path.abspath(exe))
    try:
        shutil.copyfile(obj, os.path.join(here, lib))
    except OSError as e:
        raise DeployError(f"cannot put {info['object']} beside the harness {exe} as {lib} "
                          f"({e.strerror}); give a program path in a writable folder") from None
    return ["-L", here, f"-l{lib[len('lib'):-len('.so')]}", "-Wl,-rpath,$ORIGIN"]


def build_harness(module, exe, timeout_s: float = 600.0) -> str:
    """Compile ``harness.c`` for the AOT module folder ``module`` into the program ``exe``
    (for a host module, its ``model.so`` is copied beside ``exe`` as ``lib<prefix>model.so``,
    the name the program loads from its own folder).

    Args:
        module: an AOT module folder (``vta compile --executor aot``), host or cross.
        exe: the program to write.
        timeout_s: seconds the compiler may take.

    Returns:
        ``exe`` (a str).

    Raises:
        driver.runtime.RuntimeModuleError: not a module, or a damaged one.
        DeployError: not an AOT module; its machine has no toolchain, or the toolchain
            is not installed (the message names the package); the library cannot be
            copied beside ``exe``; the compile fails or times out.
    """
    source, info = _aot_source(module)
    tc = toolchain_for(source.manifest["cpu"]["triple"]).require()
    folder = os.path.abspath(os.fspath(module))
    prefix = info.get("prefix", "vtamod_")
    cmd = [tc.compiler(), "-O2", "-std=c11", "-Wall", f"-DAOT_PREFIX={prefix}",
           f"-DAOT_PREFIX_UPPER={prefix.upper()}", "-I", folder, str(HARNESS_C),
           *_link_args(folder, info, tc.static, os.fspath(exe)), "-lm", "-o", os.fspath(exe)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise DeployError(f"building the harness for {module} took over {timeout_s:.0f} s "
                          f"({' '.join(cmd)})") from None
    if proc.returncode != 0:
        raise DeployError(f"building the harness for {module} failed ({' '.join(cmd)}):\n"
                          f"{proc.stderr.strip()}")
    return os.fspath(exe)


def run_harness(exe, module, inputs: list, timeout_s: float = 600.0) -> list:
    """Run the harness ``exe`` built for ``module`` on ``inputs`` (under the machine's
    emulator when it is not this one).

    Args:
        exe: the program :func:`build_harness` wrote.
        module: its AOT module folder (for the input/output shapes and the machine).
        inputs: one array per input, in the module's order (converted to its dtype).
        timeout_s: seconds the run may take.

    Returns:
        one numpy array per output (the module's shapes and dtypes).

    Raises:
        DeployError: a wrong number of inputs or a wrong shape, the emulator is missing,
            the harness exits with a non-zero status (with its message) or times out.
    """
    source, _ = _aot_source(module)
    tc = toolchain_for(source.manifest["cpu"]["triple"]).require()
    specs_in, specs_out = source.graph["inputs"], source.graph["outputs"]
    if len(inputs) != len(specs_in):
        raise DeployError(f"{module} takes {len(specs_in)} input(s) "
                          f"({', '.join(s['name'] for s in specs_in)}), not {len(inputs)}")
    with tempfile.TemporaryDirectory(prefix="vta_harness_") as tmp:
        ins, outs = [], [os.path.join(tmp, f"out{i}.bin") for i in range(len(specs_out))]
        for i, (x, s) in enumerate(zip(inputs, specs_in)):
            x = np.asarray(x)
            if list(x.shape) != list(s["shape"]):
                raise DeployError(f"input {s['name']!r} has shape {list(x.shape)}, {module} was "
                                  f"compiled for {s['shape']}")
            ins.append(os.path.join(tmp, f"in{i}.bin"))
            np.ascontiguousarray(x, dtype=s["dtype"]).tofile(ins[-1])
        cmd = [*tc.run_prefix(), os.path.abspath(exe), *ins, *outs]
        env = dict(os.environ, OMP_WAIT_POLICY=os.environ.get("OMP_WAIT_POLICY", "passive"))
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=env)
        except subprocess.TimeoutExpired:
            raise DeployError(f"{exe} ran over {timeout_s:.0f} s ({' '.join(cmd)})") from None
        if proc.returncode != 0:
            what = STATUS.get(proc.returncode, "crashed" if proc.returncode < 0 else "failed")
            raise DeployError(f"{exe} exited with status {proc.returncode} ({what}): "
                              f"{proc.stderr.strip()}")
        return [np.fromfile(p, dtype=s["dtype"]).reshape(s["shape"])
                for p, s in zip(outs, specs_out)]
