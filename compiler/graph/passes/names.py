"""Fresh PARAM names for values that passes create."""

from __future__ import annotations

from typing import Mapping


def fresh_name(params: Mapping[str, object], hint: str) -> str:
    """`hint`, or `hint_<k>` with the smallest k not already a key of `params`."""
    name, k = hint, 1
    while name in params:
        name, k = f"{hint}_{k}", k + 1
    return name
