"""Host memory and native code for the executor: aligned buffers, params, shared libraries.

Nothing here imports the compiler, llvmlite or onnx: a deployment needs numpy, the
module's shared library and libgomp (the OpenMP runtime the kernels' parallel loops
call; Debian package ``libgomp1``). Thread count: libgomp's (``OMP_NUM_THREADS``,
else one per core), read when the first module loads. Idle workers spin a bounded while
before they sleep: ``GOMP_SPINCOUNT`` defaults to ``SPIN_COUNT`` here (libgomp's own default
is 300000, and ``OMP_WAIT_POLICY=active`` spins forever, starving other processes). A worker
that sleeps (``OMP_WAIT_POLICY=passive``) costs a futex wake-up at every parallel region:
MobileNetV2 (224, 2 threads, AMD EPYC znver1) took 16.1 ms that way against 12.1-12.2 ms with the
bounded spin (bench/tune_models.py), with onnxruntime's own spinning pool in the same process.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import io
import os
import struct
import sys

import numpy as np

from .errors import RuntimeModuleError

ALIGN = 64


def aligned(nbytes: int) -> np.ndarray:
    """A zeroed uint8 array of ``nbytes`` whose data starts on a 64-byte boundary."""
    raw = np.zeros(max(nbytes, 1) + ALIGN, np.uint8)
    off = (-raw.ctypes.data) % ALIGN
    return raw[off:off + max(nbytes, 1)]


def aligned_copy(a: np.ndarray) -> np.ndarray:
    """A 64-byte aligned copy of ``a`` (same shape and dtype; an empty ``a`` too)."""
    buf = aligned(max(a.nbytes, a.itemsize)).view(a.dtype)[:a.size].reshape(a.shape)
    buf[...] = a
    return buf


def load_params(path_or_bytes, where: "str | None" = None) -> dict:
    """The arrays of a module's ``params.npz`` (a path, or the file's bytes).

    Raises:
        RuntimeModuleError: a truncated or foreign file (an interrupted copy), instead of
            zipfile's traceback.
    """
    import zipfile
    src = io.BytesIO(path_or_bytes) if isinstance(path_or_bytes, bytes) else path_or_bytes
    where = where or str(path_or_bytes)
    try:
        with np.load(src, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, AttributeError) as exc:
        raise RuntimeModuleError(f"{where}: cannot read the module's parameters ({exc}); the file "
                                 "is truncated or damaged: recompile the module with `vta compile`"
                                 ) from None


def elf_problem(head_and_body: bytes) -> "str | None":
    """Why ``data`` is not a whole 64-bit little-endian ELF shared library, or None.
    (``dlopen`` of a truncated one maps pages past the end of the file: SIGBUS.)"""
    data = head_and_body
    head = data[:64]
    if len(head) < 64 or head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
        return "not a 64-bit little-endian ELF shared library"
    phoff, shoff = struct.unpack_from("<QQ", head, 32)
    phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", head, 54)
    end = max(phoff + phentsize * phnum, shoff + shentsize * shnum)
    ph = data[phoff:phoff + phentsize * phnum]
    if len(ph) == phentsize * phnum:
        for k in range(phnum):
            _, _, off, _, _, filesz = struct.unpack_from("<IIQQQQ", ph, k * phentsize)
            end = max(end, off + filesz)
    if end > len(data):
        return f"truncated: {len(data)} bytes, its headers need {end}"
    return None


def check_shared_library(path: str) -> None:
    """RuntimeModuleError unless ``path`` is a whole ELF shared library (Linux; other
    platforms' library formats are left to the loader)."""
    if not sys.platform.startswith("linux"):
        return
    with open(path, "rb") as f:
        bad = elf_problem(f.read())
    if bad:
        raise RuntimeModuleError(f"{path}: {bad}; recompile the module with `vta compile`")


_GOMP = None
#: ``GOMP_SPINCOUNT`` unless the environment sets it: spins of an idle worker before it sleeps
SPIN_COUNT = "100000"


def load_libgomp():
    """Load the OpenMP runtime globally (kernels.so links against it)."""
    global _GOMP
    if _GOMP is None:
        os.environ.setdefault("GOMP_SPINCOUNT", SPIN_COUNT)
        names = ["libgomp.so.1", "libgomp.so"]
        found = ctypes.util.find_library("gomp")
        if found:
            names.append(found)
        for name in names:
            try:
                _GOMP = ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)
                break
            except OSError:
                continue
        else:
            raise RuntimeModuleError("compiled kernels need the OpenMP runtime libgomp.so.1 "
                                     "(Debian: apt-get install libgomp1)")
    return _GOMP


def num_threads() -> int:
    """Threads the kernels' parallel loops use (``omp_get_max_threads()``)."""
    lib = load_libgomp()
    lib.omp_get_max_threads.restype = ctypes.c_int
    return int(lib.omp_get_max_threads())


def open_library(data: bytes) -> ctypes.CDLL:
    """``dlopen`` a kernels library from its bytes (the ones whose hash was checked),
    written to a private temporary file that is unlinked once opened (the mapping outlives
    the name; a unique name, since the loader reuses a library already open by name)."""
    load_libgomp()
    import tempfile
    fd, path = tempfile.mkstemp(prefix="vtamod_kernels_", suffix=".so")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        return ctypes.CDLL(path)
    finally:
        os.unlink(path)
