"""RLModule of state-based SMAC (Alg. 1): latent-variable policy + twin Q + targets + log(alpha).

Legend: B = batch, K1 = K + 1 latents, T2 = twin critics, X = obs dim, A = action dim.

Env runners hold the inference-only copy (policy only, no critics); exploration and inference emit
actions directly. During the warm-up (pytorch_sac's seed steps) exploration draws uniform random actions:
the ``uniform_exploration`` buffer, which the driver sets for exactly the warm-up's sample calls
(``OffPolicyLoop._sample_warm_up``).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import torch
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.torch.torch_rl_module import TorchRLModule
from torch import nn

from smac_rllib.training.fast_update.train_mode import CachedTrainModeMixin
from smac_rllib.algorithms.twin_q_module import TwinQModuleAPI
from smac_rllib.objectives.losses import (
    ACTION_LOG_STD,
    LOG_W,
    LOG_W_NEXT,
    Q_NEXT_TARGET,
    Q_PI,
    Q_PRED,
)  # train forward keys
from smac_rllib.models.critic import TwinQ, frozen
from smac_rllib.models.latent_policy import LatentPolicy
from smac_rllib.training.checkpoint_names import retired_twins


class SMACTorchRLModule(CachedTrainModeMixin, TorchRLModule, TwinQModuleAPI):
    framework = "torch"

    def setup(self):
        cfg = self.model_config
        _check_spaces(self.observation_space, self.action_space)
        if cfg["torch_num_threads"]:
            torch.set_num_threads(int(cfg["torch_num_threads"]))  # docs/design.md §3: 1 thread per CPU process
        obs_dim = int(self.observation_space.shape[0])
        action_dim = int(self.action_space.shape[0])
        self.num_particles = int(cfg["num_particles"])
        self.td_entropy = cfg["td_entropy"]  # Eq. (10): the marginal estimate at x'
        self.policy = LatentPolicy(
            obs_dim, action_dim, int(cfg["latent_dim"]), int(cfg["hidden_dim"]), int(cfg["num_hidden_layers"])
        )
        # True only while the driver samples the uniform warm-up (OffPolicyLoop._sample_warm_up), on env runners.
        self.register_buffer("uniform_exploration", torch.tensor(False))
        if not self.inference_only:
            self.qf = TwinQ(obs_dim, action_dim, int(cfg["critic_hidden_dim"]), int(cfg["num_hidden_layers"]))
            self.log_alpha = nn.Parameter(torch.tensor(float(cfg["initial_log_alpha"])))

    # --- RLlib APIs -------------------------------------------------------------------------------------
    # --- forward passes ---------------------------------------------------------------------------------
    def _forward_inference(self, batch: dict[str, Any], **kwargs) -> dict[str, Any]:
        return {Columns.ACTIONS: self.policy.deterministic_action(batch[Columns.OBS])}

    def _forward_exploration(self, batch: dict[str, Any], **kwargs) -> dict[str, Any]:
        obs_B_X = batch[Columns.OBS]
        if bool(self.uniform_exploration):
            action_B_A = torch.rand(obs_B_X.shape[0], self.policy.action_dim, device=obs_B_X.device) * 2 - 1
        else:
            action_B_A = self.policy.sample(obs_B_X, num_particles=0).action_B_A  # a ~ pi(.|s0), s0 ~ q(.|x)
        return {Columns.ACTIONS: action_B_A}

    def _forward_train(self, batch: dict[str, Any], **kwargs) -> dict[str, Any]:
        obs_B_X, next_obs_B_X = batch[Columns.OBS], batch[Columns.NEXT_OBS]
        out = {Q_PRED: self.qf(obs_B_X, batch[Columns.ACTIONS])}

        # Actor: a ~ pi(.|s0), s0..sK ~ q(.|x), reparameterized: trains q(s|x) and pi(a|s) (Alg. 1).
        sample = self.policy.sample(obs_B_X, self.num_particles)
        out[LOG_W], out[ACTION_LOG_STD] = sample.log_w_K1_B, sample.action_log_std_B_A
        with frozen(self.qf):  # Q's parameters get no gradient from the actor loss (straight-through)
            out[Q_PI] = self.qf(obs_B_X, sample.action_B_A).min(dim=0).values

        # Critic target at x' (Eq. 10): a' ~ pi(.|x') and the entropy estimate's log-weights, no gradient
        # ("conditional": only log pi(a'|s0'), one latent, as the pixel reference's TD target).
        with torch.no_grad():
            next_sample = self.policy.sample(
                next_obs_B_X, 0 if self.td_entropy == "conditional" else self.num_particles
            )
            out[LOG_W_NEXT] = next_sample.log_w_K1_B
            out[Q_NEXT_TARGET] = self.target_qf(next_obs_B_X, next_sample.action_B_A)
        return out


def _check_spaces(observation_space: gym.Space, action_space: gym.Space) -> None:
    if not isinstance(action_space, gym.spaces.Box) or len(action_space.shape) != 1:
        raise ValueError(f"SMAC needs a 1-D continuous (Box) action space; got {action_space}")
    if not isinstance(observation_space, gym.spaces.Box) or len(observation_space.shape) != 1:
        raise ValueError(
            f"state-based SMAC needs a flat Box observation space; got {observation_space} "
            "(for pixels use SMACConfig().environment(env, env_config={'from_pixels': True}))"
        )


__getattr__ = retired_twins(globals())  # checkpoints written with fast_update: false name "...RLlibPath" classes
