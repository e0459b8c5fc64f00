"""SMAC's TorchLearner (Alg. 1): critic, actor and temperature losses, one backward, non-finite guard.

The math lives in ``smac_rllib.estimators`` and ``smac_rllib.losses``; this file only wires module outputs to
them, registers one optimizer per component and logs metrics (prefixed critic/, actor/, alpha/, estimator/).

One backward per update: each parameter gets its gradient from exactly one loss term (the critics are frozen
in the actor's Q, the TD target and alpha are detached, the entropy is detached in the alpha loss), so the sum
of the three losses has the same gradients as three separate backwards, and DDP all-reduces once.
"""

from __future__ import annotations

from typing import Any

import torch
from ray.rllib.algorithms.sac.torch.sac_torch_learner import SACTorchLearner
from ray.rllib.core.columns import Columns
from ray.rllib.core.learner.torch.torch_learner import TorchLearner
from ray.rllib.utils.metrics import ALL_MODULES

from smac_rllib import estimators, losses
from smac_rllib.algorithms.smac.smac_rl_module import ACTION_LOG_STD, LOG_W, LOG_W_NEXT, Q_NEXT_TARGET, Q_PI, Q_PRED
from smac_rllib.models.distributions import gaussian_entropy


class NonFiniteUpdateError(FloatingPointError):
    pass


class SMACTorchLearner(SACTorchLearner):
    def build(self) -> None:
        super().build()
        self._skip_update = False
        self._consecutive_nonfinite = 0

    def optimizer_groups(self, module, config) -> list[tuple[str, list, float]]:
        """(optimizer name, parameters, learning rate): one Adam per component, each with its own loss term."""
        return [
            ("critic", self.get_parameters(module.qf), config.critic_lr),
            ("actor", self.get_parameters(module.policy), config.actor_lr),  # q(s|x) and pi(a|s) (Alg. 1)
            ("alpha", [module.log_alpha], config.alpha_lr),
        ]

    def configure_optimizers_for_module(self, module_id, config=None) -> None:
        for name, params, lr in self.optimizer_groups(self._module[module_id].unwrapped(), config):
            self.register_optimizer(
                module_id=module_id, optimizer_name=name, optimizer=torch.optim.Adam(params), params=params, lr_or_lr_schedule=lr
            )

    def compute_loss_for_module(self, *, module_id, config, batch: dict[str, Any], fwd_out: dict[str, Any]) -> torch.Tensor:
        discount_B = config.gamma ** batch["n_step"] if "n_step" in batch else config.gamma
        return self._soft_actor_critic_losses(
            module_id, config, fwd_out, batch[Columns.REWARDS], batch[Columns.TERMINATEDS], discount_B
        )

    def _soft_actor_critic_losses(self, module_id, config, fwd_out, reward_next_B, terminated_next_B, discount_B) -> torch.Tensor:
        """Critic (TD target of Eq. 10/12) + actor (Eq. 11) + temperature losses, summed; metrics logged."""
        module = self._module[module_id].unwrapped()
        log_alpha = module.log_alpha
        alpha = log_alpha.exp().detach()
        target_entropy = float(self.target_entropy[module_id])

        target_B = self._td_target(config, fwd_out, reward_next_B, terminated_next_B, discount_B, alpha)
        critic_loss = losses.critic_loss(fwd_out[Q_PRED], target_B, kind=config.critic_loss)

        log_w_K1_B = fwd_out[LOG_W]
        entropy_B = self._entropy(log_w_K1_B, config)  # H~ of Eq. (6)/(7)
        cond_entropy_B = estimators.conditional_entropy(log_w_K1_B)
        actor_loss = losses.actor_loss(
            fwd_out[Q_PI], entropy_B, alpha=alpha, beta=config.beta, conditional_entropy_B=cond_entropy_B, beta_scale=config.beta_scale
        )  # Eq. (11)
        alpha_loss = losses.alpha_loss(log_alpha, entropy_B, target_entropy=target_entropy)

        self._log_smac_metrics(module_id, config, fwd_out, target_B, entropy_B, cond_entropy_B, critic_loss, actor_loss, alpha_loss, alpha)
        return critic_loss + actor_loss + alpha_loss

    def _td_target(self, config, fwd_out, reward_next_B, terminated_next_B, discount_B, alpha) -> torch.Tensor:
        """Soft TD target (Eq. 10 / 12). ``B`` may be (R, M): one target per belief particle (pixels, critic_particles="all")."""
        if config.resolved_td_entropy == "conditional":  # -log pi(a'|s'), one latent (Eq. 12, reference smac.py:153)
            entropy_next_B = estimators.conditional_entropy(fwd_out[LOG_W_NEXT])
        else:  # the marginal estimate at x' (Eq. 10)
            entropy_next_B = self._entropy(fwd_out[LOG_W_NEXT], config)
        return losses.td_target(
            reward_next_B, terminated_next_B, fwd_out[Q_NEXT_TARGET], entropy_next_B, alpha=alpha, discount_B=discount_B
        )  # Eq. (10)

    @staticmethod
    def _entropy(log_w_K1_B: torch.Tensor, config) -> torch.Tensor:
        return estimators.entropy_estimate(log_w_K1_B, config.estimator, mlmc_average_level0=config.mlmc_average_level0)

    def _log_smac_metrics(self, module_id, config, fwd_out, target_B, entropy_B, cond_entropy_B, critic_loss, actor_loss, alpha_loss, alpha):
        with torch.no_grad():
            q_pred_T2_B = fwd_out[Q_PRED]
            metrics = {
                "critic/loss": critic_loss,
                "critic/q_mean": q_pred_T2_B.mean(),
                "critic/q_max": q_pred_T2_B.max(),
                "critic/target_mean": target_B.mean(),
                "critic/td_error_abs": (q_pred_T2_B - target_B).abs().mean(),
                "actor/loss": actor_loss,
                "actor/q_pi": fwd_out[Q_PI].mean(),
                "actor/action_std": fwd_out[ACTION_LOG_STD].exp().mean(),
                "actor/gaussian_entropy_at_s0": gaussian_entropy(fwd_out[ACTION_LOG_STD]).mean(),
                "alpha/loss": alpha_loss,
                "alpha/value": alpha,
                "alpha/target_entropy": torch.tensor(float(self.target_entropy[module_id])),
                f"estimator/entropy_{config.estimator}": entropy_B.mean(),
                "estimator/conditional_entropy": cond_entropy_B.mean(),
                "estimator/num_particles": torch.tensor(float(config.num_particles)),
            }
            if config.estimator == "mlmc" and config.num_particles > 0:
                levels = estimators.mlmc_level_terms(fwd_out[LOG_W], average_level0=config.mlmc_average_level0)
                for level, delta_B in enumerate(levels):
                    metrics[f"estimator/mlmc_delta_level{level}"] = delta_B.mean()  # Eq. (7) residuals
        self.metrics.log_dict({k: v.detach().float().cpu().item() for k, v in metrics.items()}, key=module_id)

    # --- one backward, skip non-finite updates ----------------------------------------------------------
    def compute_gradients(self, loss_per_module, **kwargs):
        scaler = getattr(self, "_fp16_scaler", None)
        finite = [torch.isfinite(loss_per_module[mid]).all() for mid in loss_per_module if mid != ALL_MODULES]
        if scaler is not None:  # fp16: scale the loss; overflowing scaled gradients are the scaler's to skip
            loss_per_module = {mid: scaler.scale(loss) for mid, loss in loss_per_module.items()}
        grads = TorchLearner.compute_gradients(self, loss_per_module, **kwargs)  # single backward of the sum
        if scaler is None:
            finite += [torch.isfinite(g).all() for g in grads.values() if g is not None]
        self._skip_update = not bool(torch.stack(finite).all()) if finite else False
        self._consecutive_nonfinite = self._consecutive_nonfinite + 1 if self._skip_update else 0
        self.metrics.log_value("nonfinite_updates_skipped", int(self._skip_update), reduce="lifetime_sum")
        limit = self.config.max_consecutive_nonfinite_updates
        if self._skip_update and self._consecutive_nonfinite >= limit:
            raise NonFiniteUpdateError(
                f"{self._consecutive_nonfinite} consecutive SMAC updates had non-finite losses or gradients; "
                "stopping. Lower the learning rates, set grad_clip, or check the env's rewards "
                f"(limit: max_consecutive_nonfinite_updates={limit})"
            )
        return grads

    def apply_gradients(self, gradients_dict) -> None:
        if self._skip_update:
            return  # the weights and the optimizer moments stay as they were
        super().apply_gradients(gradients_dict)


class SMACPixelTorchLearner(SMACTorchLearner):
    """Alg. 2: world model (Eq. 13) + critic on belief features (Eq. 12) + actor over K particles (Eqs. 7, 9).

    ``autocast="fp16"`` (the reference's choice, ``visual_control/smac.py:104``) adds a ``torch.amp.GradScaler``:
    the loss is scaled before the one backward, every optimizer's gradients are unscaled before clipping, each
    optimizer steps through the scaler (skipped where its gradients overflowed) and the scale updates once.
    """

    def build(self) -> None:
        super().build()
        fp16 = self.config.autocast == "fp16"
        self._fp16_scaler = torch.amp.GradScaler(self._device.type if self._device is not None else "cpu") if fp16 else None

    def optimizer_groups(self, module, config) -> list[tuple[str, list, float]]:
        return [
            ("world_model", self.get_parameters(module.world_model), config.world_model_lr),
            ("critic", self.get_parameters(module.qf), config.critic_lr),
            ("actor", self.get_parameters(module.actor), config.actor_lr),  # pi(a|s) only (Alg. 2)
            ("alpha", [module.log_alpha], config.alpha_lr),
        ]

    def compute_loss_for_module(self, *, module_id, config, batch, fwd_out) -> torch.Tensor:
        from smac_rllib.algorithms.smac.pixel_rl_module import PARTICLE_SPREAD, REWARD_NEXT, TERMINATED_NEXT, WM_LOSS, WM_METRICS

        # Eq. (12): critic on belief features with the soft value of Eq. (10); entropy over belief particles (Eq. 7)
        actor_critic_alpha = self._soft_actor_critic_losses(
            module_id, config, fwd_out, fwd_out[REWARD_NEXT], fwd_out[TERMINATED_NEXT], config.gamma
        )
        self.metrics.log_dict(
            {k: float(v) for k, v in fwd_out[WM_METRICS].items()} | {"estimator/particle_feat_std": float(fwd_out[PARTICLE_SPREAD])},
            key=module_id,
        )
        return fwd_out[WM_LOSS] + actor_critic_alpha  # Eq. (13) trains the world model only (belief detached)

    def postprocess_gradients_for_module(self, *, module_id, config=None, module_gradients_dict):
        """Global-norm clip per optimizer at ``pixel_grad_clip`` (reference: 100 for model, actor and critic; not alpha)."""
        if self._fp16_scaler is not None:  # unscale in place (the dict holds the .grad tensors) before clipping
            for _, optimizer in self.get_optimizers_for_module(module_id):
                self._fp16_scaler.unscale_(optimizer)
        clip = config.grad_clip if config.grad_clip is not None else config.pixel_grad_clip
        if not clip:
            return dict(module_gradients_dict)
        clipped = {}
        for optimizer_name, optimizer in self.get_optimizers_for_module(module_id):
            grads = self.filter_param_dict_for_optimizer(param_dict=module_gradients_dict, optimizer=optimizer)
            if optimizer_name == "alpha":  # the reference clips model, critic and actor only (smac.py:166-168)
                clipped.update(grads)
                continue
            norm = self._get_clip_function()(grads, grad_clip=clip, grad_clip_by="global_norm")
            self.metrics.log_value((module_id, f"gradients/{optimizer_name}_global_norm"), float(norm), window=1)
            clipped.update(grads)
        return clipped

    def apply_gradients(self, gradients_dict) -> None:
        if self._fp16_scaler is None or self._skip_update:
            return super().apply_gradients(gradients_dict)
        for pid, grad in gradients_dict.items():
            self._params[pid].grad = grad
        for module_id, optimizer_names in self._module_optimizers.items():
            for optimizer_name in optimizer_names:
                self._fp16_scaler.step(self.get_optimizer(module_id, optimizer_name))  # skipped if it overflowed
            self.metrics.log_value((module_id, "gradients/fp16_loss_scale"), float(self._fp16_scaler.get_scale()), window=1)
        self._fp16_scaler.update()
