"""The SAC baseline's learner: RLlib's SAC learner with the MSE critic loss of ``smac_rllib.objectives.losses``."""

from __future__ import annotations

import torch
from ray.rllib.algorithms.sac.sac_learner import QF_LOSS_KEY, QF_PREDS, QF_TWIN_LOSS_KEY, QF_TWIN_PREDS
from ray.rllib.algorithms.sac.torch.sac_torch_learner import SACTorchLearner
from ray.rllib.core.columns import Columns

from smac_rllib.objectives import losses
from smac_rllib.training.async_learner import AsyncLearnerMixin


class SACBaselineTorchLearner(AsyncLearnerMixin, SACTorchLearner):
    """RLlib's SAC learner with the critic loss of ``smac_rllib.objectives.losses`` (MSE by default, as pytorch_sac).

    The one learner that keeps RLlib's update path on purpose (the baseline is RLlib's SAC, docs/design.md §9):
    RLlib's per-gradient finite checks, three backwards, state-dict Polyak. Through ``AsyncLearnerMixin`` it takes the
    metrics logger and ``DeviceMetrics`` only (the same logged values)."""

    def _compute_loss_for_module_continuous(self, *, module_id, config, batch, fwd_out):
        total_loss = super()._compute_loss_for_module_continuous(
            module_id=module_id, config=config, batch=batch, fwd_out=fwd_out
        )
        if config.critic_loss == "huber":
            return total_loss
        alpha = torch.exp(self.curr_log_alpha[module_id]).detach()
        target_B = losses.td_target(
            batch[Columns.REWARDS],
            batch[Columns.TERMINATEDS],
            fwd_out["q_target_next"].unsqueeze(0),  # already min_i Qbar_i(x', a')
            -fwd_out["logp_next_resampled"],
            alpha=alpha,
            discount_B=config.gamma ** batch["n_step"],
        )  # the same soft target as RLlib's (and Eq. 10 with K = 0)
        for key, q_pred_B in ((QF_LOSS_KEY, fwd_out[QF_PREDS]), (QF_TWIN_LOSS_KEY, fwd_out.get(QF_TWIN_PREDS))):
            if q_pred_B is None:
                continue
            mse = losses.critic_loss(q_pred_B.unsqueeze(0), target_B, kind="mse")
            total_loss = total_loss - self._temp_losses[(module_id, key)].detach() + mse
            self._temp_losses[(module_id, key)] = mse  # SACTorchLearner backpropagates each optimizer's own loss
            self.device_metrics.log((module_id, key), mse, window=1)
        return total_loss
