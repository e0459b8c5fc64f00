"""The value checks every layer shares: a count is an ``int`` that is not a ``bool`` (``True`` is an ``int`` to Python,
never a count to a user), a number is an ``int`` or ``float`` that is not a ``bool``; ``Range``, the allowed numbers of
a setting (the config field tables' and the command line's)."""

from __future__ import annotations

import dataclasses
import math


def is_int(value) -> bool:
    """An integer, not a boolean."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_real(value) -> bool:
    """An int or float, not a boolean (inf and NaN included)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_number(value) -> bool:
    """A finite real number, not a boolean."""
    return is_real(value) and math.isfinite(value)


@dataclasses.dataclass(frozen=True)
class Range:
    """Allowed numbers of a setting: ``low``/``high`` (None: unbounded), each end included unless ``*_open``."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    hint: str = ""

    def __contains__(self, value: float) -> bool:
        above = self.low is None or (value > self.low if self.low_open else value >= self.low)
        below = self.high is None or (value < self.high if self.high_open else value <= self.high)
        return above and below

    def describe(self) -> str:
        if self.low is not None and self.high is not None:
            high = "2**32" if self.high == 2**32 else f"{self.high:g}"
            return f"in {'(' if self.low_open else '['}{self.low:g}, {high}{')' if self.high_open else ']'}"
        if self.low is not None:
            return f"{'>' if self.low_open else '>='} {self.low:g}"
        return f"{'<' if self.high_open else '<='} {self.high:g}"
