"""The learner side of the asynchronous actor-learner (docs/design.md §8): a replay shard and an update thread.

``AsyncLearnerMixin`` goes in front of a ``TorchLearner`` (SMAC's and the SAC baseline's). The driver
(``smac_rllib/training/async_driver.py``) hands it episodes and an update *grant*; a background thread runs
updates back to back while ``updates_done < granted`` (the rate limiter of ``smac_rllib/training/rate_limiter.py``),
a second thread samples and stages the next batch (pinned memory, ``non_blocking`` copy on a GPU) while the
current update runs. Batches never leave the learner's process; the driver only orchestrates.

Locks: ``_update_lock`` is held for one whole update, and by ``get_state``/``set_state`` (weight syncs and
checkpoints see weights between updates, never in the middle of one) and by ``async_results`` (the metrics
logger is not thread-safe). ``_replay_lock`` guards the shard against adding while the stager samples.

Per-update metrics are kept on the learner's device (``DeviceMetrics``) and moved to the host once per
reporting period (one transfer), so a GPU learner is not stalled by ~20 ``.item()`` calls per update.
"""

from __future__ import annotations

import collections
import importlib.util
import os
import queue
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import ray
import torch
from ray.rllib.policy.sample_batch import SampleBatch
from ray.rllib.utils.metrics import NUM_AGENT_STEPS_SAMPLED_LIFETIME, NUM_ENV_STEPS_SAMPLED_LIFETIME

from smac_rllib.training.cuda_settings import relax_seeded_cuda_settings
from smac_rllib.training.fast_update.device_metrics import DeviceMetrics
from smac_rllib.training.fast_update.metrics_logger import LeanMetricsMixin
from smac_rllib.training.replay import make_replay, sample_train_batch


class AsyncLearnerMixin(LeanMetricsMixin):
    """Put before a TorchLearner: ``class L(AsyncLearnerMixin, SACTorchLearner)``."""

    def build(self) -> None:
        super().build()
        relax_seeded_cuda_settings(self.config)
        if os.environ.get("SMAC_PROFILE_THREADS"):  # a profiling aid (sync and async loops), loaded only when asked for
            profiling_aids().start_stack_sampler(os.environ["SMAC_PROFILE_THREADS"])
        self._op_probe = _op_probe()  # SMAC_OP_PROBE's aids and value found or refused here, not after the warm-up
        self.device_metrics = DeviceMetrics()
        self._update_lock = threading.RLock()
        self._replay_lock = threading.Lock()
        self._capture_guard = threading.Lock()  # held by a CUDA-graph capture; the stager's pinned copies wait for it
        self._cond = threading.Condition()
        self._replay = None
        self._async = False  # True once the update thread runs (metrics flushed per period, not per update)
        self._granted = 0
        self._updates_done = 0
        self._env_steps_stored = 0  # the whole run's (all shards), as the driver last reported it
        self._env_steps_lifetime = 0
        self._stop = False
        self._error: BaseException | None = None
        self._threads: list[threading.Thread] = []
        self._staged: queue.Queue = queue.Queue(maxsize=1)
        # env steps stored when each update started (the newest 100k): the rate limiter's record (rate_limiter.py)
        self._stamps: collections.deque = collections.deque(maxlen=100_000)
        self._reset_period()

    def _reset_period(self) -> None:
        self._period_start = time.perf_counter()
        self._busy_s = 0.0
        self._staging_s = 0.0
        self._staged_batches = 0
        self._period_updates = 0

    # --- the synchronous loop: flush the device metrics after every update ----------
    def after_gradient_based_update(self, *, timesteps: dict[str, Any]) -> None:
        super().after_gradient_based_update(timesteps=timesteps)
        if not self._async:
            self.flush_device_metrics()

    def flush_device_metrics(self) -> None:
        """The device metrics to the host (one transfer) and into RLlib's logger; then the learner's checks of the
        watched values (``check_device_metrics``)."""
        self.check_device_metrics(self.device_metrics.flush(self.metrics))

    def check_device_metrics(self, watched: dict) -> None:
        """The learner's checks of watched device values (``StepLearnerMixin``'s non-finite streak), where it has
        any."""
        parent = getattr(super(), "check_device_metrics", None)
        if parent is not None:
            parent(watched)

    # --- weights and optimizer state are read and written between updates only -----------------------
    def get_state(self, *args, **kwargs):
        with self._update_lock:
            return super().get_state(*args, **kwargs)

    def set_state(self, *args, **kwargs):
        with self._update_lock:
            return super().set_state(*args, **kwargs)

    # --- called by the driver (``foreach_learner``) ---------------------------------------------------
    def async_attach_replay(self, replay=None, *, shard_index: int = 0, num_shards: int = 1) -> None:
        """Uses ``replay`` (a local learner shares the driver's buffer object) or builds this learner's shard."""
        self._replay = (
            replay if replay is not None else make_replay(self.config, shard_index=shard_index, num_shards=num_shards)
        )

    def async_add(self, episodes) -> bool:
        """Adds episode chunks (or an ObjectRef of them) to the shard; False if their runner died first (lost)."""
        if isinstance(episodes, list) and len(episodes) == 1 and _is_ref(episodes[0]):
            episodes = episodes[0]
        if _is_ref(episodes):
            try:
                episodes = ray.get(episodes)
            except ray.exceptions.RayError:  # the owning runner died: its in-flight fragment is lost, nothing else
                return False
        with self._replay_lock:
            self._replay.add(episodes)
        return True

    def async_grant(self, *, granted_updates: int, env_steps_stored: int, env_steps_lifetime: int) -> dict:
        """Raises the update grant (the rate limiter's); starts the update and staging threads once."""
        with self._cond:
            self._granted = max(self._granted, granted_updates)
            self._env_steps_stored = env_steps_stored
            self._env_steps_lifetime = env_steps_lifetime
            self._cond.notify_all()
        if self._granted > self._updates_done and not self._threads:
            self._start_threads()
        return self.async_progress()

    def async_progress(self) -> dict:
        """Counters the driver's rate limiter needs; re-raises an error of the update thread."""
        if self._error is not None:
            raise self._error
        return {"updates_done": self._updates_done, "granted": self._granted}

    def async_wait(self, updates: int, timeout_s: float | None = None) -> dict:
        """Blocks until ``updates`` updates are done (or the thread failed): the driver's quiesce before a
        checkpoint."""
        with self._cond:
            self._cond.wait_for(
                lambda: self._updates_done >= min(updates, self._granted) or self._error is not None, timeout_s
            )
        return self.async_progress()

    def async_results(self) -> dict:
        """This period's learner results (RLlib's reduced metrics) and the asynchronous loop's own metrics (busy time,
        staging, updates)."""
        with self._update_lock:
            self.flush_device_metrics()
            wall_s = time.perf_counter() - self._period_start
            period = {
                "learner_busy_s": self._busy_s,
                "period_s": wall_s,
                "updates": self._period_updates,
                "staging_s": self._staging_s,
                "staged_batches": self._staged_batches,
            }
            self._reset_period()
            results = self.metrics.reduce()
        return {"results": results, "period": period, **self.async_progress()}

    def async_update_stamps(self) -> list[int]:
        with self._cond:
            return list(self._stamps)

    def async_replay_state(self) -> dict:
        with self._replay_lock:
            return self._replay.get_state()

    def async_set_replay_state(self, state: dict) -> None:
        with self._replay_lock:
            self._replay.set_state(state)

    def async_replay_size(self) -> int:
        with self._replay_lock:
            return self._replay.get_num_timesteps()

    def async_set_counters(self, *, updates_done: int) -> None:
        """After a restore: the grant and the updates done continue from the checkpoint's count."""
        with self._cond:
            self._updates_done = self._granted = updates_done

    def async_stop(self) -> None:
        with self._cond:
            self._stop = True
            self._cond.notify_all()
        for thread in self._threads:
            thread.join(timeout=60)
        self._threads = []

    # --- the two threads ----------------------------------------------------------------------------
    def _copy_stream(self):
        """A side CUDA stream for host -> device copies (None on CPU), so a copy overlaps the running update."""
        if self._device is None or self._device.type != "cuda":
            return None
        if getattr(self, "_side_stream", None) is None:
            self._side_stream = torch.cuda.Stream(self._device)
        return self._side_stream

    def _start_threads(self) -> None:
        self._async = True
        self._stop = False
        self._threads = [
            threading.Thread(target=self._guarded, args=(self._stage_loop,), name="smac-stager", daemon=True),
            threading.Thread(target=self._guarded, args=(self._update_loop,), name="smac-learner", daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def _guarded(self, loop) -> None:
        try:
            loop()
        except BaseException as e:  # surfaces on the driver's next call (async_progress)
            with self._cond:
                self._error = self._error or e
                self._stop = True
                self._cond.notify_all()

    def _update_loop(self) -> None:
        probe = self._op_probe  # None unless SMAC_OP_PROBE=<n> (profiling_aids): nothing on the hot path
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._stop or self._updates_done < self._granted)
                if self._stop:
                    return
                stored, lifetime = self._env_steps_stored, self._env_steps_lifetime
            staged = self._next_staged()
            if staged is None:
                return
            batch, copied = staged
            if copied is not None:  # the batch was copied on the side stream: order it before this update's kernels
                stream = torch.cuda.current_stream(self._device)
                stream.wait_event(copied)
                for column in batch.policy_batches[next(iter(batch.policy_batches))].values():
                    column.record_stream(stream)
            with self._update_lock:
                start = time.perf_counter()
                self.update(
                    batch=batch,
                    timesteps={NUM_ENV_STEPS_SAMPLED_LIFETIME: lifetime, NUM_AGENT_STEPS_SAMPLED_LIFETIME: lifetime},
                    _no_metrics_reduce=True,
                )
                self._busy_s += time.perf_counter() - start
                self._period_updates += 1
                self._stamps.append(stored)
            with self._cond:
                self._updates_done += 1
                self._cond.notify_all()
            if probe is not None:
                probe(self._device, self._updates_done)

    def _next_staged(self):
        while True:
            try:
                return self._staged.get(timeout=0.5)
            except queue.Empty:
                if self._stop:
                    return None

    def _stage_loop(self) -> None:
        """Samples the next batch and copies it to the learner's device while the current update runs."""
        while not self._stop:
            with self._replay_lock:
                empty = self._replay.get_num_timesteps() == 0  # a DDP shard may get its first episodes later
                columns = None if empty else sample_train_batch(self._replay, self.config, num_learners_served=1)
            if columns is None:
                time.sleep(0.01)
                continue
            start = time.perf_counter()
            with self._capture_guard:  # no pinned-memory allocation while a CUDA graph is captured (captured_update.py)
                tensors, copied = _to_device(columns, self._device, self._copy_stream())
            batch = SampleBatch(tensors).as_multi_agent()
            self._staging_s += time.perf_counter() - start
            self._staged_batches += 1
            while not self._stop:
                try:
                    self._staged.put((batch, copied), timeout=0.5)
                    break
                except queue.Full:
                    continue


PROFILING_AIDS = Path(__file__).resolve().parents[2] / "benchmarks" / "stack_sampler.py"  # in a source checkout
_PROFILING_AIDS_LOCK = threading.Lock()


def profiling_aids():
    """The profiling aids (``benchmarks/stack_sampler.py``: a thread-stack sampler and an op probe), which are not part
    of the package: loaded once per process from ``SMAC_PROFILING_AIDS=<path>`` if set, else from the source checkout
    this package runs from, and only when ``SMAC_PROFILE_THREADS`` or ``SMAC_OP_PROBE`` asks for them (the learner's
    ``build``; the op probe runs in the asynchronous update thread only; benchmarks/results/gpu/README.md)."""
    with _PROFILING_AIDS_LOCK:
        module = sys.modules.get("smac_profiling_aids")
        if module is not None:
            return module
        path = Path(os.environ.get("SMAC_PROFILING_AIDS") or PROFILING_AIDS)
        if not path.is_file() or path.suffix != ".py":
            raise RuntimeError(
                f"SMAC_PROFILE_THREADS / SMAC_OP_PROBE need the profiling aids at {path} (a source checkout "
                "installed with pip install -e, or SMAC_PROFILING_AIDS=<absolute path to "
                "benchmarks/stack_sampler.py>); unset them to run without"
            )
        spec = importlib.util.spec_from_file_location("smac_profiling_aids", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[spec.name] = module  # only once whole: a failed load leaves nothing behind
        return module


def _op_probe():
    """The op probe of the profiling aids as ``probe(device, updates_done)`` when ``SMAC_OP_PROBE=<n>`` is set, else
    None (the aids are then never loaded)."""
    if os.environ.get("SMAC_OP_PROBE", "0") == "0":
        return None
    aids = profiling_aids()
    every = aids.op_probe_every()
    return (lambda device, updates_done: aids.maybe_op_probe(device, updates_done, every)) if every else None


def _to_device(columns: dict[str, np.ndarray], device, stream) -> tuple[dict[str, torch.Tensor], Any]:
    """numpy -> torch on the learner's device; on a GPU via pinned memory and a non-blocking copy on ``stream``.

    Returns the tensors and the CUDA event that marks the copy's end (None on CPU).
    """
    tensors = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in columns.items()}
    if stream is None:
        return tensors, None
    with torch.cuda.stream(stream):
        tensors = {k: v.pin_memory().to(device, non_blocking=True) for k, v in tensors.items()}
        copied = torch.cuda.Event()
        copied.record(stream)
    return tensors, copied


def _is_ref(value) -> bool:
    return isinstance(value, ray.ObjectRef)
