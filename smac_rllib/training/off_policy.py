"""The off-policy loop every algorithm of the package runs (SMAC, its baselines): act, store, update, sync (Alg. 1's
outer loop).

RLlib's DQN/SAC ``training_step`` sets the update-to-data ratio through ``training_intensity`` and an
approximate "native ratio"; here it is explicit: ``updates_per_env_step`` gradient updates per new env step
(pytorch_sac: 1). Checkpoints include the replay buffer, which RLlib 2.60's new stack leaves out.

Two loops (docs/design.md §8): ``async_learning=True`` (the default) runs acting and learning at the same time
(``async_driver.AsyncDriver``: replay shards in the learners, an update thread, a samples-per-insert rate limiter
that keeps the same update count per env step); ``async_learning=False`` is the synchronous loop below (sample,
then update, then sync), step-by-step reproducible for a fixed seed.
"""

from __future__ import annotations

import functools
import json
import os
import time
from typing import Any

from ray.rllib.algorithms.algorithm_config import AlgorithmConfig
from ray.rllib.core.columns import Columns
from ray.rllib.execution.rollout_ops import synchronous_parallel_sample
from ray.rllib.policy.sample_batch import SampleBatch
from ray.rllib.utils.metrics import (
    ENV_RUNNER_RESULTS,
    ENV_RUNNER_SAMPLING_TIMER,
    LEARNER_RESULTS,
    LEARNER_UPDATE_TIMER,
    NUM_AGENT_STEPS_SAMPLED_LIFETIME,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    REPLAY_BUFFER_ADD_DATA_TIMER,
    REPLAY_BUFFER_SAMPLE_TIMER,
    SYNCH_WORKER_WEIGHTS_TIMER,
    TIMERS,
)

from smac_rllib.training.async_driver import AsyncDriver, split_by_shard
from smac_rllib.training.rate_limiter import SampleToInsertRatio
from smac_rllib.training.replay import make_replay, sample_train_batch


LIVE_PROGRESS_FILE = "progress_live.json"  # read by the CLI between results (smac_rllib/cli/progress.py)


class LiveProgress:
    """Progress inside a long iteration, written to ``<trial dir>/progress_live.json`` at most every
    ``SMAC_LIVE_PROGRESS_S`` seconds (default 30), from the first such period of an iteration on.

    Iterations of paper-size pixel runs on a CPU learner last many minutes; Tune reports only at their end.
    """

    def __init__(self, logdir: str | None):
        self.path = os.path.join(logdir, LIVE_PROGRESS_FILE) if logdir else None
        self.every_s = float(os.environ.get("SMAC_LIVE_PROGRESS_S", "30"))
        self.start_iteration(0)

    def start_iteration(self, iteration: int) -> None:
        self.iteration, self.started, self.last, self.base = iteration, time.time(), time.time(), None

    def maybe_write(self, *, updates_lifetime: int, planned_lifetime: int, env_steps: int) -> None:
        """``updates_lifetime``: updates done so far in the run; ``planned_lifetime``: what the steps stored grant."""
        if self.base is None:
            self.base = updates_lifetime  # the iteration's first call
        now = time.time()
        if self.path is None or now - self.last < self.every_s:
            return
        self.last = now
        elapsed, done = now - self.started, updates_lifetime - self.base
        record = {
            "time": now,
            "training_iteration": self.iteration,
            "elapsed_s": elapsed,
            "updates_done": done,
            "updates_planned": planned_lifetime - self.base,
            "s_per_update": elapsed / done if done else None,
            "env_steps_stored": env_steps,
            "updates_lifetime": updates_lifetime,
        }
        self._write(record)

    def maybe_write_evaluation(self, *, episodes_done: int, episodes_planned: int, started: float) -> None:
        """After each evaluation episode: ``episodes_done`` of ``episodes_planned``, ``started`` the evaluation's."""
        now = time.time()
        if self.path is None or now - self.last < self.every_s:
            return
        self.last = now
        self._write(
            {
                "time": now,
                "training_iteration": self.iteration,
                "phase": "evaluation",
                "elapsed_s": now - started,
                "episodes_done": episodes_done,
                "episodes_planned": episodes_planned,
            }
        )

    def _write(self, record: dict) -> None:
        tmp = f"{self.path}.tmp"
        try:
            with open(tmp, "w") as f:
                json.dump(record, f)
            os.replace(tmp, self.path)  # the CLI never reads half a file
        except OSError:
            self.path = None  # an unwritable trial dir: no live progress, training goes on


class OffPolicyLoop:
    """Mixin for an RLlib ``Algorithm`` with a replay buffer (``self.local_replay_buffer``)."""

    def setup(self, config: AlgorithmConfig) -> None:
        super().setup(config)
        self.env_steps_stored = 0  # agent steps added to the replay (the warm-up and learning start count these)
        self._updates_total = 0  # the synchronous loop's updates run (the async learners count their own)
        self.live_progress = LiveProgress(getattr(self, "logdir", None))
        self._async = None
        if getattr(config, "async_learning", False):
            self._async = AsyncDriver(self, make_limiter=self.make_update_rule)
            self.update_rule = self._async.limiter
        else:
            self.update_rule = self.make_update_rule(max_lead_env_steps=1)  # the synchronous loop never leads

    def make_update_rule(self, max_lead_env_steps: int) -> SampleToInsertRatio:
        """How many updates the stored env steps grant (``granted_updates``), the one rule of both loops: the
        synchronous loop runs exactly the new grant after each store, the async learners run up to it while the
        runners lead by at most ``max_lead_env_steps`` (rate_limiter.py). SLAC adds its model pretraining here."""
        return SampleToInsertRatio(
            updates_per_env_step=self.config.resolved("updates_per_env_step"),
            learning_starts=self.config.resolved("num_steps_sampled_before_learning_starts"),
            max_lead_env_steps=max_lead_env_steps,
        )

    def _create_local_replay_buffer_if_necessary(self, config: AlgorithmConfig):
        """States: our flat transition buffer (RLlib's episode buffer costs more than the update); pixels: RLlib's.

        Async with remote learners: none here, each learner holds its shard (a local learner shares this one).
        """
        if getattr(config, "async_learning", False) and config.num_learners > 0:
            return None
        return make_replay(config)

    def _run_one_training_iteration(self):
        self.live_progress.start_iteration(self.iteration + 1)
        return super()._run_one_training_iteration()

    def training_step(self) -> None:
        if self._async is not None:
            return self._training_step_async()
        learning_starts = self.update_rule.learning_starts
        # 1. Act: every env runner collects a fragment with the current (inference-only) policy, or, during the
        #    warm-up, exactly the missing number of uniform random steps (pytorch_sac's seed steps).
        with self.metrics.log_time((TIMERS, ENV_RUNNER_SAMPLING_TIMER)):
            if self.env_steps_stored < learning_starts and getattr(self.config, "random_actions_before_learning", True):
                episodes, env_runner_results = self._sample_warm_up(learning_starts - self.env_steps_stored)
            else:
                episodes, env_runner_results = synchronous_parallel_sample(
                    worker_set=self.env_runner_group,
                    concat=True,
                    sample_timeout_s=self.config.sample_timeout_s,
                    _uses_new_env_runners=True,
                    _return_metrics=True,
                )
        self.metrics.aggregate(env_runner_results, key=ENV_RUNNER_RESULTS)
        new_env_steps = sum(e.env_steps() for e in episodes)
        # 2. Store (without the env runners' recurrent state: it is recomputed from the frames).
        with self.metrics.log_time((TIMERS, REPLAY_BUFFER_ADD_DATA_TIMER)):
            for episode in episodes:
                episode.extra_model_outputs.pop(Columns.STATE_OUT, None)
            self.local_replay_buffer.add(episodes)
        self.env_steps_stored += new_env_steps
        self.metrics.log_value("num_env_steps_stored_lifetime", new_env_steps, reduce="lifetime_sum")
        lifetime_steps = self.metrics.peek((ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME), default=0)
        if self.env_steps_stored <= learning_starts:
            return  # no update before `learning_starts` steps are stored
        # 3. Learn: the updates the stored env steps grant, `updates_per_env_step` per env step stored after the
        #    warm-up (world model, critic, actor, alpha), less those already run (the async loop's rule: update_rule).
        num_updates = max(0, self.update_rule.granted_updates(self.env_steps_stored) - self._updates_total)
        for done in range(num_updates):
            self.live_progress.maybe_write(
                updates_lifetime=self._updates_total + done,
                planned_lifetime=self._updates_total + num_updates,
                env_steps=self.env_steps_stored,
            )
            with self.metrics.log_time((TIMERS, REPLAY_BUFFER_SAMPLE_TIMER)):
                train_data = self._sample_train_data()
            last = done == num_updates - 1
            with self.metrics.log_time((TIMERS, LEARNER_UPDATE_TIMER)):
                learner_results = self.learner_group.update(
                    **train_data,
                    timesteps={
                        NUM_ENV_STEPS_SAMPLED_LIFETIME: lifetime_steps,
                        NUM_AGENT_STEPS_SAMPLED_LIFETIME: lifetime_steps,
                    },
                    _no_metrics_reduce=not last,  # the learners reduce their metrics once per iteration, as async
                )
            if last:
                self.metrics.aggregate(learner_results, key=LEARNER_RESULTS)
        self.metrics.log_value("num_updates_lifetime", num_updates, reduce="lifetime_sum")
        self._updates_total += num_updates
        # 4. Sync the inference-only policy (encoder q + pi) to the env runners.
        if num_updates:
            with self.metrics.log_time((TIMERS, SYNCH_WORKER_WEIGHTS_TIMER)):
                self.env_runner_group.sync_weights(from_worker_or_learner_group=self.learner_group, inference_only=True)

    def _training_step_async(self) -> None:
        """The warm-up as in the synchronous loop (exact, uniform), then one iteration of ``AsyncDriver``."""
        driver = self._async
        if not driver.started:
            driver.start(self.local_replay_buffer)
        learning_starts = driver.limiter.learning_starts
        if self.env_steps_stored < learning_starts and getattr(self.config, "random_actions_before_learning", True):
            with self.metrics.log_time((TIMERS, ENV_RUNNER_SAMPLING_TIMER)):
                results, env_runner_results = self._sample_warm_up(
                    learning_starts - self.env_steps_stored, num_shards=len(driver.learner_ids)
                )
            self.metrics.aggregate(env_runner_results, key=ENV_RUNNER_RESULTS)
            for per_shard in results:
                driver.add(per_shard)
            return
        driver.run_iteration()

    def _sample_warm_up(self, missing_steps: int, num_shards: int | None = None) -> tuple[list, list]:
        """One sampling round of uniform random actions, never more than ``missing_steps`` agent steps in total.

        Each env runner samples ``min(its fragment, what is still missing)`` steps with its module's
        ``uniform_exploration`` flag set (stateful pixel modules keep filtering their belief), so the warm-up is
        exactly ``learning_starts`` steps for any number of runners and fragment size (with one env per runner;
        with n vectorized envs a runner may overshoot by < n, RLlib's ``sample(num_timesteps)`` contract).
        With ``num_shards`` (async) each runner returns its episodes split by learner shard, one dict per runner.
        """
        group = self.env_runner_group
        remote_ids = group.healthy_env_runner_ids() if group.num_remote_env_runners() else []
        if group.num_remote_env_runners() and not remote_ids:
            return [], []  # every runner is down: sample nothing, RLlib restores them (as synchronous_parallel_sample)
        fragment = self.config.get_rollout_fragment_length() * self.config.num_envs_per_env_runner
        quotas, left = [], missing_steps
        for _ in remote_ids or [None]:
            quotas.append(min(fragment, left))
            left -= quotas[-1]
        funcs = [functools.partial(_sample_uniform, num_timesteps=q, num_shards=num_shards) for q in quotas]
        if not remote_ids:
            results = [funcs[0](group.local_env_runner)]
        else:
            ids, funcs = zip(*[(i, f) for i, f, q in zip(remote_ids, funcs, quotas, strict=True) if q > 0], strict=True)
            results = group.foreach_env_runner(
                list(funcs),
                local_env_runner=False,
                remote_worker_ids=list(ids),
                timeout_seconds=self.config.sample_timeout_s,
            )
        if num_shards is not None:
            return [per_shard for per_shard, _ in results], [metrics for _, metrics in results]
        return [e for episodes, _ in results for e in episodes], [metrics for _, metrics in results]

    def _sample_train_data(self) -> dict[str, Any]:
        """Uniform transitions (states, a ready batch), or B x T sequences (pixels); neither needs the learner
        connector."""
        sample = sample_train_batch(
            self.local_replay_buffer, self.config, num_learners_served=max(self.config.num_learners, 1)
        )
        return {"batch": SampleBatch(sample).as_multi_agent()}

    # --- checkpoints include the replay buffer (RLlib 2.60's new stack leaves it out) -------------------
    # Async: learners quiesce first (every granted update done), so weights, replay and counters agree; the
    # replay is read from each learner's shard ("replay_shards"); episodes still in flight are not included.
    def get_state(self, components=None, *, not_components=None, **kwargs) -> dict[str, Any]:
        driver = self._async if self._async is not None and self._async.started else None
        if driver is not None:
            driver.quiesce()
        state = super().get_state(components, not_components=not_components, **kwargs)
        if self.config.store_buffer_in_checkpoints and self._check_component(
            "replay_buffer", components, not_components
        ):
            if driver is not None and self.local_replay_buffer is None:
                state["replay_shards"] = driver.replay_states()
            else:
                state["replay_buffer"] = self._replay_state_local()
        state["env_steps_stored"] = self.env_steps_stored  # also without the buffer: the warm-up is not repeated
        state["updates_done"] = driver.updates_done if driver is not None else self._updates_total
        return state

    def _replay_state_local(self) -> dict[str, Any]:
        learner = getattr(self.learner_group, "_learner", None)
        lock = getattr(learner, "_replay_lock", None)
        if lock is None:
            return self.local_replay_buffer.get_state()
        with lock:  # the local learner's stager samples this buffer
            return self.local_replay_buffer.get_state()

    def set_state(self, state: dict[str, Any]) -> None:
        driver = self._async
        if driver is not None:
            if driver.started:
                driver.quiesce()
            else:
                driver.start(self.local_replay_buffer)
        super().set_state(state)
        shards = state.get("replay_shards")
        if shards is None and "replay_buffer" in state:
            shards = [state["replay_buffer"]]
        if shards is not None:
            self._set_replay_shards(shards)
            self.env_steps_stored = self.replay_size()  # checkpoints older than the counter
        if "env_steps_stored" in state:
            self.env_steps_stored = state["env_steps_stored"]
        # checkpoints older than the count: every granted update had run when they were written (both loops)
        self._updates_total = state.get("updates_done", self.update_rule.granted_updates(self.env_steps_stored))
        if driver is not None:
            driver.restore_counters(self._updates_total)

    def _set_replay_shards(self, shards: list) -> None:
        if self.local_replay_buffer is not None:
            if len(shards) != 1:
                raise ValueError(
                    f"this checkpoint holds {len(shards)} replay shards (async_learning with "
                    f"num_learners={len(shards)}); restore it with num_learners={len(shards)} and async_learning=True"
                )
            self.local_replay_buffer.set_state(shards[0])
            return
        self._async.set_replay_states(shards)

    def replay_size(self) -> int:
        """Env steps in the replay, wherever it lives (the driver's buffer or the learners' shards)."""
        if self.local_replay_buffer is not None:
            return self.local_replay_buffer.get_num_timesteps()
        return sum(self._async.replay_sizes())

    def wait_for_granted_updates(self) -> None:
        """Async: block until the learners ran every update the stored env steps granted, so that the weights are
        those the synchronous loop would have now; a no-op in the synchronous loop (its updates run in the step)."""
        if self._async is not None and self._async.started:
            self._async.quiesce()

    def _evaluate_on_local_env_runner(self, env_runner):
        """RLlib's, with the evaluation episodes sampled one at a time (one env: the same fresh episodes) so that a
        long evaluation writes live progress between them, as training does (cli/live.py prints it)."""
        if getattr(env_runner, "num_envs", 1) != 1 or self.config.evaluation_duration_unit != "episodes":
            return super()._evaluate_on_local_env_runner(env_runner)
        sample, started = env_runner.sample, time.time()

        def one_at_a_time(*args, num_episodes=None, **kwargs):
            if args or not num_episodes or num_episodes <= 1:
                return sample(*args, num_episodes=num_episodes, **kwargs)
            episodes = []
            for done in range(1, num_episodes + 1):
                episodes += sample(num_episodes=1, **kwargs)
                self.live_progress.maybe_write_evaluation(
                    episodes_done=done, episodes_planned=num_episodes, started=started
                )
            return episodes

        env_runner.sample = one_at_a_time  # this call only: the instance attribute is removed below
        try:
            return super()._evaluate_on_local_env_runner(env_runner)
        finally:
            del env_runner.sample

    def _before_evaluate(self) -> None:
        """Async: the evaluated weights are those of every update the stored env steps granted (as in sync)."""
        self.wait_for_granted_updates()
        super()._before_evaluate()

    def update_stamps(self) -> list[int]:
        """Async: env steps stored when each of the (newest 100k) updates started, learner 0's (rate_limiter.py)."""
        return self._async.update_stamps()

    def stop(self) -> None:
        if self._async is not None and self._async.started:
            try:  # DDP: every replica finishes the same granted updates first (none waits in an all-reduce alone)
                self._async.stop_learners()
            except Exception:  # a learner already gone: nothing left to stop
                pass
        super().stop()


def _sample_uniform(env_runner, *, num_timesteps: int, num_shards: int | None = None) -> tuple[Any, dict]:
    """On an env runner: ``num_timesteps`` agent steps of uniform random actions in [-1, 1] (our envs' action box).

    Modules with a ``uniform_exploration`` flag (SMAC's) act uniformly but still run, so a recurrent belief is
    filtered through the warm-up; others (RLlib's SAC module) use RLlib's ``random_actions``.
    """
    flag = getattr(env_runner.module, "uniform_exploration", None)
    if flag is None:
        episodes = env_runner.sample(num_timesteps=num_timesteps, random_actions=True)
    else:
        flag.fill_(True)
        try:
            episodes = env_runner.sample(num_timesteps=num_timesteps, explore=True)
        finally:
            flag.fill_(False)
    if num_shards is not None:  # async: stripped and split by learner shard here, on the runner (async_driver.py)
        for episode in episodes:
            episode.extra_model_outputs.pop(Columns.STATE_OUT, None)
        return split_by_shard(env_runner, episodes, num_shards), env_runner.get_metrics()
    return episodes, env_runner.get_metrics()
