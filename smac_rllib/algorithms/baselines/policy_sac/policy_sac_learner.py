"""The learner of SAC with another policy family (policy_sac.py): SAC's losses on a ``PolicySACTorchRLModule``.

Legend: B = batch, T2 = twin critics, X = obs dim, A = action dim."""

from __future__ import annotations

from typing import Any

import torch
from ray.rllib.algorithms.sac.torch.sac_torch_learner import SACTorchLearner
from ray.rllib.core.columns import Columns
from ray.rllib.core.learner.torch.torch_learner import TorchLearner

from smac_rllib.objectives import losses
from smac_rllib.objectives.state_update import td_discount
from smac_rllib.training.async_learner import AsyncLearnerMixin
from smac_rllib.algorithms.baselines.policy_sac.policy_sac_rl_module import (
    EXTRA_ACTOR_LOSS,
    LOGP,
    LOGP_NEXT,
    Q_NEXT_TARGET,
    Q_PI,
    Q_PRED,
)


class PolicySACTorchLearner(AsyncLearnerMixin, SACTorchLearner):
    """SAC's losses (``smac_rllib.objectives.losses``) on a ``PolicySACTorchRLModule``; targets soft-updated every
    update (RLlib's DQN/SAC learner, ``target_network_update_freq`` 0).

    Speed layer (training/fast_update/): no switch, for the same reason as ``SACBaselineTorchLearner``: RLlib's
    update path does the non-finite checks these baselines rely on; the metrics logger and ``DeviceMetrics`` only."""

    def configure_optimizers_for_module(self, module_id, config=None) -> None:
        module = self._module[module_id].unwrapped()
        for name, params, lr in (
            ("critic", self.get_parameters(module.qf), config.critic_lr),
            ("actor", self.get_parameters(module.policy), config.actor_lr),
            ("alpha", [module.log_alpha], config.alpha_lr),
        ):
            self.register_optimizer(
                module_id=module_id,
                optimizer_name=name,
                optimizer=torch.optim.Adam(params),
                params=params,
                lr_or_lr_schedule=lr,
            )

    def compute_loss_for_module(
        self, *, module_id, config, batch: dict[str, Any], fwd_out: dict[str, Any]
    ) -> torch.Tensor:
        module = self._module[module_id].unwrapped()
        discount_B = td_discount(config.gamma, config.n_step, batch)
        alpha = module.log_alpha.exp().detach()
        target_entropy = float(self.target_entropy[module_id])
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
        self.device_metrics.log_dict({k: v.detach() for k, v in metrics.items()}, key=module_id)
        return critic + actor + temperature

    def compute_gradients(self, loss_per_module, **kwargs):
        # One backward of the summed losses (each parameter's gradient comes from one term),
        # not SAC's per-optimizer ones.
        return TorchLearner.compute_gradients(self, loss_per_module, **kwargs)
