"""Calibration samples for ``build_model(..., target="vta", calib=...)``: checks, and reading a file."""
from __future__ import annotations

from pathlib import Path

import numpy as np


def load_calibration(path: str | Path, input_name: str, scale: float = 1.0) -> dict[str, np.ndarray]:
    """``{input_name: samples * scale}`` (float32) from an .npz: the array named after the
    input, else 'images', 'x' or 'calib'.

    Raises:
        ValueError: none of those arrays is in the file (the message lists what it has).
    """
    data = np.load(path)
    for key in (input_name, "images", "x", "calib"):
        if key in data.files:
            return {input_name: data[key].astype(np.float32) * np.float32(scale)}
    raise ValueError(f"{path}: no array {input_name!r}, 'images', 'x' or 'calib' "
                     f"(it has {', '.join(data.files)})")


def check_calibration(what: str, samples, shape) -> None:
    """Raise unless ``samples`` are calibration samples for an input of ``shape``: numeric,
    finite, at least one, each holding ``prod(shape[1:])`` values (in any layout).

    Args:
        what: how messages name the samples, e.g. ``"calib['image']"``.
        samples: an array ``[N, ...]``.
        shape: the input's shape (its first dimension is the batch).

    Raises:
        ValueError: names ``what``, the bad property and the fix.
    """
    a = np.asarray(samples)
    if not (np.issubdtype(a.dtype, np.number) or a.dtype == np.bool_):
        raise ValueError(f"{what} holds {a.dtype} values; it needs numeric samples")
    if a.ndim == 0 or len(a) == 0:
        raise ValueError(f"{what} holds no images; give at least one sample")
    per = int(np.prod(shape[1:]))
    if a.ndim < 2 or a[0].size != per:
        dims = "x".join(map(str, shape[1:]))
        raise ValueError(f"{what} has shape {list(a.shape)}, but the input takes {list(shape)}; "
                         f"give N samples of {dims} (shape [N, {', '.join(map(str, shape[1:]))}])")
    if np.issubdtype(a.dtype, np.floating) and not np.isfinite(a).all():
        raise ValueError(f"{what} holds NaN or infinite values; calibration needs finite samples")
