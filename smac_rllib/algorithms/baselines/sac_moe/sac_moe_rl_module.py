"""The SACMoE RLModule (sac_moe.py): a Gaussian-mixture tanh policy trained with Ren et al.'s frequency
approximate gradient (the best of one action per expert; the gate regressed onto its one-hot)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from smac_rllib.algorithms.baselines.policy_sac.policy_sac_rl_module import (
    EXTRA_ACTOR_LOSS,
    LOGP,
    Q_PI,
    PolicySACTorchRLModule,
)
from smac_rllib.models.critic import frozen
from smac_rllib.models.mixture import (
    GaussianMixtureTanhPolicy,
    gaussian_actor_param_count,
    matched_hidden_dim,
    tanh_mixture_log_prob,
)


def moe_hidden_dim(obs_dim: int, action_dim: int, num_experts: int, sac_hidden_dim: int = 400, width=None) -> int:
    """``width`` if given, else the trunk width matching the SAC actor's parameter count (width ``sac_hidden_dim``)."""
    if width:
        return int(width)
    return matched_hidden_dim(
        obs_dim, action_dim, num_experts, gaussian_actor_param_count(obs_dim, action_dim, sac_hidden_dim)
    )


def frequency_gate_loss(log_w_B_K: torch.Tensor, best_B: torch.Tensor) -> torch.Tensor:
    """Ren et al.'s gate loss: mean over states and experts of (w_k(x) - 1[k = best])^2."""
    return F.mse_loss(log_w_B_K.exp(), F.one_hot(best_B, log_w_B_K.shape[-1]).to(log_w_B_K.dtype))


class SACMoETorchRLModule(PolicySACTorchRLModule):
    """``PolicySACTorchRLModule`` with a Gaussian-mixture tanh policy (``models.mixture``) and its actor terms."""

    algorithm_name = "SACMoE"

    def build_policy(self, obs_dim: int, action_dim: int, cfg: dict):
        num_experts = int(cfg["num_experts"])
        width = moe_hidden_dim(obs_dim, action_dim, num_experts, int(cfg["hidden_dim"]), cfg["moe_hidden_dim"])
        return GaussianMixtureTanhPolicy(obs_dim, action_dim, num_experts, width, 2)

    def actor_terms(self, obs_B_X: torch.Tensor) -> dict[str, torch.Tensor]:
        """The frequency approximate gradient (sac_moe.py's docstring): all experts sampled, the best one trained."""
        u_B_K_A, params = self.policy.rsample_experts(obs_B_X)
        obs_B_K_X = obs_B_X.unsqueeze(-2).expand(*u_B_K_A.shape[:-1], obs_B_X.shape[-1])
        with frozen(self.qf):
            q_B_K = self.qf(obs_B_K_X, torch.tanh(u_B_K_A)).min(dim=0).values
        best_B = q_B_K.detach().argmax(dim=-1)
        q_pi_B = q_B_K.gather(-1, best_B.unsqueeze(-1)).squeeze(-1)
        u_B_A = u_B_K_A.gather(-2, best_B[:, None, None].expand(-1, 1, u_B_K_A.shape[-1])).squeeze(-2)
        return {
            Q_PI: q_pi_B,
            LOGP: tanh_mixture_log_prob(u_B_A, *params),
            EXTRA_ACTOR_LOSS: frequency_gate_loss(params[0], best_B),
        }
