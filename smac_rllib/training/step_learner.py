"""The RLlib learner as a thin shell around one update function (docs/design.md §9).

A learner with ``StepLearnerMixin`` owns the module and its optimizers (RLlib's ``get_state`` / ``set_state``,
checkpoints, learning-rate schedules, metrics) and, per update and module, calls one function: the algorithm's
``step(batch, average_targets) -> metrics`` (``objectives/state_update.py: StateUpdate``, ``objectives/pixel_update.py:
PixelUpdate``, SLAC's and Dreamer's beside their learners). ``make_update(module_id)`` builds that object over the
module's own networks and the learner's own optimizers. ``learner_capture`` chooses only how the same function runs:
eagerly, or captured whole in one CUDA graph and replayed (``fast_update/captured_update.py``); nothing else differs.

The shell's part of an update: ``Learner.update`` cut to one replay batch (``update``), the columns as tensors on the
learner's device, whether the target networks are due (``target_network_update_freq``, as RLlib's DQN learner counts
it), the step's metrics into the device-metrics buffer, and the count of skipped (non-finite) updates with the stop
after ``max_consecutive_nonfinite_updates`` in a row. With ``num_learners >= 2`` the step averages the gradients over
the learners itself (``core/optim.py: all_reduce_mean_``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from ray.rllib.core.learner.torch.torch_learner import TorchLearner
from ray.rllib.core.rl_module.apis import TargetNetworkAPI
from ray.rllib.policy.sample_batch import MultiAgentBatch
from ray.rllib.utils.metrics import (
    ALL_MODULES,
    LAST_TARGET_UPDATE_TS,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    NUM_TARGET_UPDATES,
)

from smac_rllib.core.optim import adam
from smac_rllib.objectives.update_step import NONFINITE, TOTAL_LOSS
from smac_rllib.training.fast_update.captured_update import (
    CaptureUnavailable,
    GraphedUpdate,
    compile_rssm_step,
    resolve_capture,
)


class NonFiniteUpdateError(FloatingPointError):
    pass


class StepLearnerMixin:
    """Put between ``AsyncLearnerMixin`` and RLlib's learner:
    ``class L(AsyncLearnerMixin, StepLearnerMixin, SACTorchLearner)``.

    Subclasses define ``make_update(module_id)`` (an object with ``step(batch, average_targets=True) -> metrics``,
    ``optimizers`` and ``state_tensors()``) and, if the update can be captured in a CUDA graph, ``capture_keys`` (the
    batch columns it reads)."""

    capture_keys: tuple[str, ...] = ()  # empty: this learner's update always runs eagerly

    def build(self) -> None:
        super().build()
        device = self._device if self._device is not None else torch.device("cpu")
        mode = self.config.learner_capture if self.capture_keys else "off"
        self._capture_mode = resolve_capture(
            mode,
            device,
            autocast=getattr(self.config, "autocast", None),
            num_learners=self.config.num_learners,
            eager_only=self._lr_scheduler_classes is not None or bool(self.config.target_network_update_freq),
        )
        if self._grad_scalers is not None:
            raise CaptureUnavailable(
                "RLlib's _torch_grad_scaler_class is not used by this learner's update; drop it "
                "(pixel runs: autocast: fp16 brings its own GradScaler)"
            )
        if self._capture_mode != "off" and self._lr_scheduler_classes is not None:
            raise CaptureUnavailable(
                f"learner_capture={self.config.learner_capture!r} bakes the learning rates into the "
                "graph: drop the lr schedule, or use learner_capture: off"
            )
        if self._capture_mode != "off" and self.config.target_network_update_freq:
            raise CaptureUnavailable(
                f"learner_capture={self.config.learner_capture!r} averages the target networks in "
                "every update; set target_network_update_freq: 0 or learner_capture: off"
            )
        self._updates: dict[Any, Any] = {}  # module id -> its update (eager) or GraphedUpdate
        self._timestep = 0
        self._nonfinite_streak = self._nonfinite_streak_max = None  # consecutive skipped updates, on the device

    def make_update(self, module_id):
        raise NotImplementedError

    def compute_loss_for_module(self, *, module_id, config, batch, fwd_out):
        raise NotImplementedError("this learner's losses live in its one update (make_update), not in RLlib's hook")

    make_optimizer = staticmethod(adam)  # the learner's Adam (core/optim.py); baselines of torch's Adam say so

    def optimizer_groups(self, module, config) -> list[tuple[str, list, float]]:
        """(optimizer name, parameters, learning rate or schedule): one optimizer per component of the update."""
        raise NotImplementedError

    def configure_optimizers_for_module(self, module_id, config=None) -> None:
        """One optimizer per ``optimizer_groups`` entry, registered with RLlib (checkpoints, lr schedules)."""
        for name, params, lr in self.optimizer_groups(self._module[module_id].unwrapped(), config):
            self.register_optimizer(
                module_id=module_id,
                optimizer_name=name,
                optimizer=self.make_optimizer(params),
                params=params,
                lr_or_lr_schedule=lr,
            )

    def target_entropy_value(self, module_id) -> float:
        """RLlib keeps SAC's target entropy as a tensor on the learner's device: read it on the host once."""
        cache = self.__dict__.setdefault("_target_entropy_floats", {})
        if module_id not in cache:
            cache[module_id] = float(self.target_entropy[module_id])
        return cache[module_id]

    def module_optimizers(self, module_id) -> dict:
        """This module's optimizers by name, as registered (``configure_optimizers_for_module``)."""
        prefix = f"{module_id}_"  # RLlib registers "<module id>_<name>"
        return {full[len(prefix) :]: self._named_optimizers[full] for full in self._module_optimizers[module_id]}

    # --- the shell of one update ---------------------------------------------------------------------------
    def update(
        self,
        batch=None,
        batches=None,
        batch_refs=None,
        episodes=None,
        episodes_refs=None,
        data_iterators=None,
        training_data=None,
        *,
        timesteps: dict[str, Any] | None = None,
        num_total_minibatches: int = 0,
        num_epochs: int = 1,
        minibatch_size: int | None = None,
        shuffle_batch_per_epoch: bool = False,
        _no_metrics_reduce: bool = False,
        **kwargs,
    ):
        """``Learner.update`` for one ``MultiAgentBatch`` (a replay's), one epoch, no minibatches: the same metrics
        (steps trained, total loss, weights sequence number) without RLlib's per-call ``TrainingData`` wrapping,
        batch scans and Prometheus timers. Anything else goes to RLlib's ``update``, which calls the same
        ``_update``."""
        others = (batches, batch_refs, episodes, episodes_refs, data_iterators, training_data, minibatch_size)
        lean = (
            isinstance(batch, MultiAgentBatch)
            and all(x is None for x in others)
            and num_epochs == 1
            and num_total_minibatches == 0
            and not kwargs
            and all(mid in self.module and self.should_module_be_updated(mid, batch) for mid in batch.policy_batches)
        )
        if not lean:
            return super().update(
                batch=batch,
                batches=batches,
                batch_refs=batch_refs,
                episodes=episodes,
                episodes_refs=episodes_refs,
                data_iterators=data_iterators,
                training_data=training_data,
                timesteps=timesteps,
                num_total_minibatches=num_total_minibatches,
                num_epochs=num_epochs,
                minibatch_size=minibatch_size,
                shuffle_batch_per_epoch=shuffle_batch_per_epoch,
                _no_metrics_reduce=_no_metrics_reduce,
                **kwargs,
            )
        timesteps = timesteps or {}
        self.before_gradient_based_update(timesteps=timesteps)
        self._weights_seq_no += 1
        _, loss_per_module, _ = self._update(self._tensor_columns(batch))
        self._log_steps_trained_metrics(batch)
        for mid, loss in loss_per_module.items():
            self.metrics.log_value((mid, self.TOTAL_LOSS_KEY), loss, window=1)
        self.after_gradient_based_update(timesteps=timesteps)
        return None if _no_metrics_reduce else self.metrics.reduce()

    def before_gradient_based_update(self, *, timesteps: dict[str, Any]) -> None:
        super().before_gradient_based_update(timesteps=timesteps)
        self._timestep = timesteps.get(NUM_ENV_STEPS_SAMPLED_LIFETIME, 0)

    def _update(self, batch: dict[str, dict[str, torch.Tensor]], **kwargs):
        self._compute_off_policyness(batch)
        return {}, {mid: self._step_module(mid, columns) for mid, columns in batch.items()}, {}

    def _step_module(self, module_id, columns: dict[str, torch.Tensor]) -> torch.Tensor:
        """One call of this module's update; its metrics to the device buffer; returns the total loss (0-d)."""
        config = self.config.get_config_for_module(module_id)
        module = self.module[module_id].unwrapped()
        last_ts = getattr(self, "last_update_ts_by_mid", None)  # RLlib's DQN/SAC learners count target updates
        freq = getattr(config, "target_network_update_freq", 0) or 0
        due = isinstance(module, TargetNetworkAPI) and (last_ts is None or self._timestep - last_ts[module_id] >= freq)
        runner = self._updates.get(module_id)
        if runner is None or (isinstance(runner, GraphedUpdate) and not runner.fits(columns)):
            runner = self._updates[module_id] = self._make_runner(module_id, module, columns)
        metrics = (
            runner.step(columns) if isinstance(runner, GraphedUpdate) else runner.step(columns, average_targets=due)
        )
        if due and last_ts is not None:  # RLlib's DQN learner's target-update metrics
            self.metrics.log_value((module_id, NUM_TARGET_UPDATES), 1, reduce="lifetime_sum")
            self.last_update_ts_by_mid[module_id] = self._timestep
            self.metrics.log_value((module_id, LAST_TARGET_UPDATE_TS), self._timestep, reduce="max")
        found_inf, total = metrics.pop(NONFINITE, None), metrics.pop(TOTAL_LOSS)
        for name in [k for k in metrics if k.startswith("gradients/")]:
            self.device_metrics.log((module_id, name), metrics.pop(name), window=1)
        self.device_metrics.log_dict(metrics, key=module_id)
        if found_inf is not None:
            self._count_nonfinite(found_inf)
        return total

    def _make_runner(self, module_id, module, columns):
        module.train()
        update = self.make_update(module_id)
        if self._capture_mode == "off":
            return update
        if self._capture_mode == "graph+compile":
            compile_rssm_step(module.world_model.rssm)
        use_graph = (
            self._device is not None and self._device.type == "cuda"
        )  # on the CPU: the same path, eagerly (tests)
        return GraphedUpdate(
            update.step,
            {k: columns[k] for k in self.capture_keys},
            optimizers=list(update.optimizers.values()),
            state_tensors=update.state_tensors,
            use_graph=use_graph,
            capture_guard=self._capture_guard,
        )

    def _tensor_columns(self, batch: MultiAgentBatch) -> dict[str, dict[str, torch.Tensor]]:
        """``{module_id: {column: tensor on the learner's device}}``: RLlib's ``_convert_batch_type`` (``from_numpy``,
        float64 -> float32, ``.to(device)``) without its ``tree`` walk for the flat numpy batch a replay hands a CPU
        learner; tensors already on the device pass through; anything else goes to RLlib's."""
        cpu = self._device is None or self._device.type == "cpu"
        converted = {}
        for mid, policy_batch in batch.policy_batches.items():
            columns = {}
            for name, v in policy_batch.items():
                if (
                    isinstance(v, torch.Tensor)
                    and v.dtype != torch.float64
                    and (v.device == self._device or (cpu and v.device.type == "cpu"))
                ):
                    columns[name] = v
                elif cpu and isinstance(v, np.ndarray) and v.dtype.kind in "fiub":
                    t = torch.from_numpy(v) if v.flags.writeable else torch.from_numpy(v.copy())
                    columns[name] = t.float() if t.is_floating_point() and t.dtype != torch.float16 else t
                else:
                    return self._convert_batch_type(batch).policy_batches
            converted[mid] = columns
        return converted

    def after_gradient_based_update(self, *, timesteps: dict[str, Any]) -> None:
        # TorchLearner's (learning-rate schedules and their metrics), not DQNLearner's:
        # the targets were averaged in the step
        TorchLearner.after_gradient_based_update(self, timesteps=timesteps)

    # --- skipped updates -----------------------------------------------------------------------------------
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
        limit = getattr(self.config, "max_consecutive_nonfinite_updates", 100)
        if streak > 0 and streak >= limit:
            raise NonFiniteUpdateError(
                f"{streak} consecutive updates had non-finite losses or gradients; "
                "stopping. Lower the learning rates, set grad_clip, or check the env's rewards "
                f"(limit: max_consecutive_nonfinite_updates={limit})"
            )

    # --- tensors the updates point at were replaced: build them again ---------------------------------------
    def set_state(self, *args, **kwargs):
        out = super().set_state(*args, **kwargs)
        self.__dict__.get("_updates", {}).clear()
        return out

    def add_module(self, *args, **kwargs):
        out = super().add_module(*args, **kwargs)
        self.__dict__.get("_updates", {}).clear()
        return out

    def remove_module(self, *args, **kwargs):
        out = super().remove_module(*args, **kwargs)
        self.__dict__.get("_updates", {}).clear()
        return out
