"""The paper's Dreamer baseline (DreamerV1 as the SMAC reference code ships it, ``visual_control/dreamer.py``) on our
world model and plumbing: ``run: Dreamer``. The math: ``smac_rllib/objectives/imagination.py``."""

from smac_rllib.algorithms.baselines.dreamer.dreamer import Dreamer, DreamerConfig

__all__ = ["Dreamer", "DreamerConfig"]
