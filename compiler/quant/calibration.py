"""Calibration samples for ``build_model(..., target="vta", calib=...)``: checks, and reading a file."""
from __future__ import annotations

import math
import os
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
