"""Input shape overrides as the CLI spells them: `--input-shape name:1x3x224x224`."""

from __future__ import annotations

from typing import Iterable

from .errors import FrontendError


def parse_input_shape(text: str) -> tuple[str, tuple[int, ...]]:
    """'images:1x3x224x224' -> ('images', (1, 3, 224, 224)).

    The name is everything before the last ':' (ONNX names may contain ':').
    Raises FrontendError for a missing name, or a dimension that is not a
    positive integer.
    """
    name, sep, dims = text.rpartition(":")
    try:
        shape = tuple(int(d) for d in dims.lower().split("x"))
    except ValueError:
        shape = ()
    if not sep or not name or not shape or any(d <= 0 for d in shape):
        raise FrontendError(f"input shape must look like name:1x3x224x224 (positive dims joined by 'x'), "
                            f"not {text!r}")
    return name, shape


def parse_input_shapes(texts: Iterable[str]) -> dict[str, tuple[int, ...]]:
    """Several `name:dims` strings -> the `input_shapes` dict of `from_onnx`; FrontendError on a repeated name."""
    out: dict[str, tuple[int, ...]] = {}
    for text in texts:
        name, shape = parse_input_shape(text)
        if name in out:
            raise FrontendError(f"input shape for {name!r} given twice ({out[name]} and {shape}); give it once")
        out[name] = shape
    return out


def suggest_input_shape(name: str, dims) -> str:
    """The ``--input-shape`` to suggest for input ``name`` whose dimensions are ``dims``
    (ints where the model knows them, a symbol's name or None where it does not): known
    dimensions kept, an unknown batch (first) dimension 1, any other unknown one left as its
    symbol for the user to fill in. ``('image', [None, 1, 8, 8])`` -> ``'--input-shape
    image:1x1x8x8'``; ``('x', ['N', 16, 'H', 'W'])`` -> ``'--input-shape x:1x16xHxW (H, W:
    the sizes to run at)'``."""
    parts, free = [], []
    for i, d in enumerate(dims):
        if isinstance(d, int) and d > 0:
            parts.append(str(d))
        elif i == 0:
            parts.append("1")
        else:
            label = str(d) if d else f"D{i}"
            parts.append(label)
            free.append(label)
    text = f"--input-shape {name}:{'x'.join(parts)}"
    return text + (f" ({', '.join(free)}: the sizes to run at)" if free else "")
