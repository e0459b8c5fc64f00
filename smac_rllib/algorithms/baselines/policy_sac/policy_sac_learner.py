"""The learner of SAC with another policy family (policy_sac.py): SAC's losses on a ``PolicySACTorchRLModule``.

Legend: B = batch, T2 = twin critics, X = obs dim, A = action dim."""

from __future__ import annotations

import functools

from typing import Any

import torch
from ray.rllib.algorithms.sac.torch.sac_torch_learner import SACTorchLearner
from ray.rllib.core.columns import Columns

from smac_rllib.objectives import losses
from smac_rllib.objectives.state_update import td_discount
from smac_rllib.objectives.update_step import ModuleUpdate, clip_each
from smac_rllib.training.async_learner import AsyncLearnerMixin
from smac_rllib.training.step_learner import StepLearnerMixin
from smac_rllib.algorithms.baselines.policy_sac.policy_sac_rl_module import (
    EXTRA_ACTOR_LOSS,
    LOGP,
    LOGP_NEXT,
    Q_NEXT_TARGET,
    Q_PI,
    Q_PRED,
)


def policy_sac_losses(module, config, fwd_out: dict[str, Any], batch: dict[str, Any], *, target_entropy: float):
    """SAC's critic, actor and temperature losses (``smac_rllib.objectives.losses``) on a ``PolicySACTorchRLModule``'s
    forward: (named 0-d terms, metrics)."""
    discount_B = td_discount(config.gamma, config.n_step, batch)
    alpha = module.log_alpha.exp().detach()
    target_B = losses.td_target(
        batch[Columns.REWARDS],
        batch[Columns.TERMINATEDS],
        fwd_out[Q_NEXT_TARGET],
        -fwd_out[LOGP_NEXT],
        alpha=alpha,
        discount_B=discount_B,
    )
    critic = losses.critic_loss(fwd_out[Q_PRED], target_B, kind=config.critic_loss)
    entropy_B = -fwd_out[LOGP]
    actor = losses.actor_loss(fwd_out[Q_PI], entropy_B, alpha=alpha)
    extra = fwd_out.get(EXTRA_ACTOR_LOSS)
    if extra is not None:
        actor = actor + extra
    temperature = losses.alpha_loss(module.log_alpha, entropy_B, target_entropy=target_entropy)
    metrics = {
        "critic/loss": critic,
        "critic/q_mean": fwd_out[Q_PRED].mean(),
        "critic/target_mean": target_B.mean(),
        "actor/loss": actor,
        "actor/q_pi": fwd_out[Q_PI].mean(),
        "actor/entropy": entropy_B.mean(),
        "alpha/loss": temperature,
        "alpha/value": alpha,
    }
    if extra is not None:
        metrics["actor/gate_loss"] = extra
    terms = {"critic": critic, "actor": actor, "alpha": temperature}
    return terms, {k: v.detach() for k, v in metrics.items()}


class PolicySACTorchLearner(AsyncLearnerMixin, StepLearnerMixin, SACTorchLearner):
    """SAC with another policy family: one update (the module's forward, ``policy_sac_losses``, the shared tail) run
    by the learner shell (training/step_learner.py); targets soft-updated every update."""

    make_optimizer = torch.optim.Adam  # torch's eps 1e-8, pytorch_sac's

    def optimizer_groups(self, module, config) -> list[tuple[str, list, float]]:
        return [
            ("critic", self.get_parameters(module.qf), config.critic_lr),
            ("actor", self.get_parameters(module.policy), config.actor_lr),
            ("alpha", [module.log_alpha], config.alpha_lr),
        ]

    def make_update(self, module_id) -> ModuleUpdate:
        module, optimizers = self._module[module_id].unwrapped(), self.module_optimizers(module_id)
        config = self.config.get_config_for_module(module_id)
        losses_fn = functools.partial(
            policy_sac_losses, module, config, target_entropy=self.target_entropy_value(module_id)
        )
        return ModuleUpdate(module, optimizers, losses_fn, tau=config.tau, clip=clip_each(optimizers, config.grad_clip))
