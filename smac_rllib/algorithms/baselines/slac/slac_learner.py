"""SLAC's TorchLearner: model (ELBO), critic, actor and temperature losses; one backward; model pretraining first.

Losses (``SlacAgent`` in ``slac/agents/slac/slac_agent.py``; paper §5):
- critic J_Q: ``0.5 (Q_i(z_t, a_t) - y)^2`` summed over the twins (``td_errors_loss_fn`` = MSE with weights 0.5),
  y = r_t + gamma d_t+1 (min_i Qbar_i(z_t+1, a') - alpha log pi(a'|h_t+1)), a' ~ pi(.|h_t+1);
- actor J_pi: ``alpha log pi(a|h_t) - min_i Q_i(z_t, a)``, a ~ pi(.|h_t), critics frozen;
- temperature: ``log_alpha (-log pi(a|h_t) - target_entropy)`` with the entropy term detached, target -|A|;
- model: the negative ELBO (``models/slac_model.py``), on the first ``model_batch_size`` rows.
Means over the rows whose last transition stays inside one episode (the TF dataset filters the others out).

One backward of the sum: every parameter gets its gradient from one term (latents and features detached for actor
and critic, critics frozen in the actor loss, TD target and alpha detached), so it equals SLAC's four separate
``tape.gradient`` calls. The first ``initial_model_train_steps`` updates train the model only (``train_eval``'s
``initial_model_train_steps`` loop); their count is the module buffer ``model_updates_done`` (checkpointed).
"""

from __future__ import annotations

from typing import Any

import torch

from smac_rllib.algorithms.baselines.slac.slac_rl_module import (
    LOGP, LOGP_NEXT, MODEL_LOSS, MODEL_METRICS, REWARD, TERMINATED, VALID,
)
from smac_rllib.algorithms.smac.smac_learner import SMACTorchLearner
from smac_rllib.objectives.losses import Q_NEXT_TARGET, Q_PI, Q_PRED
from smac_rllib.training.fast_update.switch import rllib_path


def masked_mean(x_B: torch.Tensor, valid_B: torch.Tensor) -> torch.Tensor:
    return (x_B * valid_B).sum() / valid_B.sum().clamp(min=1.0)


def slac_losses(fwd_out: dict, *, log_alpha: torch.Tensor, gamma: float, target_entropy: float) -> dict[str, torch.Tensor]:
    """Critic, actor and temperature losses of SAC on SLAC's inputs (pure torch); see the module doc."""
    alpha = log_alpha.exp().detach()
    valid_B = fwd_out[VALID]
    q_next_B = fwd_out[Q_NEXT_TARGET].min(dim=0).values - alpha * fwd_out[LOGP_NEXT]
    target_B = (fwd_out[REWARD] + gamma * (1.0 - fwd_out[TERMINATED]) * q_next_B).detach()
    critic = masked_mean((0.5 * (fwd_out[Q_PRED] - target_B).square()).sum(dim=0), valid_B)
    actor = masked_mean(alpha * fwd_out[LOGP] - fwd_out[Q_PI], valid_B)
    temperature = masked_mean(log_alpha * (-fwd_out[LOGP] - target_entropy).detach(), valid_B)
    return {"critic": critic, "actor": actor, "alpha": temperature, "target": target_B}


class SLACTorchLearner(SMACTorchLearner):
    """SLAC's model, critic, actor and alpha losses on SMAC's learner: the speed layer (lean update, device-side
    non-finite skip) as SMAC's; no captured update (the captured step is pixel SMAC's ``PixelUpdate.step``)."""

    def optimizer_groups(self, module, config) -> list[tuple[str, list, float]]:
        return [
            ("model", self.get_parameters(module.model), config.model_lr),  # encoder, latent model, decoder, reward
            ("critic", self.get_parameters(module.qf), config.critic_lr),
            ("actor", self.get_parameters(module.policy), config.actor_lr),  # the actor only (features stop-gradient)
            ("alpha", [module.log_alpha], config.alpha_lr),
        ]

    def before_gradient_based_update(self, *, timesteps: dict[str, Any]) -> None:
        super().before_gradient_based_update(timesteps=timesteps)
        for module in self.module._rl_modules.values():
            module = module.unwrapped()
            module.rl_step = int(module.model_updates_done) >= self.config.initial_model_train_steps

    def compute_loss_for_module(self, *, module_id, config, batch: dict[str, Any], fwd_out: dict[str, Any]) -> torch.Tensor:
        module = self._module[module_id].unwrapped()
        metrics = dict(fwd_out[MODEL_METRICS])
        total = fwd_out[MODEL_LOSS]
        if Q_PRED in fwd_out:  # an RL update (after the model pretraining)
            target_entropy = float(self.target_entropy[module_id])
            out = slac_losses(fwd_out, log_alpha=module.log_alpha, gamma=config.gamma, target_entropy=target_entropy)
            total = total + out["critic"] + out["actor"] + out["alpha"]
            metrics |= {
                "critic/loss": out["critic"], "critic/q_mean": fwd_out[Q_PRED].mean(), "critic/target_mean": out["target"].mean(),
                "actor/loss": out["actor"], "actor/entropy": -fwd_out[LOGP].mean(), "actor/q_pi": fwd_out[Q_PI].mean(),
                "alpha/loss": out["alpha"], "alpha/value": module.log_alpha.exp(),
                "critic/valid_fraction": fwd_out[VALID].mean(),
            }
        self.device_metrics.log_dict({k: v.detach() for k, v in metrics.items()}, key=module_id)
        return total

    def compute_gradients(self, loss_per_module, **kwargs):
        grads = super().compute_gradients(loss_per_module, **kwargs)
        return {pid: g for pid, g in grads.items() if g is not None}  # pretraining: critic/actor/alpha Adams skip

    def after_gradient_based_update(self, *, timesteps: dict[str, Any]) -> None:
        for module in self.module._rl_modules.values():
            module = module.unwrapped()
            if not module.rl_step and not self._skip_update:
                module.model_updates_done += 1
        super().after_gradient_based_update(timesteps=timesteps)


# the speed layer off (fast_update: false): the same learners on RLlib's own update path (training/fast_update/)
SLACTorchLearnerRLlibPath = rllib_path(SLACTorchLearner)
