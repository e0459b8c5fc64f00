"""SACMoE (the paper's MOE5 / MOE10) in RLlib's per-algorithm layout: ``sac_moe.py`` (config and algorithm),
``sac_moe_rl_module.py``; the learner is ``policy_sac``'s. The names below are also this package's, so checkpoints
written when it was one module (``smac_rllib.algorithms.baselines.sac_moe``) find their classes."""

from smac_rllib.algorithms.baselines.sac_moe.sac_moe import SACMoE, SACMoEConfig
from smac_rllib.algorithms.baselines.sac_moe.sac_moe_rl_module import (
    SACMoETorchRLModule,
    frequency_gate_loss,
    moe_hidden_dim,
)

__all__ = ["SACMoE", "SACMoEConfig", "SACMoETorchRLModule", "frequency_gate_loss", "moe_hidden_dim"]
