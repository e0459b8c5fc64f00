"""TD3's RLModule (td3.py): a deterministic tanh actor, twin Q, their targets; target policy smoothing."""

from __future__ import annotations

from typing import Any

import torch
from ray.rllib.core.columns import Columns
from ray.rllib.core.learner.utils import make_target_network
from ray.rllib.core.rl_module.torch.torch_rl_module import TorchRLModule

from smac_rllib.objectives import losses
from smac_rllib.algorithms.twin_q_module import TwinQModuleAPI, check_flat_spaces
from smac_rllib.models.critic import TwinQ, frozen
from smac_rllib.models.mlp import mlp


Q_PRED, Q_PI, Q_NEXT_TARGET = losses.Q_PRED, losses.Q_PI, losses.Q_NEXT_TARGET


def smoothed_target_action(target_action_B_A: torch.Tensor, noise_B_A: torch.Tensor, noise_clip: float) -> torch.Tensor:
    """TD3's target policy smoothing: clip(mu_bar(x') + clip(noise, -c, c), -1, 1) (``noise`` already scaled)."""
    return (target_action_B_A + noise_B_A.clamp(-noise_clip, noise_clip)).clamp(-1.0, 1.0)


class TD3TorchRLModule(TorchRLModule, TwinQModuleAPI):
    """Deterministic tanh actor + twin Q, their targets; inference-only copy = the actor."""

    framework = "torch"

    def setup(self):
        cfg = self.model_config
        check_flat_spaces(self.observation_space, self.action_space, "TD3")
        obs_dim, action_dim = int(self.observation_space.shape[0]), int(self.action_space.shape[0])
        width = int(cfg["hidden_dim"])
        self.policy = mlp(obs_dim, width, action_dim, 2)  # mu(x) = tanh(policy(x))
        self.exploration_noise = float(cfg["exploration_noise"])
        self.target_noise = float(cfg["target_noise"])
        self.target_noise_clip = float(cfg["target_noise_clip"])
        self.actor_step = True  # set by the learner before each update (delayed actor updates)
        if not self.inference_only:
            self.qf = TwinQ(obs_dim, action_dim, width, 2)

    def actor(self, obs_B_X: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.policy(obs_B_X))

    # --- RLlib APIs -------------------------------------------------------------------------------------
    def get_non_inference_attributes(self) -> list[str]:
        return ["qf", "target_qf", "target_policy"]

    def make_target_networks(self) -> None:
        self.target_policy = make_target_network(self.policy)
        self.target_qf = make_target_network(self.qf)

    def get_target_network_pairs(self):
        return [(self.policy, self.target_policy), (self.qf, self.target_qf)]

    # --- forward passes ---------------------------------------------------------------------------------
    def _forward_inference(self, batch: dict[str, Any], **kwargs) -> dict[str, Any]:
        return {Columns.ACTIONS: self.actor(batch[Columns.OBS])}

    def _forward_exploration(self, batch: dict[str, Any], **kwargs) -> dict[str, Any]:
        action_B_A = self.actor(batch[Columns.OBS])
        noise_B_A = self.exploration_noise * torch.randn_like(action_B_A)
        return {Columns.ACTIONS: (action_B_A + noise_B_A).clamp(-1.0, 1.0)}

    def _forward_train(self, batch: dict[str, Any], **kwargs) -> dict[str, Any]:
        obs_B_X, next_obs_B_X = batch[Columns.OBS], batch[Columns.NEXT_OBS]
        out = {Q_PRED: self.qf(obs_B_X, batch[Columns.ACTIONS])}
        with torch.no_grad():  # target policy smoothing
            target_action_B_A = torch.tanh(self.target_policy(next_obs_B_X))
            noise_B_A = self.target_noise * torch.randn_like(target_action_B_A)
            next_action_B_A = smoothed_target_action(target_action_B_A, noise_B_A, self.target_noise_clip)
            out[Q_NEXT_TARGET] = self.target_qf(next_obs_B_X, next_action_B_A)
        if self.actor_step:  # TD3's actor loss uses Q_1 only; the critics get no gradient from it
            with frozen(self.qf):
                out[Q_PI] = self.qf.q1(torch.cat([obs_B_X, self.actor(obs_B_X)], dim=-1)).squeeze(-1)
        return out
