"""RLlib algorithms of this package: SMAC (ours) and the paper's baselines configured on the same plumbing.

State baselines (docs/baselines.md): SACBaseline, TD3, SACFlow (Flow2/Flow4), SACMoE (MOE5/MOE10); the pixel
baselines SLAC (docs/slac.md) and Dreamer (the reference code's DreamerV1, docs/baselines.md);
``param_counts(config)`` gives each one's actor/critic sizes.
"""

from smac_rllib.algorithms.counts import param_counts
from smac_rllib.algorithms.baselines.dreamer import Dreamer, DreamerConfig
from smac_rllib.algorithms.baselines.sac_baseline import SACBaseline, SACBaselineConfig
from smac_rllib.algorithms.baselines.sac_flow import SACFlow, SACFlowConfig
from smac_rllib.algorithms.baselines.sac_moe import SACMoE, SACMoEConfig
from smac_rllib.algorithms.baselines.slac import SLAC, SLACConfig
from smac_rllib.algorithms.smac import SMAC, SMACConfig
from smac_rllib.algorithms.baselines.td3 import TD3, TD3Config

__all__ = [
    "SMAC", "SMACConfig", "Dreamer", "DreamerConfig", "SACBaseline", "SACBaselineConfig", "TD3", "TD3Config", "SACFlow", "SACFlowConfig",
    "SACMoE", "SACMoEConfig", "SLAC", "SLACConfig", "param_counts",
]
