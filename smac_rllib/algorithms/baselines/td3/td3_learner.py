"""TD3's learner (td3.py): the critic loss every update, the actor loss and soft target updates every
``policy_delay`` updates."""

from __future__ import annotations

from typing import Any

import torch
from ray.rllib.core.columns import Columns
from ray.rllib.core.learner.torch.torch_learner import TorchLearner
from ray.rllib.core.learner.utils import update_target_network

from smac_rllib.objectives import losses
from smac_rllib.objectives.state_update import td_discount
from smac_rllib.training.async_learner import AsyncLearnerMixin
from smac_rllib.algorithms.twin_q_module import TwinQModuleAPI
from smac_rllib.algorithms.baselines.td3.td3_rl_module import Q_NEXT_TARGET, Q_PI, Q_PRED


def td3_target(reward_B, terminated_B, q_next_target_T2_B, *, discount_B) -> torch.Tensor:
    """y = r + gamma^n (1 - d) min_i Qbar_i(x', a'): the soft target of ``losses.td_target`` without entropy."""
    return losses.td_target(
        reward_B, terminated_B, q_next_target_T2_B, torch.zeros_like(reward_B), alpha=0.0, discount_B=discount_B
    )


class TD3TorchLearner(AsyncLearnerMixin, TorchLearner):
    """Critic every update; actor and soft target updates every ``policy_delay`` updates (one backward per update).

    Speed layer (training/fast_update/): no switch; RLlib's ``TorchLearner`` update path with its non-finite checks,
    the layer's metrics logger and ``DeviceMetrics`` only (through ``AsyncLearnerMixin``)."""

    def build(self) -> None:
        super().build()
        self._td3_updates = (
            0  # critic updates done by this learner (restarts at 0 after a restore: at most one delay shifted)
        )
        self._actor_step = True
        self.module.foreach_module(
            lambda mid, mod: mod.make_target_networks() if isinstance(mod, TwinQModuleAPI) else None
        )

    def configure_optimizers_for_module(self, module_id, config=None) -> None:
        module = self._module[module_id].unwrapped()
        for name, params, lr in (
            ("critic", self.get_parameters(module.qf), config.critic_lr),
            ("actor", self.get_parameters(module.policy), config.actor_lr),
        ):
            self.register_optimizer(
                module_id=module_id,
                optimizer_name=name,
                optimizer=torch.optim.Adam(params),
                params=params,
                lr_or_lr_schedule=lr,
            )

    def before_gradient_based_update(self, *, timesteps: dict[str, Any]) -> None:
        super().before_gradient_based_update(timesteps=timesteps)
        self._actor_step = (self._td3_updates + 1) % self.config.policy_delay == 0  # TD3: total_it % policy_freq == 0
        for module in self.module._rl_modules.values():
            module.unwrapped().actor_step = self._actor_step

    def compute_loss_for_module(
        self, *, module_id, config, batch: dict[str, Any], fwd_out: dict[str, Any]
    ) -> torch.Tensor:
        discount_B = td_discount(config.gamma, config.n_step, batch)
        target_B = td3_target(
            batch[Columns.REWARDS], batch[Columns.TERMINATEDS], fwd_out[Q_NEXT_TARGET], discount_B=discount_B
        )
        critic = losses.critic_loss(fwd_out[Q_PRED], target_B, kind=config.critic_loss)
        metrics = {
            "critic/loss": critic,
            "critic/q_mean": fwd_out[Q_PRED].mean(),
            "critic/target_mean": target_B.mean(),
        }
        total = critic
        if Q_PI in fwd_out:
            actor = -fwd_out[Q_PI].mean()
            metrics |= {"actor/loss": actor, "actor/q_pi": fwd_out[Q_PI].mean()}
            total = total + actor
        self.device_metrics.log_dict({k: v.detach() for k, v in metrics.items()}, key=module_id)
        return total

    def compute_gradients(self, loss_per_module, **kwargs):
        grads = super().compute_gradients(loss_per_module, **kwargs)
        return {
            pid: g for pid, g in grads.items() if g is not None
        }  # critic-only updates: the actor's Adam skips its step

    def after_gradient_based_update(self, *, timesteps: dict[str, Any]) -> None:
        self._td3_updates += 1
        if self._actor_step:  # delayed soft updates of the target actor and both target critics
            for module_id, module in self.module._rl_modules.items():
                tau = self.config.get_config_for_module(module_id).tau
                for main_net, target_net in module.unwrapped().get_target_network_pairs():
                    update_target_network(main_net=main_net, target_net=target_net, tau=tau)
        super().after_gradient_based_update(timesteps=timesteps)
