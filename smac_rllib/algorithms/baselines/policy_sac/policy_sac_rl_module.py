"""The RLModule of SAC with another policy family (policy_sac.py): policy, twin Q, target twin Q, log(alpha).

Legend: B = batch, T2 = twin critics, X = obs dim, A = action dim."""

from __future__ import annotations

from typing import Any

import torch
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.torch.torch_rl_module import TorchRLModule
from torch import nn

from smac_rllib.objectives import losses
from smac_rllib.algorithms.twin_q_module import TwinQModuleAPI, check_flat_spaces
from smac_rllib.models.critic import TwinQ, frozen


# Keys of the training forward pass (Q_PRED / Q_PI / Q_NEXT_TARGET as SMAC's, smac_rllib.objectives.losses).
Q_PRED, Q_PI, Q_NEXT_TARGET = losses.Q_PRED, losses.Q_PI, losses.Q_NEXT_TARGET
LOGP = "logp_B"  # log pi(a|x) of the actor's action a ~ pi(.|x), with gradients to the policy
LOGP_NEXT = "logp_next_B"  # log pi(a'|x'), a' ~ pi(.|x'), no gradient
EXTRA_ACTOR_LOSS = "extra_actor_loss"  # a scalar added to the actor loss (the MoE's gate loss)


class PolicySACTorchRLModule(TorchRLModule, TwinQModuleAPI):
    """Policy + twin Q + target twin Q + log(alpha). Subclasses implement ``build_policy``.

    The policy must offer ``rsample(obs) -> (action, log pi(action|obs))`` (reparameterized) and
    ``deterministic_action(obs)`` (evaluation with ``explore=False``).
    """

    framework = "torch"
    algorithm_name = "SAC"

    def build_policy(self, obs_dim: int, action_dim: int, cfg: dict) -> nn.Module:
        raise NotImplementedError

    def setup(self):
        cfg = self.model_config
        check_flat_spaces(self.observation_space, self.action_space, self.algorithm_name)
        obs_dim, action_dim = int(self.observation_space.shape[0]), int(self.action_space.shape[0])
        self.policy = self.build_policy(obs_dim, action_dim, cfg)
        if not self.inference_only:
            self.qf = TwinQ(obs_dim, action_dim, int(cfg["hidden_dim"]), 2)
            self.log_alpha = nn.Parameter(torch.tensor(float(cfg["initial_log_alpha"])))

    # --- forward passes ---------------------------------------------------------------------------------
    def _forward_inference(self, batch: dict[str, Any], **kwargs) -> dict[str, Any]:
        return {Columns.ACTIONS: self.policy.deterministic_action(batch[Columns.OBS])}

    def _forward_exploration(self, batch: dict[str, Any], **kwargs) -> dict[str, Any]:
        return {Columns.ACTIONS: self.policy.rsample(batch[Columns.OBS])[0]}

    def actor_terms(self, obs_B_X: torch.Tensor) -> dict[str, torch.Tensor]:
        """a ~ pi(.|x) (reparameterized): min_i Q_i(x, a) with the critics frozen, and log pi(a|x)."""
        action_B_A, logp_B = self.policy.rsample(obs_B_X)
        with frozen(self.qf):  # the actor loss trains the policy only
            q_pi_B = self.qf(obs_B_X, action_B_A).min(dim=0).values
        return {Q_PI: q_pi_B, LOGP: logp_B}

    def _forward_train(self, batch: dict[str, Any], **kwargs) -> dict[str, Any]:
        obs_B_X, next_obs_B_X = batch[Columns.OBS], batch[Columns.NEXT_OBS]
        out = {Q_PRED: self.qf(obs_B_X, batch[Columns.ACTIONS])}
        out.update(self.actor_terms(obs_B_X))
        with torch.no_grad():  # the soft TD target at x': a' ~ pi(.|x'), log pi(a'|x'), Qbar(x', a')
            next_action_B_A, out[LOGP_NEXT] = self.policy.rsample(next_obs_B_X)
            out[Q_NEXT_TARGET] = self.target_qf(next_obs_B_X, next_action_B_A)
        return out
