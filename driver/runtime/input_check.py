"""Checks of an accelerator model's float inputs against what int8 can hold.

A module built for the accelerator quantizes each float input to int8 at the
exponent calibration chose (graph.json's ``"range": [lo, hi]`` per input,
``compiler.quant.lower_plan``). NaN has no int8 value (the quantize kernel
would turn it into an arbitrary one), so it is an error; a finite value or an
infinity beyond ``[lo, hi]`` saturates to -128/127, which quantized inference
accepts but users want to know about: it is counted and reported as an
``InputRangeWarning`` (``vta run`` prints it).
"""
from __future__ import annotations

import warnings

import numpy as np

from .errors import RuntimeModuleError


class InputRangeWarning(UserWarning):
    """Input values beyond the calibrated range saturated to int8's -128/127.

    Attributes: ``name`` (the input), ``count`` (values beyond the range), ``size`` (values
    checked), ``lo``/``hi`` (the range), so that a caller can add runs up (``vta run --eval``).
    """

    def __init__(self, name: str, count: int, size: int, lo: float, hi: float):
        self.name, self.count, self.size, self.lo, self.hi = name, count, size, lo, hi
        super().__init__(describe_out_of_range(name, count, size, lo, hi))


#: how a Python caller recalibrates (the CLI names its own option instead)
CALIBRATE_FIX = "calibrate with inputs like these (calib=...) if they are expected"


def describe_out_of_range(name: str, count: int, size: int, lo: float, hi: float,
                          runs: int = 1, fix: str = CALIBRATE_FIX) -> str:
    """The one-line report of ``count`` of ``size`` values of input ``name`` beyond [lo, hi],
    ending in ``fix`` (what to do if such inputs are expected)."""
    many = f"{count} of {size} value(s)" if runs == 1 else f"{count} value(s) in {runs} runs"
    return (f"input {name!r}: {many} lie outside the calibrated range "
            f"[{lo:g}, {hi:g}] (infinities included) and saturate to int8 -128/127; {fix}")


class InputNaNWarning(UserWarning):
    """NaN in an input of a float model: its kernels do not carry NaN through everywhere
    (float max, as in relu and max-pool, is a compare-and-select with x86 ``maxps``
    semantics, ``codegen/llvm/expr.py``: a NaN first operand yields the other), so the
    outputs can look finite. Attributes ``name``, ``count``, ``size`` as ``InputRangeWarning``'s."""

    def __init__(self, name: str, count: int, size: int):
        self.name, self.count, self.size = name, count, size
        super().__init__(
            f"input {name!r} has {count} NaN value(s) of {size}; this float model's relu and "
            "max-pool can drop NaN (x86 max semantics), so its outputs may look finite but "
            "mean nothing: "
            "replace them (e.g. np.nan_to_num) before running")


def check_input(name: str, value: np.ndarray, rng) -> None:
    """Check float input ``name`` against ``rng`` (``[lo, hi]`` from graph.json for an input
    the model quantizes to int8; None: a float input the model reads as it is).

    Raises:
        RuntimeModuleError: ``rng`` given and ``value`` holds NaN (the message gives how many).

    Warns:
        InputRangeWarning: values below ``lo`` or above ``hi`` (infinities included),
            with how many and the range.
        InputNaNWarning: ``rng`` None and ``value`` holds NaN, with how many.
    """
    if value.dtype.kind not in "fiu":
        return
    nan = int(np.count_nonzero(np.isnan(value))) if value.dtype.kind == "f" else 0
    if rng is None:
        if nan:
            warnings.warn(InputNaNWarning(name, nan, value.size), stacklevel=4)
        return
    if nan:
        raise RuntimeModuleError(
            f"input {name!r} has {nan} NaN value(s) of {value.size}; the model quantizes it "
            "to int8, which has no NaN: replace them (e.g. np.nan_to_num) before running")
    lo, hi = rng
    out = int(np.count_nonzero((value < lo) | (value > hi)))
    if out:
        warnings.warn(InputRangeWarning(name, out, value.size, lo, hi), stacklevel=4)
