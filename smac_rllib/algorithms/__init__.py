"""RLlib algorithms of this package: SMAC (ours) and the paper's baselines configured on the same plumbing."""

from smac_rllib.algorithms.sac_baseline import SACBaseline, SACBaselineConfig
from smac_rllib.algorithms.smac import SMAC, SMACConfig

__all__ = ["SMAC", "SMACConfig", "SACBaseline", "SACBaselineConfig"]
