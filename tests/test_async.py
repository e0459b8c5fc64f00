"""The asynchronous actor-learner (docs/design.md §8): rate limiter, learner-side replay, faults, DDP shards.

Pure tests check the rate limiter's arithmetic and its window bound in a simulation; integration tests run real
RLlib env runners and learners on dm_control and check the ratio, a remote learner's training and checkpoint, and
DDP shards. A killed env runner is checked in tests/test_cluster.py (killed during an iteration, on a real 2-node
Ray cluster).
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
import torch
from ray.rllib.core import DEFAULT_MODULE_ID
from ray.rllib.utils.metrics.metrics_logger import MetricsLogger

from smac_rllib.algorithms import SACBaselineConfig, SMACConfig
from smac_rllib.training.fast_update.device_metrics import DeviceMetrics
from smac_rllib.training.rate_limiter import SampleToInsertRatio, default_max_lead_env_steps, windowed_ratio_errors

ENV = "dmc/cartpole-balance"


# --- the rate limiter, pure -------------------------------------------------------------------------
def test_granted_updates_equal_the_synchronous_loops_count_for_any_chunking():
    """The sync loop accumulates ratio * (steps after warm-up) as fractional credit; the grant is its floor."""
    rng = random.Random(0)
    for ratio in (1.0, 0.2, 0.25, 0.1, 2.0, 1 / 3):
        limiter = SampleToInsertRatio(ratio, learning_starts=100, max_lead_env_steps=10)
        stored, credit, updates = 0, 0.0, 0
        for _ in range(300):
            chunk = rng.randint(1, 70)
            before, stored = stored, stored + chunk
            if stored > 100:
                credit += (stored - max(before, 100)) * ratio
                n, credit = int(credit), credit % 1.0
                updates += n
            assert abs(limiter.granted_updates(stored) - updates) <= 1, (ratio, stored)
            assert limiter.granted_updates(stored) == math.floor(ratio * max(0, stored - 100) + 1e-9)


def test_may_insert_blocks_only_the_side_that_runs_ahead():
    limiter = SampleToInsertRatio(0.5, learning_starts=100, max_lead_env_steps=40)
    kw = dict(env_steps_in_flight=0, request_env_steps=10)
    assert limiter.may_insert(env_steps_stored=50, updates_done=0, **kw)  # warm-up never waits
    assert limiter.may_insert(env_steps_stored=120, updates_done=0, **kw)  # backlog 15 <= 20 updates
    assert not limiter.may_insert(env_steps_stored=140, updates_done=0, **kw)  # backlog 25 > 20
    assert limiter.may_insert(env_steps_stored=140, updates_done=5, **kw)
    assert not limiter.may_insert(env_steps_stored=120, updates_done=0, env_steps_in_flight=20, request_env_steps=10)


def test_runners_never_wait_for_a_learner_with_nothing_granted():
    """Ratio 0.02 (one update per 50 env steps) with a lead of 40 env steps: at 290 stored after a 250-step warm-up
    no update is granted yet, and a 20-step request would grant one past the lead; waiting would be forever."""
    limiter = SampleToInsertRatio(0.02, learning_starts=250, max_lead_env_steps=40)
    assert limiter.granted_updates(290) == 0
    assert limiter.may_insert(env_steps_stored=290, env_steps_in_flight=0, request_env_steps=20, updates_done=0)
    assert not limiter.may_insert(env_steps_stored=290, env_steps_in_flight=20, request_env_steps=20, updates_done=0)
    stamps, _ = _simulate(
        update_s=0.02, step_s=0.002, ratio=0.02, runners=1, request=20, learning_starts=250, total=5_000
    )
    assert len(stamps) == limiter.granted_updates(5_000) == 95


def _simulate(
    *, update_s: float, step_s: float, ratio: float, runners: int, request: int, learning_starts: int, total: int
):
    """Event simulation of runners (one request each in flight) and one learner under the limiter."""
    lead = default_max_lead_env_steps(request, runners)
    limiter = SampleToInsertRatio(ratio, learning_starts, lead)
    now, stored, updates_done, stamps = 0.0, 0, 0, []
    runner_done_at = [None] * runners
    learner_free_at = 0.0
    while stored < total:
        for r in range(runners):  # issue requests the limiter allows
            in_flight = sum(t is not None for t in runner_done_at) * request
            if runner_done_at[r] is None and limiter.may_insert(
                env_steps_stored=stored,
                env_steps_in_flight=in_flight,
                request_env_steps=request,
                updates_done=updates_done,
            ):
                runner_done_at[r] = now + request * step_s
        next_sample = min((t for t in runner_done_at if t is not None), default=math.inf)
        can_update = updates_done < limiter.granted_updates(stored)
        next_update = max(now, learner_free_at) + update_s if can_update else math.inf
        assert min(next_sample, next_update) < math.inf, f"deadlock at {stored} env steps, {updates_done} updates"
        if next_update <= next_sample:
            now = next_update
            stamps.append(stored)
            updates_done += 1
            learner_free_at = now
        else:
            now = next_sample
            r = runner_done_at.index(next_sample)
            runner_done_at[r] = None
            stored += request
    while updates_done < limiter.granted_updates(stored):  # the learner catches up (checkpoint quiesce)
        stamps.append(stored)
        updates_done += 1
    return stamps, lead


@pytest.mark.parametrize("update_s", [0.02, 0.0002], ids=["slow_learner", "fast_learner"])
def test_simulated_ratio_stays_within_the_window_bound(update_s):
    stamps, lead = _simulate(
        update_s=update_s, step_s=0.002, ratio=1.0, runners=2, request=10, learning_starts=500, total=12_000
    )
    errors = windowed_ratio_errors(stamps, ratio=1.0, learning_starts=500, window=1000, total_env_steps=12_000)
    assert len(errors) >= 10
    assert max(abs(e) for e in errors) <= lead / 1000 + 1 / 1000 + 1e-9  # the documented bound: lead / W (+ rounding)
    assert max(abs(e) for e in errors) <= 0.05


# --- device metrics ---------------------------------------------------------------------------------
def test_device_metrics_flush_logs_what_direct_logging_logs():
    direct, deferred, buffer = MetricsLogger(), MetricsLogger(), DeviceMetrics()
    rng = np.random.default_rng(0)
    for _ in range(25):
        values = {"critic/loss": torch.tensor(rng.normal()), "alpha/value": torch.tensor(rng.random())}
        direct.log_dict({k: float(v) for k, v in values.items()}, key="m")
        direct.log_value(("m", "norm"), 3.0, window=1)
        buffer.log_dict(values, key="m")
        buffer.log(("m", "norm"), torch.tensor(3.0), window=1)
    buffer.flush(deferred)
    a, b = direct.reduce(), deferred.reduce()
    for key in ("critic/loss", "alpha/value", "norm"):
        assert a["m"][key].peek() == pytest.approx(b["m"][key].peek(), rel=1e-6), key


# --- integration: real env runners and learners ------------------------------------------------------
def tiny(num_env_runners: int = 1, fragment: int = 10, **training) -> SMACConfig:
    kw = dict(
        num_particles=4,
        latent_dim=4,
        hidden_dim=32,
        critic_hidden_dim=32,
        train_batch_size_per_learner=32,
        num_steps_sampled_before_learning_starts=200,
        updates_per_env_step=0.25,
    )
    kw.update(training)
    return (
        SMACConfig()
        .environment(ENV, env_config={"seed": 0})
        .env_runners(num_env_runners=num_env_runners, rollout_fragment_length=fragment, num_cpus_per_env_runner=0.5)
        .training(**kw)
        .reporting(min_sample_timesteps_per_iteration=500)
        .debugging(seed=0)
    )


def test_async_is_the_default_and_false_keeps_the_synchronous_loop(ray_local, monkeypatch, capfd):
    """Also: the profiling aids (benchmarks/stack_sampler.py, not in the package) are loaded by the learner's build
    only when ``SMAC_OP_PROBE`` asks for them, and then the update thread probes every n-th update."""
    import sys

    from smac_rllib.training.async_learner import PROFILING_AIDS

    assert SMACConfig().async_learning is True and SACBaselineConfig().async_learning is True
    assert "smac_profiling_aids" not in sys.modules
    for flag in (True, False):
        if flag:
            monkeypatch.setenv("SMAC_OP_PROBE", "50")  # ~100 updates; read by the (in-process) learner's build
        config = tiny(num_env_runners=0).training(async_learning=flag)
        algo = config.reporting(min_sample_timesteps_per_iteration=300).build_algo()
        try:
            for _ in range(2):
                result = algo.train()
            assert result["num_updates_lifetime"] > 0
            assert ("async" in result) is flag
            assert (algo._async is not None) is flag
        finally:
            algo.stop()
            monkeypatch.delenv("SMAC_OP_PROBE", raising=False)
        if flag:
            probes = [line for line in capfd.readouterr().err.splitlines() if line.startswith("[op-probe pid=")]
            updates = [int(line.split("update=")[1].split("]")[0]) for line in probes]
            assert updates and all(u % 50 == 0 for u in updates) and updates == sorted(updates), probes[:3]
            assert sys.modules["smac_profiling_aids"].__file__ == str(PROFILING_AIDS)
            assert (
                PROFILING_AIDS.parent.name == "benchmarks"
                and not (PROFILING_AIDS.parents[1] / "smac_rllib" / "stack_sampler.py").exists()
            )


@pytest.mark.parametrize(
    "training",
    [
        dict(
            num_particles=8,
            hidden_dim=64,
            critic_hidden_dim=64,
            train_batch_size_per_learner=128,
            updates_per_env_step=0.5,
        ),
        dict(updates_per_env_step=0.1),
    ],
    ids=["slow_learner", "fast_learner"],
)
def test_observed_updates_per_env_step_within_5_percent_over_every_1000_steps(ray_local, training):
    config = tiny(num_env_runners=2, fragment=10, **training)
    algo = config.build_algo()
    try:
        while algo.env_steps_stored < 200 + 2000:
            result = algo.train()
        ratio = training["updates_per_env_step"]
        stamps = algo.update_stamps()
        errors = windowed_ratio_errors(
            stamps, ratio=ratio, learning_starts=200, window=1000, total_env_steps=algo.env_steps_stored
        )
        assert len(errors) >= 2
        assert max(abs(e) for e in errors) <= 0.05, errors
        assert len(stamps) == math.floor(ratio * (algo.env_steps_stored - 200) + 1e-9)  # every granted update ran
        assert result["async"]["observed_updates_per_env_step"] == pytest.approx(ratio, rel=0.1)
        assert 0.0 < result["async"]["learner_utilization"] <= 1.0
    finally:
        algo.stop()


def _assert_trained(result: dict, min_env_steps: int) -> None:
    """Env steps were sampled, updates ran, and the learner reported finite losses."""
    assert result["env_runners"]["num_env_steps_sampled_lifetime"] >= min_env_steps
    learner = result["learners"][DEFAULT_MODULE_ID]
    for key in ("critic/loss", "actor/loss", "alpha/value", "estimator/entropy_mlmc"):
        assert math.isfinite(learner[key]), key
    assert result["num_updates_lifetime"] > 0


def test_ddp_learners_get_one_shard_each_stay_equal_and_checkpoint_replay_and_counters(ray_local, tmp_path):
    """Two remote DDP learners, two env runners (each learner's replay shard gets episodes from the start, design §8):
    they train, each holds one shard of the replay, their replicas stay equal; the checkpoint holds both shards, the
    counters and the weights, and training continues from them (the remote learners' side of a checkpoint: the
    replay lives in the learner actors)."""
    config = tiny(num_env_runners=2).learners(num_learners=2, num_cpus_per_learner=1)
    algo = config.build_algo()
    try:
        result = algo.train()
        while algo._async.updates_done == 0 or DEFAULT_MODULE_ID not in result.get("learners", {}):
            result = algo.train()
        _assert_trained(result, min_env_steps=500)
        assert math.isfinite(result["env_runners"].get("episode_return_mean", 0.0))
        assert algo.local_replay_buffer is None  # the replay lives in the learner actors
        sizes = algo._async.replay_sizes()
        assert len(sizes) == 2 and min(sizes) > 0 and sum(sizes) == algo.env_steps_stored
        algo._async.quiesce()  # the learner threads finish their granted updates (they run on after train())
        states = algo._async._call_all(
            lambda learner: learner.get_state(components="rl_module")["rl_module"][DEFAULT_MODULE_ID]
        )
        assert len(states) == 2
        for key in states[0]:  # DDP keeps the replicas equal
            np.testing.assert_allclose(np.asarray(states[0][key]), np.asarray(states[1][key]), err_msg=key)
        stored, updates = algo.env_steps_stored, algo._async.updates_done
        assert updates == math.floor(0.25 * (stored - 200) + 1e-9)  # every granted update ran
        algo.save_to_path(str(tmp_path))
        weights = algo.learner_group.get_weights()[DEFAULT_MODULE_ID]
    finally:
        algo.stop()
    restored = config.build_algo()
    try:
        restored.restore_from_path(str(tmp_path))
        assert restored._async.replay_sizes() == sizes and restored.env_steps_stored == stored
        assert restored._async.updates_done == updates
        again = restored.learner_group.get_weights()[DEFAULT_MODULE_ID]
        assert all(np.array_equal(np.asarray(weights[k]), np.asarray(again[k])) for k in weights)
        restored.train()
        assert sum(restored._async.replay_sizes()) > sum(sizes) and restored._async.updates_done > updates
    finally:
        restored.stop()
