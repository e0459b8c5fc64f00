"""A lean TorchLearner update: what RLlib does around forward, backward and the optimizer steps, cut to what SMAC needs.

Measured on the state learner (cProfile, K=0, batch 256, one CPU thread; docs/design.md §9): of ~34 ms per update,
forward + backward took ~22 ms, and besides the per-tensor Adam (~3.4 ms) RLlib added ~9 ms:

- ``TorchLearner.apply_gradients`` checks every gradient with ``torch.isfinite(g).all()`` twice, each a host sync
  (~1.7 ms). SMAC's learner already checks every loss and gradient once and skips a non-finite update as a whole
  (``SMACTorchLearner.compute_gradients``), so here the gradients are set and the optimizers stepped, nothing else.
- ``DQNLearner.after_gradient_based_update`` averages the target critics through ``state_dict()`` and
  ``load_state_dict()`` (~1.7 ms); here one ``torch._foreach_lerp_`` over cached parameter lists, the same
  ``target + tau (main - target)`` as ``PixelUpdate`` (and RLlib's ``tau main + (1 - tau) target`` up to rounding).

- ``Learner.update`` wraps one ``_update`` in a ``TrainingData`` object, a ``tree.map_structure`` scan of the
  batch for numpy arrays, a one-batch iterator, two slicing-flag passes and a Prometheus timer plus two Prometheus
  counters (Ray's dashboard metrics, ~0.5-1 ms per update together). ``update`` here takes the path a replay
  learner always takes (one ``MultiAgentBatch``, one epoch, no minibatches) straight to ``_update``, logging the
  same ``MetricsLogger`` values (steps trained, weights sequence number, total loss); anything else goes to
  RLlib's ``update`` unchanged. Left out: the Prometheus learner histogram and counters.
- Each ``MetricsLogger.log_value`` (~30 per update: steps trained, learning rates, target updates, the loss
  diagnostics) flattens its key with ``tree``, walks the nested stats dict twice and re-checks its keywords before
  the ``Stats.push`` it ends with. ``LeanMetricsLogger.log_value`` goes straight to the push once the key exists
  (the first call is RLlib's own); ``LeanMetricsMixin`` makes every learner's ``metrics`` one, so RLlib's own
  logging code (steps trained, learning rates) takes it too; ``_lean_tensor_columns`` converts a flat numpy batch
  without ``tree``; RLlib's
  ``postprocess_gradients`` regroups all gradients per optimizer even with no clipping to do, here they pass.
  ``tests/test_smac_components.py::test_lean_update_matches_rllibs_own_update`` holds all of it to RLlib's own
  methods and ``MetricsLogger``: the same weights, Adam moments, target critics and reduced metrics.

Put it after ``AsyncLearnerMixin`` and before RLlib's learner: ``class L(AsyncLearnerMixin, LeanUpdateMixin, SACTorchLearner)``.
Only for learners that skip non-finite updates themselves (SMAC's: on the device in ``_step_optimizers``, see smac_learner.py)
and say so in a ``_skip_update`` property. With ``fast_path`` False (switch.py) every method here hands over to RLlib's
own at this place in the method order, so the learner's own overrides above it still run.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from ray._common.deprecation import DEPRECATED_VALUE
from ray.rllib.core.learner.learner import Learner
from ray.rllib.core.learner.torch.torch_learner import TorchLearner
from ray.rllib.core.rl_module.apis import TargetNetworkAPI
from ray.rllib.policy.sample_batch import MultiAgentBatch
from ray.rllib.utils.metrics import LAST_TARGET_UPDATE_TS, NUM_ENV_STEPS_SAMPLED_LIFETIME, NUM_TARGET_UPDATES
from ray.rllib.utils.metrics.metrics_logger import MetricsLogger
from ray.rllib.utils.metrics.stats.base import StatsBase

_WARNED_EACH_CALL = frozenset({"clear_on_reduce", "throughput_ema_coeff", "reduce_per_index_on_aggregate"})  # if set


class LeanMetricsLogger(MetricsLogger):
    """RLlib's ``MetricsLogger`` whose ``log_value`` of a key already logged goes straight to its ``Stats`` object's
    ``push`` (what RLlib's ends with, after a ``tree.flatten`` of the key, two walks of the nested stats dict and its
    keyword checks, ~25 us each on one CPU thread). The first call for a key is RLlib's, which creates it: the
    keywords (reduce, window, ...) only matter then, as in RLlib's; deprecated ones (warned on every call) go to
    RLlib's too. Everything else is RLlib's logger."""

    def log_value(self, key, value, **kwargs) -> None:
        node = self.stats
        for k in (key,) if isinstance(key, str) else key:
            node = node.get(k) if isinstance(node, dict) else None
            if node is None:
                break
        if isinstance(node, StatsBase) and (_WARNED_EACH_CALL.isdisjoint(kwargs) or all(
                kwargs.get(k, DEPRECATED_VALUE) is DEPRECATED_VALUE for k in _WARNED_EACH_CALL)):  # log_dict passes them unset
            node.push(value)
        else:
            super().log_value(key, value, **kwargs)


class LeanMetricsMixin:
    """A learner whose ``metrics`` is a ``LeanMetricsLogger``: the ``MetricsLogger`` RLlib's ``Learner`` creates (in
    ``__init__`` and ``_reset``) becomes one as it is assigned. Any other logger is kept as given, and so is RLlib's
    when ``fast_path`` is False (switch.py)."""

    fast_path = True  # the speed layer's one flag: False on the ``...RLlibPath`` classes (switch.py)

    @property
    def metrics(self) -> MetricsLogger:
        return self.__dict__["metrics"]

    @metrics.setter
    def metrics(self, logger: MetricsLogger) -> None:
        if type(logger) is MetricsLogger and self.fast_path:
            logger.__class__ = LeanMetricsLogger  # a subclass with no state of its own
        self.__dict__["metrics"] = logger


class LeanUpdateMixin(LeanMetricsMixin):
    def update(self, batch=None, batches=None, batch_refs=None, episodes=None, episodes_refs=None, data_iterators=None,
               training_data=None, *, timesteps: dict[str, Any] | None = None, num_total_minibatches: int = 0,
               num_epochs: int = 1, minibatch_size: int | None = None, shuffle_batch_per_epoch: bool = False,
               _no_metrics_reduce: bool = False, **kwargs):
        """``Learner.update`` for one ``MultiAgentBatch`` (numpy or tensors), one epoch, no minibatching."""
        others = (batches, batch_refs, episodes, episodes_refs, data_iterators, training_data, minibatch_size)
        lean = (self.fast_path and isinstance(batch, MultiAgentBatch) and all(x is None for x in others) and num_epochs == 1
                and num_total_minibatches == 0 and not kwargs
                and all(mid in self.module and self.should_module_be_updated(mid, batch) for mid in batch.policy_batches))
        if not lean:
            return super().update(batch=batch, batches=batches, batch_refs=batch_refs, episodes=episodes,
                                  episodes_refs=episodes_refs, data_iterators=data_iterators, training_data=training_data,
                                  timesteps=timesteps, num_total_minibatches=num_total_minibatches, num_epochs=num_epochs,
                                  minibatch_size=minibatch_size, shuffle_batch_per_epoch=shuffle_batch_per_epoch,
                                  _no_metrics_reduce=_no_metrics_reduce, **kwargs)
        timesteps = timesteps or {}
        self.before_gradient_based_update(timesteps=timesteps)
        self._weights_seq_no += 1
        _, loss_per_module, _ = self._update(self._lean_tensor_columns(batch))
        self._log_steps_trained_metrics(batch)  # sizes and env steps: the same as the tensors' batch
        for mid, loss in loss_per_module.items():
            self.metrics.log_value((mid, self.TOTAL_LOSS_KEY), loss, window=1)
        self.after_gradient_based_update(timesteps=timesteps)
        if not _no_metrics_reduce:
            return self.metrics.reduce()
        return None

    def _lean_tensor_columns(self, batch: MultiAgentBatch) -> dict[str, dict[str, torch.Tensor]]:
        """``{module_id: {column: tensor on the learner's device}}``, what ``_update`` reads: RLlib's
        ``_convert_batch_type`` (``convert_to_torch_tensor``: ``from_numpy``, float64 -> float32, ``.to(device)``)
        without its ``tree`` walk or a new ``SampleBatch`` for the flat numpy batch a replay hands a CPU learner;
        tensors already on the device pass through; anything else goes to RLlib's."""
        cpu = self._device is None or self._device.type == "cpu"
        converted = {}
        for mid, policy_batch in batch.policy_batches.items():
            columns = {}
            for name, v in policy_batch.items():
                if isinstance(v, torch.Tensor) and v.dtype != torch.float64 and (v.device == self._device or (cpu and v.device.type == "cpu")):
                    columns[name] = v
                elif cpu and isinstance(v, np.ndarray) and v.dtype.kind in "fiub":
                    t = torch.from_numpy(v) if v.flags.writeable else torch.from_numpy(v.copy())
                    columns[name] = t.float() if t.is_floating_point() and t.dtype != torch.float16 else t
                else:
                    return self._convert_batch_type(batch).policy_batches
            converted[mid] = columns
        return converted

    def postprocess_gradients(self, gradients_dict):
        """RLlib's, which regroups the gradients per optimizer only to hand them to ``postprocess_gradients_for_module``;
        when that is RLlib's own and has nothing to do (no ``grad_clip``, no ``log_gradients``), they pass as they are."""
        if self.fast_path and type(self).postprocess_gradients_for_module is Learner.postprocess_gradients_for_module and all(
                (c := self.config.get_config_for_module(mid)).grad_clip is None and not c.log_gradients for mid in self.module.keys()):
            return {ref: g for ref, g in gradients_dict.items() if g is not None}  # as RLlib's per-optimizer filter
        return super().postprocess_gradients(gradients_dict)

    def apply_gradients(self, gradients_dict) -> None:
        if not self.fast_path:  # RLlib's (its per-gradient finite checks), for an update the learner found finite
            if not self._skip_update:
                super().apply_gradients(gradients_dict)
            return
        if self._grad_scalers is not None or self._lr_scheduler_classes is not None:
            return super().apply_gradients(gradients_dict)  # RLlib's scaler and scheduler paths, unchanged
        params = self._params
        for pid, grad in gradients_dict.items():  # finite: checked before (the update is skipped otherwise)
            param = params[pid]
            if param.grad is not grad:  # from backward they are the parameters' own: the setter's checks are skipped
                param.grad = grad
        self._step_optimizers([self.get_optimizer(module_id, optimizer_name)
                               for module_id, optimizer_names in self._module_optimizers.items() for optimizer_name in optimizer_names])

    def _step_optimizers(self, optimizers) -> None:
        for optimizer in optimizers:
            optimizer.step()

    def after_gradient_based_update(self, *, timesteps: dict[str, Any]) -> None:
        """``TorchLearner``'s (learning-rate schedules, the lr metrics) + Polyak averaging of every target network,
        as DQNLearner's (``target_network_update_freq``, the same metrics) but without the state-dict round trips."""
        if not self.fast_path:
            return super().after_gradient_based_update(timesteps=timesteps)  # DQNLearner's: through the state dicts
        TorchLearner.after_gradient_based_update(self, timesteps=timesteps)
        timestep = timesteps.get(NUM_ENV_STEPS_SAMPLED_LIFETIME, 0)
        for module_id, module in self.module._rl_modules.items():
            config = self.config.get_config_for_module(module_id)
            module = module.unwrapped()
            if not isinstance(module, TargetNetworkAPI) or timestep - self.last_update_ts_by_mid[module_id] < config.target_network_update_freq:
                continue
            self._average_targets(module_id, module, config.tau)
            self.metrics.log_value((module_id, NUM_TARGET_UPDATES), 1, reduce="lifetime_sum")
            self.last_update_ts_by_mid[module_id] = timestep
            self.metrics.log_value((module_id, LAST_TARGET_UPDATE_TS), timestep, reduce="max")

    def _average_targets(self, module_id, module, tau: float) -> None:
        targets, mains = self._target_param_lists(module_id, module)
        if targets:  # a module whose target-network list is empty (Dreamer's) has nothing to average
            with torch.no_grad():
                torch._foreach_lerp_(targets, mains, tau)  # target <- target + tau (main - target)

    def _target_param_lists(self, module_id, module) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        """(target tensors, main tensors) of every target pair: the parameters (the same objects for the module's
        life, so cached) and the floating buffers, re-read from their owners' ``_buffers`` through cached
        (owner, name) slots (``.to(device)`` replaces buffer objects, not the modules that hold them)."""
        cache = self.__dict__.setdefault("_lean_target_params", {})
        key = (module_id, id(module))
        if key not in cache:
            targets, mains, buffer_slots = [], [], []
            for main_net, target_net in module.get_target_network_pairs():
                main_params, target_params = dict(main_net.named_parameters()), dict(target_net.named_parameters())
                if main_params.keys() != target_params.keys():
                    raise ValueError(f"the target network of {module_id!r} does not match its main network")
                targets += [target_params[name] for name in main_params]
                mains += [main_params[name] for name in main_params]
                main_owners, seen = dict(main_net.named_modules()), set()
                for owner_name, target_owner in target_net.named_modules():
                    for name, buffer in target_owner._buffers.items():
                        if buffer is not None and buffer.is_floating_point() and id(buffer) not in seen:  # shared: once
                            seen.add(id(buffer))
                            buffer_slots.append((target_owner._buffers, main_owners[owner_name]._buffers, name))
            cache[key] = (targets, mains, buffer_slots)
        targets, mains, buffer_slots = cache[key]
        if not buffer_slots:
            return targets, mains
        return targets + [t[name] for t, _, name in buffer_slots], mains + [m[name] for _, m, name in buffer_slots]
