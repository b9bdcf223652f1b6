"""DLPack across the runtime boundary: arrays shared with numpy, PyTorch and any other
DLPack producer or consumer without a copy (CPU modules).

``Array`` is the runtime's view of a buffer (a module output): it implements
``__dlpack__`` / ``__dlpack_device__`` by handing out numpy's own capsule for the
view, so the capsule's deleter is numpy's C function and stays valid through
interpreter shutdown (a ctypes-callback deleter would be freed first and crash
at exit while a consumer still holds the view). The capsule keeps the view, and so
the module's buffer, alive.

``host_array(value)`` reads any input value: a DLPack producer on the CPU
(``np.from_dlpack``, no copy) or anything ``np.asarray`` takes. ``shareable``
tells whether the executor may run its kernels on that memory directly.
"""
from __future__ import annotations

import numpy as np

from .errors import RuntimeModuleError
from .native import ALIGN

#: DLPack device type of host memory (DLDeviceType kDLCPU)
KDL_CPU = 1


class Array:
    """A view of runtime memory, shaped and typed as the module declares it.

    Attributes:
        shape, dtype: as numpy's; ``data_ptr``: the address of the first element.

    Valid until the next ``run()`` of the module that owns it (the executor's planned
    memory is reused by every run); ``copy()`` or ``np.array(a)`` give an owning copy.
    """

    __slots__ = ("_view", "_owner")

    def __init__(self, view: np.ndarray, owner=None):
        self._view, self._owner = view, owner

    shape = property(lambda self: self._view.shape)
    dtype = property(lambda self: self._view.dtype)
    data_ptr = property(lambda self: self._view.ctypes.data)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule of the view (no copy unless ``copy=True``)."""
        return self._view.__dlpack__(stream=stream, max_version=max_version,
                                     dl_device=dl_device, copy=copy)

    def __dlpack_device__(self) -> tuple:
        return (KDL_CPU, 0)

    def __array__(self, dtype=None, copy=None):
        if copy is False and dtype is not None and np.dtype(dtype) != self._view.dtype:
            raise ValueError(f"cannot view {self._view.dtype} runtime memory as {np.dtype(dtype)} "
                             "without a copy; pass copy=None")
        out = self._view.copy() if copy else self._view
        return out if dtype is None else out.astype(dtype, copy=False)

    def numpy(self) -> np.ndarray:
        """The view as a numpy array (no copy; same lifetime rule as the Array)."""
        return self._view

    def copy(self) -> np.ndarray:
        """An owning copy."""
        return self._view.copy()

    def __repr__(self) -> str:
        return f"<runtime Array {self.dtype}{list(self.shape)} at {self.data_ptr:#x}>"


def host_array(value, where: str) -> np.ndarray:
    """``value`` as a numpy array of real numbers: a CPU DLPack producer without a copy, else
    ``np.asarray``.

    Raises:
        RuntimeModuleError: a producer that refuses the export (a tensor that requires
            grad, one on a GPU), or values that are not real numbers (text, complex numbers
            whose imaginary part a cast would drop, Python objects), naming ``where`` and
            the fix.
    """
    a = _host_array(value, where)
    if a.dtype.kind not in "biuf":
        what = {"c": "complex numbers (a cast would drop their imaginary part)",
                "U": "text", "S": "bytes", "O": "Python objects"}.get(a.dtype.kind, "non-numbers")
        raise RuntimeModuleError(f"{where}: holds {a.dtype} values, {what}; give an array of "
                                 "real numbers (int or float)")
    return a


def _host_array(value, where: str) -> np.ndarray:
    if isinstance(value, np.ndarray) or not hasattr(value, "__dlpack__"):
        try:
            return np.asarray(value)
        except ValueError as exc:   # ragged nested lists
            raise RuntimeModuleError(f"{where}: cannot be read as an array ({exc}); give a "
                                     "numpy array of real numbers") from None
    try:
        device = value.__dlpack_device__()
    except (AttributeError, TypeError):
        device = (KDL_CPU, 0)
    if device[0] != KDL_CPU:
        raise RuntimeModuleError(f"{where}: the value lives on DLPack device {tuple(device)}, "
                                 "not the CPU; move it to host memory first (tensor.cpu())")
    try:
        return np.from_dlpack(value)
    except (BufferError, TypeError, RuntimeError) as exc:
        raise RuntimeModuleError(f"{where}: the value refuses DLPack export ({exc}); pass a "
                                 "plain tensor (tensor.detach()) or a numpy array") from None


def shareable(a: np.ndarray, shape, dtype) -> bool:
    """Whether kernels may read ``a`` in place of their own buffer: the compiled shape and
    dtype, C-contiguous, aligned to the runtime's ``ALIGN`` bytes."""
    return (a.shape == tuple(shape) and a.dtype == np.dtype(dtype) and a.flags.c_contiguous
            and a.ctypes.data % ALIGN == 0)
