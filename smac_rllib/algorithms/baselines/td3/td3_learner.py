"""TD3's learner (td3.py): the critic loss every update, the actor loss and soft target updates every
``policy_delay`` updates."""

from __future__ import annotations

from typing import Any

import torch
from ray.rllib.core.columns import Columns
from ray.rllib.core.learner.torch.torch_learner import TorchLearner

from smac_rllib.objectives import losses
from smac_rllib.objectives.state_update import td_discount
from smac_rllib.objectives.update_step import ModuleUpdate, clip_each
from smac_rllib.training.async_learner import AsyncLearnerMixin
from smac_rllib.training.step_learner import StepLearnerMixin
from smac_rllib.algorithms.twin_q_module import TwinQModuleAPI
from smac_rllib.algorithms.baselines.td3.td3_rl_module import Q_NEXT_TARGET, Q_PI, Q_PRED


def td3_target(reward_B, terminated_B, q_next_target_T2_B, *, discount_B) -> torch.Tensor:
    """y = r + gamma^n (1 - d) min_i Qbar_i(x', a'): the soft target of ``losses.td_target`` without entropy."""
    return losses.td_target(
        reward_B, terminated_B, q_next_target_T2_B, torch.zeros_like(reward_B), alpha=0.0, discount_B=discount_B
    )


def td3_losses(config, batch: dict[str, Any], fwd_out: dict[str, Any]):
    """The critic loss, and on actor steps (``Q_PI`` in the forward) the deterministic actor's -Q: (terms, metrics)."""
    discount_B = td_discount(config.gamma, config.n_step, batch)
    target_B = td3_target(
        batch[Columns.REWARDS], batch[Columns.TERMINATEDS], fwd_out[Q_NEXT_TARGET], discount_B=discount_B
    )
    critic = losses.critic_loss(fwd_out[Q_PRED], target_B, kind=config.critic_loss)
    metrics = {"critic/loss": critic, "critic/q_mean": fwd_out[Q_PRED].mean(), "critic/target_mean": target_B.mean()}
    terms = {"critic": critic}
    if Q_PI in fwd_out:
        terms["actor"] = -fwd_out[Q_PI].mean()
        metrics |= {"actor/loss": terms["actor"], "actor/q_pi": fwd_out[Q_PI].mean()}
    return terms, {k: v.detach() for k, v in metrics.items()}


class TD3Update(ModuleUpdate):
    """One TD3 update: the critic every update; the actor and the soft updates of the target actor and critics every
    ``policy_delay`` updates (TD3's ``total_it % policy_freq == 0``), one backward. The update count lives here (it
    restarts at 0 after a restore: at most one delay shifted)."""

    def __init__(self, module, optimizers, config):
        self.config, self.updates = config, 0
        super().__init__(
            module,
            optimizers,
            lambda fwd_out, batch: td3_losses(config, batch, fwd_out),
            tau=config.tau,
            clip=clip_each(optimizers, config.grad_clip),
        )

    def step(self, batch: dict, average_targets: bool = True) -> dict:
        actor_step = (self.updates + 1) % self.config.policy_delay == 0
        self.module.actor_step = actor_step  # the forward computes Q(x, pi(x)) on actor steps only
        self.updates += 1
        return super().step(batch, average_targets=average_targets and actor_step)


class TD3TorchLearner(AsyncLearnerMixin, StepLearnerMixin, TorchLearner):
    """TD3's one update (``TD3Update``) run by the learner shell (training/step_learner.py)."""

    def build(self) -> None:
        super().build()
        self.module.foreach_module(
            lambda mid, mod: mod.make_target_networks() if isinstance(mod, TwinQModuleAPI) else None
        )

    make_optimizer = torch.optim.Adam  # torch's eps 1e-8 (TD3's code)

    def optimizer_groups(self, module, config) -> list[tuple[str, list, float]]:
        return [
            ("critic", self.get_parameters(module.qf), config.critic_lr),
            ("actor", self.get_parameters(module.policy), config.actor_lr),
        ]

    def make_update(self, module_id) -> TD3Update:
        return TD3Update(
            self._module[module_id].unwrapped(),
            self.module_optimizers(module_id),
            self.config.get_config_for_module(module_id),
        )
