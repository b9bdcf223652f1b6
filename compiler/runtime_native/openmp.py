"""The thread pool behind parallel loops: GNU OpenMP's runtime, libgomp.

Generated code outlines each parallel loop body into a function
``void body(ptr closure)`` and calls ``GOMP_parallel(body, closure, 0, 0)``;
each thread then claims chunks of the iteration space from an atomic counter
in the closure (or, under the static schedule, computes its one chunk from
``omp_get_thread_num`` / ``omp_get_num_threads``; see
``compiler/codegen/parallel.py``).
No Python runs on the worker threads.

Thread count: libgomp's own rules (``OMP_NUM_THREADS``, else one thread per
core), read once when the pool first starts.

The three entry points and their C signatures (libgomp ABI, GCC >= 4.9)::

    void GOMP_parallel(void (*fn)(void *), void *data, unsigned num_threads,
                       unsigned flags);
    int omp_get_thread_num(void);
    int omp_get_num_threads(void);
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools

import llvmlite.binding as llvm

LIBGOMP_NAMES = ("libgomp.so.1", "libgomp.so")
# Symbols the generated code imports; shared libraries link with -lgomp.
SYMBOLS = ("GOMP_parallel", "omp_get_thread_num", "omp_get_num_threads")


@functools.cache
def load_libgomp() -> ctypes.CDLL:
    """Load libgomp into the process and make its symbols visible to the JIT.

    Returns the ``ctypes.CDLL`` handle.

    Raises:
        OSError: libgomp is not installed (install gcc's ``libgomp1`` package).
    """
    names = list(LIBGOMP_NAMES)
    found = ctypes.util.find_library("gomp")
    if found:
        names.append(found)
    errors = []
    for name in names:
        try:
            lib = ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)
        except OSError as err:
            errors.append(str(err))
            continue
        for sym in SYMBOLS:
            llvm.add_symbol(sym, ctypes.cast(getattr(lib, sym), ctypes.c_void_p).value)
        return lib
    raise OSError("parallel loops need the OpenMP runtime libgomp.so.1 (Debian: libgomp1); "
                  "tried " + ", ".join(names) + ": " + "; ".join(errors))


def num_threads() -> int:
    """Threads a parallel loop will use (``omp_get_max_threads()``)."""
    lib = load_libgomp()
    lib.omp_get_max_threads.restype = ctypes.c_int
    return int(lib.omp_get_max_threads())
