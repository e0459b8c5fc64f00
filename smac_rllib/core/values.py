"""The value checks every layer shares: a count is an ``int`` that is not a ``bool`` (``True`` is an ``int`` to Python,
never a count to a user), a number is an ``int`` or ``float`` that is not a ``bool``."""

from __future__ import annotations

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
