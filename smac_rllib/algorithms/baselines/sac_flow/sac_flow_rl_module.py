"""The SACFlow RLModule (sac_flow.py): ``PolicySACTorchRLModule`` with a conditional RealNVP tanh policy."""

from __future__ import annotations

from smac_rllib.algorithms.baselines.policy_sac.policy_sac_rl_module import PolicySACTorchRLModule
from smac_rllib.models.flows import RealNVPTanhPolicy


class SACFlowTorchRLModule(PolicySACTorchRLModule):
    """``PolicySACTorchRLModule`` with a conditional RealNVP tanh policy (``models.flows``)."""

    algorithm_name = "SACFlow"

    def build_policy(self, obs_dim: int, action_dim: int, cfg: dict):
        width = cfg["flow_hidden_dim"] or cfg["hidden_dim"]
        return RealNVPTanhPolicy(obs_dim, action_dim, int(cfg["flow_blocks"]), int(width), 2)
