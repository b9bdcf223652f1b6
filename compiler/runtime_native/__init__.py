"""Native runtime pieces that compiled kernels call: the OpenMP thread pool (libgomp)."""
from compiler.runtime_native.openmp import load_libgomp, num_threads

__all__ = ["load_libgomp", "num_threads"]
