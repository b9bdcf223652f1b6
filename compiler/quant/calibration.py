"""Calibration samples from a file, for ``build_model(..., target="vta", calib=...)``."""
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
