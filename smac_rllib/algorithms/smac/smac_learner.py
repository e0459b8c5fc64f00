"""SMAC's TorchLearner (Alg. 1): critic, actor and temperature losses, one backward, non-finite guard.

The math lives in ``smac_rllib.core.estimators`` and ``smac_rllib.objectives.losses``; this file only wires module outputs to
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

from smac_rllib.core.optim import adam, clip_global_norm_, nonfinite_flag, step_unless_nonfinite
from smac_rllib.objectives import losses
from smac_rllib.objectives.pixel_update import BATCH_KEYS
from smac_rllib.training.async_learner import AsyncLearnerMixin, td_discount
from smac_rllib.training.fast_update.captured_update import CaptureUnavailable, GraphedUpdate, compile_rssm_step, resolve_capture
from smac_rllib.training.fast_update.lean_update import LeanUpdateMixin
from smac_rllib.training.fast_update.switch import rllib_path


class NonFiniteUpdateError(FloatingPointError):
    pass


def nonfinite_gradients_flag(tensors: list[torch.Tensor]) -> torch.Tensor:
    """A bool 0-d tensor, True iff some entry of some tensor is inf or NaN (``smac_rllib.core.optim.nonfinite_flag``)."""
    return nonfinite_flag(tensors) > 0


class SMACTorchLearner(AsyncLearnerMixin, LeanUpdateMixin, SACTorchLearner):
    def build(self) -> None:
        super().build()
        self._found_inf = None  # this update's non-finite flag: a 0-d float tensor on the learner's device (1 = skip)
        self._nonfinite_streak = self._nonfinite_streak_max = None  # consecutive skipped updates, on the device

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
                module_id=module_id, optimizer_name=name, optimizer=adam(params), params=params, lr_or_lr_schedule=lr
            )

    def compute_loss_for_module(self, *, module_id, config, batch: dict[str, Any], fwd_out: dict[str, Any]) -> torch.Tensor:
        discount_B = td_discount(config, batch)
        return self._soft_actor_critic_losses(
            module_id, config, fwd_out, batch[Columns.REWARDS], batch[Columns.TERMINATEDS], discount_B
        )

    def _soft_actor_critic_losses(self, module_id, config, fwd_out, reward_next_B, terminated_next_B, discount_B) -> torch.Tensor:
        """Critic (TD target of Eq. 10/12) + actor (Eq. 11) + temperature losses (``smac_rllib.objectives.losses``), summed; metrics logged."""
        module = self._module[module_id].unwrapped()
        settings = losses.ObjectiveSettings.from_config(config)
        target_entropy = self._target_entropy_value(module_id)
        out = losses.soft_actor_critic_losses(
            fwd_out, reward_next_B, terminated_next_B, log_alpha=module.log_alpha, target_entropy=target_entropy,
            discount_B=discount_B, settings=settings,
        )
        metrics = losses.loss_metrics(fwd_out, out, target_entropy=target_entropy, num_particles=config.resolved_num_particles, settings=settings)
        self.device_metrics.log_dict(metrics, key=module_id)  # to the host once per period (async_learner.py)
        return out.critic + out.actor + out.alpha

    def _target_entropy_value(self, module_id) -> float:
        """RLlib keeps the target entropy as a tensor on the learner's device: read it on the host once, not per update."""
        cache = self.__dict__.setdefault("_target_entropy_floats", {})
        if module_id not in cache:
            cache[module_id] = float(self.target_entropy[module_id])
        return cache[module_id]

    # --- one backward, skip non-finite updates on the device ---------------------------------------------
    def compute_gradients(self, loss_per_module, **kwargs):
        scaler = getattr(self, "_fp16_scaler", None)
        checked = [loss_per_module[mid].detach().reshape(-1) for mid in loss_per_module if mid != ALL_MODULES]
        if scaler is not None:  # fp16: scale the loss; overflowing scaled gradients are the scaler's to skip
            loss_per_module = {mid: scaler.scale(loss) for mid, loss in loss_per_module.items()}
        grads = TorchLearner.compute_gradients(self, loss_per_module, **kwargs)  # single backward of the sum
        # the losses (a new tensor: the check's in-place x1 touches no graph) and, without fp16's scaler, the gradients
        tensors = ([torch.cat(checked).float()] if checked else []) + (
            [g for g in grads.values() if g is not None] if scaler is None else [])
        self._found_inf = nonfinite_flag(tensors) if tensors else None  # one op, no host sync
        if self._found_inf is not None:
            self._count_nonfinite(self._found_inf)
        return grads

    def _count_nonfinite(self, found_inf: torch.Tensor) -> None:
        """The skipped-update count and the longest streak of them, kept on the device; the streak is checked against
        ``max_consecutive_nonfinite_updates`` when the device metrics reach the host (``check_device_metrics``): after
        every update in the synchronous loop, once per reporting period in the asynchronous one (docs/design.md §8)."""
        if self._nonfinite_streak is None:
            self._nonfinite_streak = torch.zeros((), device=found_inf.device)
            self._nonfinite_streak_max = torch.zeros((), device=found_inf.device)
        self._nonfinite_streak = (self._nonfinite_streak + found_inf) * found_inf  # +1 while skipping, 0 after a step
        self._nonfinite_streak_max = torch.maximum(self._nonfinite_streak_max, self._nonfinite_streak)
        # under ALL_MODULES, as RLlib lays out learner results: learners/<module_id or __all_modules__>/...
        self.device_metrics.log((ALL_MODULES, "nonfinite_updates_skipped"), found_inf, reduce="lifetime_sum")
        self.device_metrics.watch("nonfinite_streak_max", self._nonfinite_streak_max)

    def check_device_metrics(self, watched: dict) -> None:
        streak = int(watched.get("nonfinite_streak_max", 0))
        if self._nonfinite_streak is not None:
            self._nonfinite_streak_max = self._nonfinite_streak.clone()  # the next period's longest streak starts here
        limit = self.config.max_consecutive_nonfinite_updates
        if streak > 0 and streak >= limit:
            raise NonFiniteUpdateError(
                f"{streak} consecutive SMAC updates had non-finite losses or gradients; "
                "stopping. Lower the learning rates, set grad_clip, or check the env's rewards "
                f"(limit: max_consecutive_nonfinite_updates={limit})"
            )

    @property
    def _skip_update(self) -> bool:
        """This update's flag on the host (a sync): for the paths that branch in Python (fp16's scaler, RLlib's own
        scaler / scheduler paths, SLAC's model-update count); the fused-Adam path skips on the device."""
        return self._found_inf is not None and bool(self._found_inf)

    def apply_gradients(self, gradients_dict) -> None:
        if (self._grad_scalers is not None or self._lr_scheduler_classes is not None) and self._skip_update:
            for scaler in (self._grad_scalers or {}).values():  # RLlib's own scaler path: skipped on the host, and the
                scaler.update(new_scale=scaler.get_scale() * scaler.get_backoff_factor())  # scale backs off, as its step would
            return
        super().apply_gradients(gradients_dict)

    def _step_optimizers(self, optimizers) -> None:
        """The lean path's steps: skipped on the device where this update was non-finite (``step_unless_nonfinite``)."""
        if self._found_inf is None:
            return super()._step_optimizers(optimizers)
        step_unless_nonfinite(optimizers, self._found_inf)


class SMACPixelTorchLearner(SMACTorchLearner):
    """Alg. 2: world model (Eq. 13) + critic on belief features (Eq. 12) + actor over K particles (Eqs. 7, 9).

    ``autocast="fp16"`` (the reference's choice, ``visual_control/smac.py:104``) adds a ``torch.amp.GradScaler``:
    the loss is scaled before the one backward, every optimizer's gradients are unscaled before clipping, each
    optimizer steps through the scaler (skipped where its gradients overflowed) and the scale updates once.
    """

    def build(self) -> None:
        super().build()
        fp16 = self.config.autocast == "fp16"
        device = self._device if self._device is not None else torch.device("cpu")
        self._fp16_scaler = torch.amp.GradScaler(device.type) if fp16 else None
        # "off": RLlib's update path below; a graph mode: ``PixelUpdate.step`` over this learner's own module and
        # optimizers, captured in one CUDA graph (smac_rllib/training/fast_update/captured_update.py) and replayed by ``_update``
        self._capture_mode = resolve_capture(self.config.learner_capture if self.fast_path else "off", device,
                                             autocast=self.config.autocast, num_learners=self.config.num_learners)
        if self._capture_mode != "off" and (self._lr_scheduler_classes is not None or self._grad_scalers is not None):
            raise CaptureUnavailable(f"learner_capture={self.config.learner_capture!r} bakes the learning rates into the "
                                     "graph and skips RLlib's grad scalers: drop the lr schedule / scaler, or use 'off'")
        if self._capture_mode != "off" and self.config.target_network_update_freq:  # also where "auto" resolved to a graph
            raise CaptureUnavailable(f"learner_capture={self.config.learner_capture!r} averages the target critics in "
                                     "every update; set target_network_update_freq: 0 or learner_capture: off")
        self._graphed: dict[str, GraphedUpdate] = {}

    # --- the captured update (learner_capture "graph" / "graph+compile") --------------------------------------
    def _update(self, batch, **kwargs):
        if self._capture_mode == "off":
            return super()._update(batch, **kwargs)
        self._compute_off_policyness(batch)
        loss_per_module = {mid: self._captured_update(mid, columns) for mid, columns in batch.items()}
        return {}, loss_per_module, {}

    def _captured_update(self, module_id, columns: dict) -> torch.Tensor:
        """One replay of this module's captured update; its metrics logged as RLlib's path logs them."""
        graphed = self._graphed.get(module_id)
        if graphed is None or not graphed.fits(columns):
            graphed = self._graphed[module_id] = self._make_graphed(module_id, columns)
        metrics = graphed.step(columns)
        found_inf, total = metrics.pop("nonfinite_update"), metrics.pop("total_loss")
        for name in [k for k in metrics if k.startswith("gradients/")]:
            self.device_metrics.log((module_id, name), metrics.pop(name), window=1)
        self.device_metrics.log_dict(metrics, key=module_id)
        self._count_nonfinite(found_inf)
        return total

    def _make_graphed(self, module_id, columns: dict) -> GraphedUpdate:
        from smac_rllib.objectives.pixel_update import OptimSettings, PixelUpdate

        config = self.config.get_config_for_module(module_id)
        module = self._module[module_id].unwrapped()
        module.train()
        clip = config.grad_clip if config.grad_clip is not None else config.pixel_grad_clip
        update = PixelUpdate.sharing(
            module, {name: self.get_optimizer(module_id, name) for name, _, _ in self.optimizer_groups(module, config)},
            objective=losses.ObjectiveSettings.from_config(config), target_entropy=self._target_entropy_value(module_id),
            optim=OptimSettings(config.world_model_lr, config.actor_lr, config.critic_lr, config.alpha_lr, clip or 0.0,
                                config.tau, config.gamma),
        )
        if self._capture_mode == "graph+compile":
            compile_rssm_step(module.world_model.rssm)
        use_graph = self._device is not None and self._device.type == "cuda"  # on the CPU: the same path, eagerly (tests)
        return GraphedUpdate(update.step, {k: columns[k] for k in BATCH_KEYS}, optimizers=list(update.optimizers.values()),
                             state_tensors=lambda: list(update.parameters()), use_graph=use_graph,
                             capture_guard=self._capture_guard)

    def _average_targets(self, module_id, module, tau: float) -> None:
        if self._capture_mode == "off":
            super()._average_targets(module_id, module, tau)  # captured: Polyak runs inside ``PixelUpdate.step``

    def set_state(self, *args, **kwargs):
        out = super().set_state(*args, **kwargs)
        self._invalidate_graphs()
        return out

    def add_module(self, *args, **kwargs):
        out = super().add_module(*args, **kwargs)
        self._invalidate_graphs()
        return out

    def remove_module(self, *args, **kwargs):
        out = super().remove_module(*args, **kwargs)
        self._invalidate_graphs()
        return out

    def _invalidate_graphs(self) -> None:
        """Tensors a graph points at were replaced (optimizer state, new optimizers): capture again (captured_update.py)."""
        for graphed in getattr(self, "_graphed", {}).values():
            graphed.invalidate()

    def optimizer_groups(self, module, config) -> list[tuple[str, list, float]]:
        return [
            ("world_model", self.get_parameters(module.world_model), config.world_model_lr),
            ("critic", self.get_parameters(module.qf), config.critic_lr),
            ("actor", self.get_parameters(module.actor), config.actor_lr),  # pi(a|s) only (Alg. 2)
            ("alpha", [module.log_alpha], config.alpha_lr),
        ]

    def compute_loss_for_module(self, *, module_id, config, batch, fwd_out) -> torch.Tensor:
        from smac_rllib.objectives.pixel_update import PARTICLE_SPREAD, REWARD_NEXT, TERMINATED_NEXT, WM_LOSS, WM_METRICS

        # Eq. (12): critic on belief features with the soft value of Eq. (10); entropy over belief particles (Eq. 7)
        actor_critic_alpha = self._soft_actor_critic_losses(
            module_id, config, fwd_out, fwd_out[REWARD_NEXT], fwd_out[TERMINATED_NEXT], config.gamma
        )
        self.device_metrics.log_dict(
            dict(fwd_out[WM_METRICS]) | {"estimator/particle_feat_std": fwd_out[PARTICLE_SPREAD]}, key=module_id
        )
        return fwd_out[WM_LOSS] + actor_critic_alpha  # Eq. (13) trains the world model only (belief detached)

    def postprocess_gradients_for_module(self, *, module_id, config=None, module_gradients_dict):
        """Global-norm clip per optimizer at ``pixel_grad_clip`` (reference: 100 for model, actor and critic; not alpha),
        by torch's foreach ops (``smac_rllib.core.optim.clip_global_norm_``: RLlib's ``clip_gradients`` math without its
        ``nan_to_num`` of an infinite norm, moot since such an update is skipped)."""
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
            norm = clip_global_norm_([g for g in grads.values() if g is not None], clip, self._device)  # foreach: ~2 kernels, not ~3 per tensor
            self.device_metrics.log((module_id, f"gradients/{optimizer_name}_global_norm"), norm, window=1)
            clipped.update(grads)
        return clipped

    def apply_gradients(self, gradients_dict) -> None:
        if self._fp16_scaler is not None and self._skip_update:
            self._fp16_scaler.update()  # the skipped update was unscaled: close its scaler step (and back off the scale)
            return
        if self._fp16_scaler is None or self._skip_update:
            return super().apply_gradients(gradients_dict)
        for pid, grad in gradients_dict.items():
            self._params[pid].grad = grad
        for module_id, optimizer_names in self._module_optimizers.items():
            for optimizer_name in optimizer_names:
                self._fp16_scaler.step(self.get_optimizer(module_id, optimizer_name))  # skipped if it overflowed
            self.device_metrics.log((module_id, "gradients/fp16_loss_scale"), self._fp16_scaler.get_scale(), window=1)
        self._fp16_scaler.update()


# the speed layer off (fast_update: false): the same learners on RLlib's own update path (training/fast_update/)
SMACTorchLearnerRLlibPath = rllib_path(SMACTorchLearner)
SMACPixelTorchLearnerRLlibPath = rllib_path(SMACPixelTorchLearner)
