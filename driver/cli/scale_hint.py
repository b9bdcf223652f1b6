"""The hint for data that looks unscaled: integer pixels (the digits' 0-16) given to a float
model that expects them scaled (pixel / 16), where the fix is a scale option
(``--eval-scale``, ``--calibrate-scale``) rather than new calibration samples."""
from __future__ import annotations

import click
import numpy as np

#: data this many times beyond the calibrated range's bound looks unscaled, not merely rare
FAR_OUTSIDE = 4.0


def looks_unscaled(data: np.ndarray, calibrated: tuple[float, float] | None = None) -> bool:
    """Whether ``data`` (any shape) looks like unscaled values: an integer or bool dtype, or
    (with the ``calibrated`` range ``[lo, hi]`` of the input) a largest magnitude more than
    :data:`FAR_OUTSIDE` times the range's."""
    if not np.issubdtype(data.dtype, np.floating):
        return True
    if calibrated is None or data.size == 0:
        return False
    bound = max(abs(calibrated[0]), abs(calibrated[1]))
    return bound > 0 and float(np.nanmax(np.abs(data))) > FAR_OUTSIDE * bound


def scale_left_default(param: str) -> bool:
    """Whether the running command's scale parameter ``param`` (its Python name, e.g.
    ``"eval_scale"``) was left at its default, i.e. the user gave no scale."""
    from click.core import ParameterSource
    return click.get_current_context().get_parameter_source(param) is ParameterSource.DEFAULT


def scale_hint(option: str) -> str:
    """The fix to name first for unscaled data: the scale ``option`` of the command."""
    return f"{option} S scales the data (e.g. {option} 0.0625 for pixels 0-16, as the demo uses)"
