"""Callable compiled kernels: numpy arrays in, checked, passed by pointer.

The generated C ABI of a kernel ``name`` is::

    int32_t name(p0, ..., pn-1);   /* 0 on success */

where a buffer parameter is ``void *`` to the first element of a
C-contiguous array of the declared shape and dtype (bool as one byte per
element, float16 as IEEE half) and a scalar parameter is passed by value.
:class:`CompiledFunction` checks every argument against its
:class:`ArgSpec` before the call, so a wrong array never reaches machine code.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass

import numpy as np

_CTYPES = {"bool": ctypes.c_bool, "int8": ctypes.c_int8, "int16": ctypes.c_int16,
           "int32": ctypes.c_int32, "int64": ctypes.c_int64, "uint8": ctypes.c_uint8,
           "uint16": ctypes.c_uint16, "uint32": ctypes.c_uint32, "uint64": ctypes.c_uint64,
           "float32": ctypes.c_float, "float64": ctypes.c_double}


@dataclass(frozen=True)
class ArgSpec:
    """What one argument must be.

    Attributes:
        name: the parameter's name, used in error messages.
        shape: the exact shape of a buffer (tuple of ints, elements), or None
            for a scalar parameter.
        dtype: numpy dtype name: ``float32``, ``float16``, ``int8``, ``uint8``,
            ``int32``, ``int64``, ``bool``, ...
        strides: a buffer's strides in elements; empty or C-contiguous ones
            mean the array must be C-contiguous.
    """

    name: str
    shape: "tuple | None"
    dtype: str
    strides: tuple = ()

    def to_json(self) -> dict:
        return {"name": self.name, "shape": None if self.shape is None else list(self.shape),
                "dtype": self.dtype, "strides": list(self.strides)}

    @staticmethod
    def from_json(d: dict) -> "ArgSpec":
        shape = None if d["shape"] is None else tuple(d["shape"])
        return ArgSpec(d["name"], shape, d["dtype"], tuple(d.get("strides", ())))


def _contiguous_strides(shape) -> tuple:
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= n
    return tuple(reversed(out))


class CompiledFunction:
    """A compiled kernel callable as ``f(a, b, c)`` with numpy arrays (and scalars).

    Args:
        name: the symbol's name (for messages).
        address: the function's machine address.
        specs: one :class:`ArgSpec` per parameter, in order.
        owner: the object that keeps the code mapped (JIT module, ``CDLL``).

    Calling raises:
        TypeError: wrong number of arguments, or a buffer argument that is not
            a numpy array.
        ValueError: an array's shape or dtype differs from its spec (the
            message names the argument, expected and got), its layout is not
            the declared one, or two arrays overlap in memory.
        RuntimeError: the kernel returned a non-zero status.
    """

    def __init__(self, name: str, address: int, specs: "list[ArgSpec]", owner: object):
        self.name = name
        self.specs = list(specs)
        self._owner = owner
        ctypes_args = []
        for s in self.specs:
            if s.shape is not None:
                ctypes_args.append(ctypes.c_void_p)
            elif s.dtype in _CTYPES:
                ctypes_args.append(_CTYPES[s.dtype])
            else:
                raise ValueError(f"{name}(): scalar parameter {s.name!r} has dtype {s.dtype}, which "
                                 f"cannot be passed from Python; use one of {sorted(_CTYPES)}")
        self._cfunc = ctypes.CFUNCTYPE(ctypes.c_int32, *ctypes_args)(address)
        self._dtypes = [np.dtype(s.dtype) for s in self.specs]

    def check(self, *args) -> None:
        """Validate ``args`` against the specs without running the kernel."""
        if len(args) != len(self.specs):
            names = ", ".join(s.name for s in self.specs)
            raise TypeError(f"{self.name}() takes {len(self.specs)} arguments ({names}), "
                            f"got {len(args)}")
        arrays = []
        for spec, want, arr in zip(self.specs, self._dtypes, args):
            if spec.shape is None:
                continue
            if not isinstance(arr, np.ndarray):
                raise TypeError(f"{self.name}(): argument {spec.name!r} must be a numpy.ndarray, "
                                f"not {type(arr).__name__}")
            if arr.shape != tuple(spec.shape):
                raise ValueError(f"{self.name}(): argument {spec.name!r} has shape {arr.shape}, "
                                 f"expected {tuple(spec.shape)}")
            if arr.dtype != want:
                raise ValueError(f"{self.name}(): argument {spec.name!r} has dtype {arr.dtype}, "
                                 f"expected {want} (convert with .astype('{want}'))")
            strides = tuple(spec.strides) or _contiguous_strides(spec.shape)
            if strides == _contiguous_strides(spec.shape):
                ok = arr.flags.c_contiguous
            else:
                ok = all(n <= 1 or a == s * arr.itemsize
                         for n, a, s in zip(arr.shape, arr.strides, strides))
            if not ok:
                raise ValueError(f"{self.name}(): argument {spec.name!r} must have strides "
                                 f"{strides} (elements), got {tuple(a // arr.itemsize for a in arr.strides)}"
                                 " (use numpy.ascontiguousarray)")
            arrays.append((spec.name, arr))
        for i in range(len(arrays)):
            for j in range(i + 1, len(arrays)):
                (na, a), (nb, b) = arrays[i], arrays[j]
                if a.size and b.size and np.may_share_memory(a, b):
                    raise ValueError(f"{self.name}(): arguments {na!r} and {nb!r} overlap in memory; "
                                     "pass distinct arrays (kernels assume no aliasing)")

    def __call__(self, *args) -> None:
        self.check(*args)
        raw = [a.ctypes.data if s.shape is not None else a for s, a in zip(self.specs, args)]
        status = self._cfunc(*raw)
        if status != 0:
            raise RuntimeError(f"{self.name}() returned status {status}")

    def __repr__(self) -> str:
        args = ", ".join(f"{s.name}: {s.dtype}" + ("" if s.shape is None else str(list(s.shape)))
                         for s in self.specs)
        return f"<CompiledFunction {self.name}({args})>"
