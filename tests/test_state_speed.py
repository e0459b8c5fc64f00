"""``benchmarks/state_speed.py::ratio_interval``: the bootstrap interval printed beside each learner / plain-loop
ratio, against cases whose answer is known."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from state_speed import ratio_interval  # noqa: E402


def test_a_constant_ratio_has_a_point_interval():
    assert ratio_interval([0.01] * 30, [0.02] * 30) == (2.0, 2.0)  # theirs take twice as long: we are 2x their rate


def test_the_interval_covers_the_true_ratio_and_shrinks_with_more_updates():
    rng = np.random.default_rng(1)
    widths = []
    for n in (30, 300):
        ours, theirs = rng.normal(1.0, 0.05, n), rng.normal(1.1, 0.05, n)
        low, high = ratio_interval(list(ours), list(theirs))
        assert low < 1.1 < high and low > 1.0  # separated from "level" at 5% noise, 10% apart
        widths.append(high - low)
    assert widths[1] < widths[0] / 2
