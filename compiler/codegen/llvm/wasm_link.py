"""wasm32 objects -> one standalone WebAssembly module, linked by ``wasm-ld`` (LLD).

The module has no entry point (``--no-entry``); it exports its linear memory
(``memory``), ``__heap_base`` (the first byte above the data and the stack, where
a runtime may place its buffers) and the functions named in ``exports``. Math
functions the kernels call that WebAssembly has no instruction for (``expf``,
``tanhf``, ``powf``, ...) stay undefined and become imports from module
``"env"``; the JavaScript runtime (``driver/web/vta_runtime.mjs``) and the
Python one (``driver.runtime.wasm``) supply them from ``Math`` / ``math``.

SIMD128 is used when the objects were compiled with ``-mattr=+simd128`` (the
``wasm32`` target alias does so): every engine this project runs on (Node 20,
Chromium, wasmtime) executes it.

Debian's ``lld`` package provides ``wasm-ld`` (often as ``wasm-ld-14`` or
another versioned name); :func:`find_wasm_ld` looks for both.
"""
from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import tempfile

from vta_hw.errors import VtaError

#: the linker's stack, bytes: kernels keep small local arrays on it
STACK_BYTES = 1 << 20
#: seconds one link may take before it is stopped
LINK_TIMEOUT_S = 120


class WasmLinkError(VtaError, RuntimeError):
    """wasm-ld is missing, timed out, or refused the objects."""


def find_wasm_ld() -> str:
    """Path of ``wasm-ld`` (``$WASM_LD``, else ``wasm-ld``, else the newest ``wasm-ld-N`` on PATH).

    Raises:
        WasmLinkError: none found; the message names the Debian package (``lld``).
    """
    env = os.environ.get("WASM_LD")
    if env:
        if shutil.which(env) is None:
            raise WasmLinkError(f"WASM_LD={env!r} is not an executable on PATH; unset it or "
                                "point it at wasm-ld (Debian package 'lld')")
        return shutil.which(env)
    if shutil.which("wasm-ld"):
        return shutil.which("wasm-ld")
    versioned = []
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        for path in glob.glob(os.path.join(folder, "wasm-ld-*")):
            m = re.fullmatch(r"wasm-ld-(\d+)", os.path.basename(path))
            if m and os.access(path, os.X_OK):
                versioned.append((int(m.group(1)), path))
    if versioned:
        return max(versioned)[1]
    raise WasmLinkError("linking a WebAssembly module needs wasm-ld, which is not on PATH; "
                        "install it with `apt-get install lld` (or set WASM_LD)")


def link_wasm(objects: "list[bytes]", exports: "list[str]",
              stack_bytes: int = STACK_BYTES) -> bytes:
    """Link wasm32 relocatable objects into one module (see the module docstring).

    Args:
        objects: wasm object files (``compiler.graph_lower.link.compile_object`` for a
            wasm32 target), as bytes.
        exports: names of the functions the module exports (the kernels).
        stack_bytes: size of the module's stack in bytes, a multiple of 16.

    Returns:
        the ``.wasm`` file's bytes.

    Raises:
        ValueError: ``stack_bytes`` is not a positive multiple of 16.
        WasmLinkError: no wasm-ld (names the package), the link failed (the message
            holds the linker's output) or took more than ``LINK_TIMEOUT_S`` seconds.
    """
    if not isinstance(stack_bytes, int) or stack_bytes <= 0 or stack_bytes % 16:
        raise ValueError(f"stack_bytes must be a positive multiple of 16, not {stack_bytes!r}")
    ld = find_wasm_ld()
    with tempfile.TemporaryDirectory(prefix="compiler_wasm_") as tmp:
        names = []
        for i, obj in enumerate(objects):
            if obj[:4] != b"\0asm":
                raise WasmLinkError(f"object {i} is not a wasm object (starts {obj[:4]!r}); "
                                    "compile the kernels for target 'wasm32'")
            names.append(os.path.join(tmp, f"part{i}.o"))
            with open(names[-1], "wb") as f:
                f.write(obj)
        out = os.path.join(tmp, "model.wasm")
        cmd = [ld, "--no-entry", "--allow-undefined", "--export=__heap_base",
               "-z", f"stack-size={stack_bytes}", "-O2", "-o", out, *names]
        cmd += [f"--export={name}" for name in exports]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=LINK_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise WasmLinkError(f"wasm-ld took more than {LINK_TIMEOUT_S} s; stopped") from None
        if proc.returncode != 0:
            raise WasmLinkError(f"wasm-ld failed ({' '.join(cmd[:6])} ...):\n{proc.stderr}")
        with open(out, "rb") as f:
            return f.read()
