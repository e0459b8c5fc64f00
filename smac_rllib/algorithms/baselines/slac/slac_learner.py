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

import torch
from ray.rllib.algorithms.sac.torch.sac_torch_learner import SACTorchLearner

from smac_rllib.algorithms.baselines.slac.slac_rl_module import (
    LOGP,
    LOGP_NEXT,
    MODEL_LOSS,
    MODEL_METRICS,
    REWARD,
    TERMINATED,
    VALID,
)
from smac_rllib.objectives.losses import Q_NEXT_TARGET, Q_PI, Q_PRED
from smac_rllib.objectives.update_step import NONFINITE, ModuleUpdate, clip_each
from smac_rllib.training.async_learner import AsyncLearnerMixin
from smac_rllib.training.checkpoint_names import retired_twins
from smac_rllib.training.step_learner import StepLearnerMixin


def masked_mean(x_B: torch.Tensor, valid_B: torch.Tensor) -> torch.Tensor:
    return (x_B * valid_B).sum() / valid_B.sum().clamp(min=1.0)


def slac_losses(
    fwd_out: dict, *, log_alpha: torch.Tensor, gamma: float, target_entropy: float
) -> dict[str, torch.Tensor]:
    """Critic, actor and temperature losses of SAC on SLAC's inputs (pure torch); see the module doc."""
    alpha = log_alpha.exp().detach()
    valid_B = fwd_out[VALID]
    q_next_B = fwd_out[Q_NEXT_TARGET].min(dim=0).values - alpha * fwd_out[LOGP_NEXT]
    target_B = (fwd_out[REWARD] + gamma * (1.0 - fwd_out[TERMINATED]) * q_next_B).detach()
    critic = masked_mean((0.5 * (fwd_out[Q_PRED] - target_B).square()).sum(dim=0), valid_B)
    actor = masked_mean(alpha * fwd_out[LOGP] - fwd_out[Q_PI], valid_B)
    temperature = masked_mean(log_alpha * (-fwd_out[LOGP] - target_entropy).detach(), valid_B)
    return {"critic": critic, "actor": actor, "alpha": temperature, "target": target_B}


class SLACUpdate(ModuleUpdate):
    """SLAC's update: the module's forward (model ELBO, and after the pretraining the SAC inputs), ``slac_losses``, one
    backward, the Adam steps, Polyak averaging; during the pretraining only the model's Adam has gradients, and each
    finite update counts one in ``model_updates_done`` (on the device)."""

    def __init__(self, module, optimizers, config, target_entropy: float):
        self.config, self.target_entropy = config, target_entropy
        super().__init__(
            module,
            optimizers,
            self._losses,
            tau=config.tau,
            clip=clip_each(optimizers, config.grad_clip),
        )

    def step(self, batch: dict, average_targets: bool = True) -> dict[str, torch.Tensor]:
        module = self.module
        module.rl_step = int(module.model_updates_done) >= self.config.initial_model_train_steps  # one host read
        metrics = super().step(batch, average_targets)
        if not module.rl_step:
            with torch.no_grad():
                module.model_updates_done += (1 - metrics[NONFINITE]).long()  # a skipped update does not count
        return metrics

    def _losses(self, fwd_out: dict, batch: dict) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
        module = self.module
        terms, metrics = {"model": fwd_out[MODEL_LOSS]}, dict(fwd_out[MODEL_METRICS])
        if Q_PRED in fwd_out:  # an RL update (after the model pretraining)
            out = slac_losses(
                fwd_out, log_alpha=module.log_alpha, gamma=self.config.gamma, target_entropy=self.target_entropy
            )
            terms |= {"critic": out["critic"], "actor": out["actor"], "alpha": out["alpha"]}
            metrics |= {
                "critic/loss": out["critic"],
                "critic/q_mean": fwd_out[Q_PRED].mean(),
                "critic/target_mean": out["target"].mean(),
                "actor/loss": out["actor"],
                "actor/entropy": -fwd_out[LOGP].mean(),
                "actor/q_pi": fwd_out[Q_PI].mean(),
                "alpha/loss": out["alpha"],
                "alpha/value": module.log_alpha.exp(),
                "critic/valid_fraction": fwd_out[VALID].mean(),
            }
        return terms, {k: v.detach() for k, v in metrics.items()}


class SLACTorchLearner(AsyncLearnerMixin, StepLearnerMixin, SACTorchLearner):
    """SLAC's model, critic, actor and alpha losses in one step (``SLACUpdate``) on the learner shell
    (training/step_learner.py)."""

    def optimizer_groups(self, module, config) -> list[tuple[str, list, float]]:
        return [
            ("model", self.get_parameters(module.model), config.model_lr),  # encoder, latent model, decoder, reward
            ("critic", self.get_parameters(module.qf), config.critic_lr),
            ("actor", self.get_parameters(module.policy), config.actor_lr),  # the actor only (features stop-gradient)
            ("alpha", [module.log_alpha], config.alpha_lr),
        ]

    def make_update(self, module_id) -> SLACUpdate:
        return SLACUpdate(
            self._module[module_id].unwrapped(),
            self.module_optimizers(module_id),
            self.config.get_config_for_module(module_id),
            self.target_entropy_value(module_id),
        )


__getattr__ = retired_twins(globals())  # checkpoints written with fast_update: false name "...RLlibPath" classes
