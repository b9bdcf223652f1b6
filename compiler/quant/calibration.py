"""Calibration samples for ``build_model(..., target="vta", calib=...)``: checks, reading a
file, and the seeded stand-in (with a warning) when none are given."""
from __future__ import annotations

import math
import os
import sys
import warnings
from pathlib import Path

import numpy as np

from compiler.graph import Op

from .quantize import QuantizeError


def load_calibration(path: str | Path, input_name: str, scale: float = 1.0) -> dict[str, np.ndarray]:
    """``{input_name: samples * scale}`` (float32) from an .npz: the array named after the
    input, else 'images', 'x' or 'calib'.

    Raises:
        QuantizeError: none of those arrays is in the file (the message lists what it has).
    """
    data = np.load(path)
    for key in (input_name, "images", "x", "calib"):
        if key in data.files:
            return {input_name: data[key].astype(np.float32) * np.float32(scale)}
    raise QuantizeError(f"{path}: no array {input_name!r}, 'images', 'x' or 'calib' "
                     f"(it has {', '.join(data.files)})")


def check_calibration(what: str, samples, shape) -> None:
    """Raise unless ``samples`` are calibration samples for an input of ``shape``: numeric,
    finite, at least one, each holding ``prod(shape[1:])`` values (in any layout).

    Args:
        what: how messages name the samples, e.g. ``"calib['image']"``.
        samples: an array ``[N, ...]``.
        shape: the input's shape (its first dimension is the batch).

    Raises:
        QuantizeError: names ``what``, the bad property and the fix.
    """
    a = np.asarray(samples)
    if not (np.issubdtype(a.dtype, np.number) or a.dtype == np.bool_):
        raise QuantizeError(f"{what} holds {a.dtype} values; it needs numeric samples")
    if a.ndim == 0 or len(a) == 0:
        raise QuantizeError(f"{what} holds no images; give at least one sample")
    per = int(np.prod(shape[1:]))
    if a.ndim < 2 or a[0].size != per:
        dims = "x".join(map(str, shape[1:]))
        raise QuantizeError(f"{what} has shape {list(a.shape)}, but the input takes {list(shape)}; "
                         f"give N samples of {dims} (shape [N, {', '.join(map(str, shape[1:]))}])")
    if np.issubdtype(a.dtype, np.floating) and not np.isfinite(a).all():
        raise QuantizeError(f"{what} holds NaN or infinite values; calibration needs finite samples")


def host_memory_bytes() -> int:
    """This machine's physical memory, bytes."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def check_calibration_memory(graph, n_samples: int, have: "int | None" = None) -> None:
    """Refuse, before anything is allocated, a calibration that cannot fit in memory:
    ``n_samples`` float32 samples per input plus every node's value for one batch (the
    quantizer keeps them all to find each node's range).

    Args:
        graph: the float ``compiler.graph.Graph`` (static shapes).
        n_samples: samples per input.
        have: the memory to fit in, bytes (default: this machine's).

    Raises:
        QuantizeError: the bytes needed, the input shapes and the fix.
    """
    def nbytes(n):
        return math.prod(n.shape) * np.dtype(n.dtype).itemsize
    samples = sum(n_samples * math.prod(i.shape[1:]) * 4 for i in graph.inputs)
    values = sum(nbytes(n) for n in graph.nodes() if n.op is not Op.PARAM)
    need, have = samples + values, host_memory_bytes() if have is None else have
    if need > have:
        shapes = ", ".join(f"{i.name} {i.dtype}{list(i.shape)}" for i in graph.inputs)
        raise QuantizeError(
            f"calibrating on {n_samples} samples of inputs {shapes} needs {need} bytes "
            f"({need / 2**30:.1f} GiB: {samples} of samples, {values} of node values), this "
            f"machine has {have} bytes ({have / 2**30:.1f} GiB); give smaller input shapes "
            "(--input-shape / input_shapes) or fewer calibration samples")


class RandomCalibrationWarning(UserWarning):
    """A model quantized to int8 without calibration data: its activation scales come from
    seeded random samples (:func:`smoke_calibration`), not from real inputs."""


def smoke_samples(rng: np.random.Generator, inp, count: int = 8) -> np.ndarray:
    """``count`` seeded samples ``[count, *inp.shape[1:]]`` for the graph input ``inp``: standard
    normal for float inputs; 0 or 1 for integer and bool ones (valid token ids and mask
    values of any vocabulary)."""
    shape = (count,) + tuple(inp.shape[1:])
    if np.issubdtype(np.dtype(inp.dtype), np.floating):
        return rng.standard_normal(shape).astype(inp.dtype)
    return rng.integers(0, 2, shape).astype(inp.dtype)


def smoke_calibration(inputs, seed: int = 0, count: int = 8) -> dict[str, np.ndarray]:
    """input name -> ``count`` seeded samples (:func:`smoke_samples`) for the graph ``inputs``:
    what ``build_model`` calibrates on when given no ``calib``. Warns once with a
    :class:`RandomCalibrationWarning` (``vta compile`` shows it as its ``warning:`` line)
    that names the inputs and the fix, pointing at the caller outside ``compiler``."""
    rng = np.random.default_rng(seed)
    samples = {i.name: smoke_samples(rng, i, count) for i in inputs}
    wanted = ", ".join(f"{i.name!r}: samples [N, {', '.join(map(str, i.shape[1:]))}]"
                       for i in inputs)
    warnings.warn(
        f"no calibration data (calib=None): int8 scales come from {count} seeded random "
        "normal samples per input, not from real inputs, so accuracy will suffer (real "
        "activations clip or lose precision); give real samples, scaled as the model "
        f"expects: build_model(..., calib={{{wanted}}}) or vta compile --calibrate DATA.npz",
        RandomCalibrationWarning, stacklevel=_first_caller_outside_compiler())
    return samples


def checked_calibration(inputs, calib, seed: int = 0) -> dict:
    """The calibration samples of every graph input (``inputs``): ``calib`` (input name ->
    samples ``[N, *input dims[1:]]``) checked (:func:`check_calibration`), or, for
    ``calib=None``, :func:`smoke_calibration`'s (with its warning). The one check the
    accelerator and CPU int8 routes make.

    Raises:
        QuantizeError: an input without samples (naming the inputs ``calib`` has and the
            shape wanted), or samples of the wrong shape or values (``check_calibration``).
    """
    if calib is None:
        return smoke_calibration(inputs, seed)     # warns: accuracy will suffer
    for i in inputs:
        if i.name not in calib:
            raise QuantizeError(f"calib has no samples for input {i.name!r} (it has "
                                f"{', '.join(map(repr, calib)) or 'none'}); give calib="
                                f"{{{i.name!r}: samples}} with samples [N, "
                                f"{', '.join(map(str, i.shape[1:]))}]")
        check_calibration(f"calib[{i.name!r}]", calib[i.name], tuple(i.shape))
    return calib


def _first_caller_outside_compiler() -> int:
    """The ``stacklevel`` (for a warning issued by this module's caller) of the first frame
    outside the ``compiler`` package: the user's ``build_model`` call, however deep the
    route (Python 3.12's ``skip_file_prefixes``, on 3.11)."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    frame, level = sys._getframe(2), 2
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package):
        frame, level = frame.f_back, level + 1
    return level
