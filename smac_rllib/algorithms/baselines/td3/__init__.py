"""TD3 in RLlib's per-algorithm layout: ``td3.py`` (config and algorithm), ``td3_rl_module.py``, ``td3_learner.py``.
The names below are also this package's, so checkpoints written when it was one module
(``smac_rllib.algorithms.baselines.td3``) find their classes."""

from smac_rllib.algorithms.baselines.td3.td3 import TD3, TD3Config
from smac_rllib.algorithms.baselines.td3.td3_learner import TD3TorchLearner, td3_target
from smac_rllib.algorithms.baselines.td3.td3_rl_module import TD3TorchRLModule, smoothed_target_action

__all__ = ["TD3", "TD3Config", "TD3TorchLearner", "TD3TorchRLModule", "smoothed_target_action", "td3_target"]
