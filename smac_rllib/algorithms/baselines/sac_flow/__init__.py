"""SACFlow (the paper's Flow2 / Flow4) in RLlib's per-algorithm layout: ``sac_flow.py`` (config and algorithm),
``sac_flow_rl_module.py``; the learner is ``policy_sac``'s. The names below are also this package's, so checkpoints
written when it was one module (``smac_rllib.algorithms.baselines.sac_flow``) find their classes."""

from smac_rllib.algorithms.baselines.sac_flow.sac_flow import SACFlow, SACFlowConfig
from smac_rllib.algorithms.baselines.sac_flow.sac_flow_rl_module import SACFlowTorchRLModule

__all__ = ["SACFlow", "SACFlowConfig", "SACFlowTorchRLModule"]
