"""Config spaces: the knobs of one schedule template that the tuner searches.

A :class:`ConfigSpace` is a tuple of named :class:`Knob` s, each a short list
of candidate values and a default. The default point is the hand-picked
schedule the lowering uses when nothing was tuned, so a space never changes
the code generated for an untuned model. An implementation without knobs has
the empty space, whose one point is the empty :class:`Config`.

Errors: a default outside its candidates, an unknown knob or a value outside
a knob's candidates raise ``ValueError`` naming the knob, the value and the
candidates.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Knob:
    """One tunable choice of a schedule template.

    Attributes:
        name: the knob's name, e.g. ``"ow_tile"`` (unique within its space).
        candidates: the values the tuner may pick, in a stable order.
        default: the hand-picked value; one of ``candidates``.
    """

    name: str
    candidates: tuple
    default: Any

    def __post_init__(self):
        if self.default not in self.candidates:
            raise ValueError(f"knob {self.name!r}: default must be one of {self.candidates}, "
                             f"not {self.default!r}")


@dataclass(frozen=True)
class Config:
    """One point of a :class:`ConfigSpace`: ``config["ow_tile"]`` is that knob's value."""

    values: tuple[tuple[str, Any], ...] = ()

    def __getitem__(self, name: str):
        for key, value in self.values:
            if key == name:
                return value
        raise KeyError(f"config has no knob {name!r} (knobs: {[k for k, _ in self.values]})")

    def as_dict(self) -> dict:
        """knob name -> value."""
        return dict(self.values)


@dataclass(frozen=True)
class ConfigSpace:
    """The knobs of one schedule template for one workload (see the module docstring)."""

    knobs: tuple[Knob, ...] = ()

    @property
    def size(self) -> int:
        """Number of points: the product of the knobs' candidate counts (1 for no knobs)."""
        return math.prod(len(k.candidates) for k in self.knobs)

    @property
    def default(self) -> Config:
        """The hand-picked point: every knob at its default."""
        return self.point()

    def point(self, **values) -> Config:
        """The point with ``values`` for the named knobs and defaults for the others.

        Raises:
            ValueError: a name that is no knob of this space, or a value outside the
                knob's candidates.
        """
        names = [k.name for k in self.knobs]
        unknown = sorted(set(values) - set(names))
        if unknown:
            raise ValueError(f"config space has no knob {unknown[0]!r}; its knobs are {names}")
        chosen = []
        for k in self.knobs:
            v = values.get(k.name, k.default)
            if v not in k.candidates:
                raise ValueError(f"knob {k.name!r} must be one of {k.candidates}, not {v!r}")
            chosen.append((k.name, v))
        return Config(tuple(chosen))
