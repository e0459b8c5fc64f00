"""The driver side of the asynchronous actor-learner (docs/design.md §8): orchestrate, never carry batches.

Env runners sample continuously: each healthy runner has one ``sample()`` request in flight whenever the rate
limiter (``smac_rllib/training/rate_limiter.py``) allows. A finished request's episodes go to one learner's replay
shard (round-robin over results; with a remote learner as an ObjectRef the runner put in the object store,
so the frames travel runner -> learner and never through this process). Every insert raises the update grant
of every learner to the synchronous loop's count (``granted_updates``): DDP replicas get the same grant, so they
run the same number of updates in lockstep. Updates run in each learner's own thread
(``smac_rllib/training/async_learner.py``); this loop only adds, grants, syncs weights every
``weight_sync_every_updates`` updates and collects metrics once per iteration.
"""

from __future__ import annotations

import time
from typing import Callable

import ray
from ray.rllib.core.columns import Columns
from ray.rllib.utils.actor_manager import FaultTolerantActorManager
from ray.rllib.utils.metrics import (
    ENV_RUNNER_RESULTS,
    LEARNER_RESULTS,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    SYNCH_WORKER_WEIGHTS_TIMER,
    TIMERS,
)

from smac_rllib.training.rate_limiter import SampleToInsertRatio, default_max_lead_env_steps

_TAG = "smac_async_sample"


def split_by_shard(env_runner, episodes: list, num_shards: int) -> dict[int, tuple[list, int]]:
    """{shard: (episode chunks, env steps)}: every chunk of an episode goes to the same learner shard.

    A sequence replay concatenates an episode's chunks, so they must not be spread over shards. Each env
    runner deals its new episodes round-robin, starting at its own index, so every shard gets data after
    the first few episodes (a DDP replica cannot update before its shard has any). The table lives on the
    runner, next to the episodes it continues.
    """
    table = env_runner.__dict__.setdefault("_smac_shard_of", {"next": getattr(env_runner, "worker_index", 0), "of": {}})
    out: dict[int, tuple[list, int]] = {}
    for episode in episodes:
        shard = table["of"].get(episode.id_)
        if shard is None:
            shard = table["of"][episode.id_] = table["next"] % num_shards
            table["next"] += 1
        if episode.is_done:
            table["of"].pop(episode.id_, None)
        chunks, steps = out.get(shard, ([], 0))
        chunks.append(episode)
        out[shard] = (chunks, steps + episode.env_steps())
    return out


def _sample_for_learner(env_runner, *, num_shards: int, to_object_store: bool) -> tuple[dict, dict]:
    """On an env runner: one fragment with the current policy, without the recurrent state (recomputed from
    frames), split by learner shard; each shard's chunks as one ObjectRef when the learners are remote."""
    episodes = env_runner.sample()
    for episode in episodes:
        episode.extra_model_outputs.pop(Columns.STATE_OUT, None)
    per_shard = split_by_shard(env_runner, episodes, num_shards)
    if to_object_store:  # in a list: handed on as a reference, resolved by the learner
        per_shard = {shard: ([ray.put(chunks)], steps) for shard, (chunks, steps) in per_shard.items()}
    return per_shard, env_runner.get_metrics()


def weight_sync_every_updates(config, updates_per_env_step: float, request_env_steps: int, num_runners: int) -> int:
    """``config.weight_sync_every_updates``, or the policy lag of the code we follow.

    Pixels: the reference acts with a policy refreshed every 500 agent steps (100 updates per 1000 frames at
    action repeat 2), so ``500 * updates_per_env_step`` updates. States: the synchronous loop's cadence (one
    sync per sampling round of every runner's fragment), ``updates_per_env_step * fragment * runners``.
    """
    every = getattr(config, "weight_sync_every_updates", None)
    if every is not None:
        return int(every)
    if getattr(config, "is_pixels", False):
        return max(1, round(500 * updates_per_env_step))
    return max(1, round(updates_per_env_step * request_env_steps * max(1, num_runners)))


def _evaluates_after(algo) -> bool:
    """Whether RLlib evaluates at the end of the iteration now running (``Algorithm.step``'s rule)."""
    interval = algo.config.evaluation_interval
    return bool(interval) and (algo.iteration + 1) % interval == 0


class AsyncDriver:
    """One per algorithm; ``run_iteration`` is called from ``training_step``."""

    def __init__(self, algo, *, make_limiter: Callable[[int], SampleToInsertRatio]):
        """``make_limiter(max_lead_env_steps)`` is the loop's update rule (``OffPolicyLoop.make_update_rule``) with
        the lead this driver allows: one rule, one count of updates per env step, for both loops."""
        self.algo = algo
        config = algo.config
        group = algo.env_runner_group
        self.num_runners = group.num_remote_env_runners()
        self.request_env_steps = config.get_rollout_fragment_length() * config.num_envs_per_env_runner
        lead = getattr(config, "async_max_lead_env_steps", None) or default_max_lead_env_steps(
            self.request_env_steps, self.num_runners
        )
        self.limiter = make_limiter(lead)
        self.sync_every = weight_sync_every_updates(
            config, self.limiter.updates_per_env_step, self.request_env_steps, self.num_runners
        )
        self.learner_ids = (
            [None] if algo.learner_group.is_local else list(algo.learner_group._worker_manager.actor_ids())
        )
        self.in_flight: dict[int, int] = {}  # runner id -> updates_done when its request was sent (weights' version)
        self.updates_done = 0  # the slowest learner's count
        self.granted = 0
        self.synced_at = 0  # updates_done at the last weight sync
        self.shard_steps = [0] * len(self.learner_ids)  # env steps each shard received
        self.lag_sum = self.lag_count = 0
        self.learner_busy_s_total = 0.0  # seconds inside updates (mean over learners), summed over the run
        self.started = False

    # --- set up -------------------------------------------------------------------------------------
    def start(self, replay_local) -> None:
        """Gives each learner its shard (a local learner shares ``replay_local``, the algorithm's buffer object)."""
        n = len(self.learner_ids)
        for shard, learner_id in enumerate(self.learner_ids):
            kwargs = {"replay": replay_local} if learner_id is None else {"shard_index": shard, "num_shards": n}
            self._call(learner_id, lambda learner, **kw: learner.async_attach_replay(**kw), **kwargs)
        self.started = True

    def _call(self, learner_id, func, **kwargs):
        group = self.algo.learner_group
        if learner_id is None:
            return func(group._learner, **kwargs)
        results = group._get_results(group.foreach_learner(func, remote_actor_ids=[learner_id], **kwargs))
        if not results:  # learners have no fault tolerance of their own (docs/design.md §3): the trial fails
            raise RuntimeError(f"learner actor {learner_id} is unhealthy; the run resumes from its last checkpoint")
        return results[0]

    def _call_all(self, func, **kwargs) -> list:
        group = self.algo.learner_group
        if group.is_local:
            return [func(group._learner, **kwargs)]
        return group._get_results(group.foreach_learner(func, **kwargs))

    # --- what the loop asks of the learners (checkpoints, restore, stop) ----------------------------
    def replay_states(self) -> list:
        """Every learner's replay shard, in learner order (a checkpoint's ``replay_shards``)."""
        return self._call_all(lambda learner: learner.async_replay_state())

    def set_replay_states(self, shards: list) -> None:
        """Each learner's shard from a checkpoint (as many shards as learners), and the driver's shard counts."""
        if len(shards) != len(self.learner_ids):
            raise ValueError(
                f"this checkpoint holds {len(shards)} replay shard(s) but the run has {len(self.learner_ids)} "
                f"learners; restore it with num_learners={len(shards) if len(shards) > 1 else 0}"
            )
        for learner_id, shard in zip(self.learner_ids, shards, strict=True):
            self._call(learner_id, lambda learner, **kw: learner.async_set_replay_state(**kw), state=shard)

    def replay_sizes(self) -> list[int]:
        """Env steps in each learner's shard."""
        return list(self._call_all(lambda learner: learner.async_replay_size()))

    def restore_counters(self, updates_done: int) -> None:
        """After a restore: the shard sizes, and every learner's and this driver's update count."""
        self.shard_steps = self.replay_sizes()
        self._call_all(lambda learner, **kw: learner.async_set_counters(**kw), updates_done=updates_done)
        self.updates_done = self.granted = self.synced_at = updates_done

    def update_stamps(self) -> list[int]:
        """Env steps stored when each of the (newest 100k) updates started, learner 0's, once every granted update
        ran."""
        self.quiesce()
        return self._call_all(lambda learner: learner.async_update_stamps())[0]

    def stop_learners(self) -> None:
        """Every granted update finished first (DDP: no replica waits in an all-reduce alone), then the threads stop."""
        self.quiesce()
        self._call_all(lambda learner: learner.async_stop())

    # --- inserting ----------------------------------------------------------------------------------
    def add(self, per_shard: dict[int, tuple[list, int]]) -> None:
        """Each shard's chunks to its learner, then every learner's grant to the synchronous loop's count.

        Chunks whose runner died before its learner fetched them are lost (a remote runner owns what it put in
        the object store) and not counted. No update is granted while a shard is still empty (its DDP replica
        could not join the all-reduce). All learners get the same grant, after the data it counts is stored.
        """
        algo = self.algo
        stored = 0
        for shard, (chunks, steps) in per_shard.items():
            kept = self._call(self.learner_ids[shard], lambda learner, **kw: learner.async_add(**kw), episodes=chunks)
            if kept:
                self.shard_steps[shard] += steps
                stored += steps
        algo.env_steps_stored += stored
        algo.metrics.log_value("num_env_steps_stored_lifetime", stored, reduce="lifetime_sum")
        self.granted = self.limiter.granted_updates(algo.env_steps_stored) if self.all_shards_filled() else 0
        lifetime = algo.metrics.peek((ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME), default=0)
        progress = self._call_all(
            lambda learner, **kw: learner.async_grant(**kw),
            granted_updates=self.granted,
            env_steps_stored=algo.env_steps_stored,
            env_steps_lifetime=lifetime,
        )
        self.updates_done = min(p["updates_done"] for p in progress)

    def all_shards_filled(self) -> bool:
        return all(steps > 0 for steps in self.shard_steps)

    def wait_learners(self, updates: int, timeout_s: float = 0.05) -> None:
        done = self._call_all(lambda learner, **kw: learner.async_wait(**kw), updates=updates, timeout_s=timeout_s)
        self.updates_done = min(p["updates_done"] for p in done)

    def quiesce(self) -> None:
        """Waits until every learner has run every update granted to it (before a checkpoint, an evaluation, a stop)."""
        while True:
            progress = self._call_all(
                lambda learner, **kw: learner.async_wait(**kw), updates=self.granted, timeout_s=1.0
            )
            self.updates_done = min(p["updates_done"] for p in progress)
            if all(p["updates_done"] >= p["granted"] for p in progress):
                return

    # --- one iteration ------------------------------------------------------------------------------
    def run_iteration(self) -> None:
        algo, config = self.algo, self.algo.config
        start, steps_at_start = time.perf_counter(), algo.env_steps_stored
        last_progress = start
        min_steps = config.min_sample_timesteps_per_iteration or 0
        min_time = config.min_time_s_per_iteration or 0
        while True:
            got = self._issue_requests()
            got += self._collect(timeout_s=0.05 if self.in_flight else 0.0)
            if got:
                last_progress = time.perf_counter()
            elif not self.in_flight:  # every runner waits for the learner (or none is healthy)
                if self.updates_done < self.granted:
                    self.wait_learners(self.updates_done + 1, timeout_s=0.05)
                else:
                    time.sleep(0.05)
            self._maybe_sync_weights()
            algo.live_progress.maybe_write(
                updates_lifetime=self.updates_done, planned_lifetime=self.granted, env_steps=algo.env_steps_stored
            )
            now = time.perf_counter()
            enough_steps = algo.env_steps_stored - steps_at_start >= max(min_steps, 1)
            if enough_steps and now - start >= min_time:
                break
            if now - max(start, last_progress) > (config.sample_timeout_s or 60.0):
                break  # no sample came back for sample_timeout_s: end the iteration, RLlib restores runners
        if _evaluates_after(algo):
            self.quiesce()  # an evaluated iteration reports (and evaluates) every update its env steps granted
        self._report()

    def _issue_requests(self) -> int:
        """Sends a sample request to every idle healthy runner the limiter allows; returns local samples consumed."""
        group = self.algo.env_runner_group
        if not self.num_runners:
            if not self._may_insert():
                return 0
            # the local env runner samples in this process; the learner thread overlaps it
            per_shard, metrics = _sample_for_learner(
                group.local_env_runner, num_shards=len(self.learner_ids), to_object_store=False
            )
            self._consume(per_shard, metrics, version=self.updates_done)
            return 1
        if any(not group._worker_manager.is_actor_healthy(i) for i in group._worker_manager.actor_ids()):
            self.algo.restore_env_runners(group)
        healthy = set(group.healthy_env_runner_ids())
        for runner_id in list(self.in_flight):
            if runner_id not in healthy:
                del self.in_flight[runner_id]  # its in-flight episodes are lost, nothing else
        to_store, num_shards = not self.algo.learner_group.is_local, len(self.learner_ids)
        for runner_id in sorted(healthy - set(self.in_flight)):
            if not self._may_insert():
                break
            sent = group.foreach_env_runner_async(
                lambda runner, s=to_store, n=num_shards: _sample_for_learner(runner, num_shards=n, to_object_store=s),
                tag=_TAG,
                remote_worker_ids=[runner_id],
            )
            if sent:
                self.in_flight[runner_id] = self.updates_done
        return 0

    def _may_insert(self) -> bool:
        if not self.all_shards_filled():
            return True  # no update can run before every shard has data: the runners must not wait for one
        return self.limiter.may_insert(
            env_steps_stored=self.algo.env_steps_stored,
            env_steps_in_flight=len(self.in_flight) * self.request_env_steps,
            request_env_steps=self.request_env_steps,
            updates_done=self.updates_done,
        )

    def _collect(self, timeout_s: float) -> int:
        if not self.in_flight:
            return 0
        group = self.algo.env_runner_group
        results = group._worker_manager.fetch_ready_async_reqs(tags=_TAG, timeout_seconds=timeout_s)
        FaultTolerantActorManager.handle_remote_call_result_errors(
            results, ignore_ray_errors=group._ignore_ray_errors_on_env_runners
        )
        got = 0
        for result in results:
            version = self.in_flight.pop(result.actor_id, self.updates_done)
            if result.ok:
                self._consume(*result.get(), version=version)
                got += 1
        return got

    def _consume(self, per_shard: dict, metrics: dict, *, version: int) -> None:
        self.algo.metrics.aggregate([metrics], key=ENV_RUNNER_RESULTS)
        self.add(per_shard)
        self.lag_sum += self.updates_done - version
        self.lag_count += 1

    def _maybe_sync_weights(self) -> None:
        if self.updates_done - self.synced_at < self.sync_every:
            return
        algo = self.algo
        with algo.metrics.log_time((TIMERS, SYNCH_WORKER_WEIGHTS_TIMER)):
            algo.env_runner_group.sync_weights(from_worker_or_learner_group=algo.learner_group, inference_only=True)
        self.synced_at = self.updates_done

    # --- metrics, once per iteration ----------------------------------------------------------------
    def _report(self) -> None:
        algo = self.algo
        outs = self._call_all(lambda learner: learner.async_results())
        self.updates_done = min(o["updates_done"] for o in outs)
        for out in outs[:1]:  # DDP replicas log the same losses; RLlib reports learner 0's too
            algo.metrics.aggregate([out["results"]], key=LEARNER_RESULTS)
        periods = [o["period"] for o in outs]
        new_updates = periods[0]["updates"]
        algo.metrics.log_value("num_updates_lifetime", new_updates, reduce="lifetime_sum")
        busy = sum(p["learner_busy_s"] for p in periods) / len(periods)
        self.learner_busy_s_total += busy
        wall = max(max(p["period_s"] for p in periods), 1e-9)
        staged = sum(p["staged_batches"] for p in periods)
        steps_after_warm_up = algo.env_steps_stored - self.limiter.learning_starts
        metrics = {
            "learner_utilization": busy / wall,
            "observed_updates_per_env_step": self.updates_done / steps_after_warm_up
            if steps_after_warm_up > 0
            else 0.0,
            "policy_lag_updates": self.lag_sum / self.lag_count if self.lag_count else 0.0,
            "staging_s_per_batch": sum(p["staging_s"] for p in periods) / staged if staged else 0.0,
            "updates_per_s": new_updates / wall,
        }
        for name, value in metrics.items():
            algo.metrics.log_value(("async", name), value, window=1)
        self.lag_sum = self.lag_count = 0
