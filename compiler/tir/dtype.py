"""Dtype strings: "float32", "float16", "int8", "uint8", "int32", "int64", "bool",
"handle" (an address), with vector lanes as a suffix: "float32x8".
"""

import re

import numpy as np

SCALAR_TYPES = ("float16", "float32", "float64", "int8", "int16", "int32", "int64",
                "uint8", "uint16", "uint32", "uint64", "bool", "handle")
_VECTOR = re.compile(r"^([a-z]+[0-9]*?)x([0-9]+)$")


def split_lanes(dtype: str) -> tuple[str, int]:
    """("float32x8") -> ("float32", 8); scalars have 1 lane. Raises ValueError on unknown dtypes."""
    if dtype in SCALAR_TYPES:
        return dtype, 1
    m = _VECTOR.match(dtype)
    if m is None or m.group(1) not in SCALAR_TYPES or int(m.group(2)) < 2:
        raise ValueError(f"dtype must be one of {', '.join(SCALAR_TYPES)} with an optional "
                         f"lane suffix such as 'x8', not {dtype!r}")
    return m.group(1), int(m.group(2))


def element(dtype: str) -> str:
    return split_lanes(dtype)[0]


def lanes(dtype: str) -> int:
    return split_lanes(dtype)[1]


def with_lanes(dtype: str, n: int) -> str:
    """The element type of `dtype` with `n` lanes (n == 1 gives the scalar)."""
    base = element(dtype)
    return base if n == 1 else f"{base}x{n}"


def is_float(dtype: str) -> bool:
    return element(dtype).startswith("float")


def is_int(dtype: str) -> bool:
    """Signed or unsigned integers, not bool."""
    return element(dtype).startswith(("int", "uint"))


def is_bool(dtype: str) -> bool:
    return element(dtype) == "bool"


def to_numpy(dtype: str) -> np.dtype:
    """The numpy dtype of one element."""
    return np.dtype(element(dtype))
