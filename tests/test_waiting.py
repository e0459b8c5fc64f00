"""Nothing waits in silence: what a trial waits for, said before Ray (a local Ray that can never place
it) or every minute (a cluster); a stop or score key that never comes ends the trial in one line; a long evaluation
shows progress. Pure functions here, no Ray; the one real run is in test_cli.py."""

from __future__ import annotations

from smac_rllib.cli.main import main

PPO = """\
ppo:
  run: PPO
  env: dmc/cartpole-balance
  stop: {training_iteration: 1}
  config:
    num_env_runners: 0
    train_batch_size: 200
    minibatch_size: 100
    num_epochs: 1
"""


def test_ppo_dry_run_passes_every_check(tmp_path, capfd):
    """``run: PPO`` (an RLlib algorithm without a replay buffer) goes through the memory check."""
    path = tmp_path / "ppo.yaml"
    path.write_text(PPO)
    code = main(["train", "file", str(path), "--dry-run"])
    out, err = capfd.readouterr()
    assert code == 0 and "Traceback" not in err, err
    assert "PPO on dmc/cartpole-balance" in out


# --------------------------------------------------------------------------------------------- keys that never come


def _result(iteration: int, *, episodes: int = 0, learning: bool = False, evaluated: bool = False) -> dict:
    """A result shaped as RLlib 2.60's (only the keys the gates read, and a few others)."""
    result = {
        "training_iteration": iteration,
        "time_total_s": 10.0 * iteration,
        "num_env_steps_sampled_lifetime": 100 * iteration,
        "timers": {"training_step": 1.0},
        "env_runners": {"num_episodes_lifetime": episodes, "num_env_steps_sampled_lifetime": 100 * iteration},
        "learners": {"__all_modules__": {"num_trainable_parameters": 10}},
    }
    if episodes:
        result["env_runners"]["episode_return_mean"] = 5.0
    if learning:
        result["learners"]["default_policy"] = {"qf_loss": 1.0}
        result["num_updates_lifetime"] = 10 * iteration
    if evaluated:
        result["evaluation"] = {"num_healthy_workers": 0, "env_runners": {"num_episodes_lifetime": 1}}
        result["evaluation"]["env_runners"]["episode_return_mean"] = 7.0
    return result


def test_a_key_that_comes_later_is_not_overdue():
    """Episode returns before the first episode ended, learner keys before learning started, evaluation keys in
    the iterations between evaluations: waited for, as long as their gate is closed."""
    from smac_rllib.cli.overdue import KeyWatch

    watch = KeyWatch(
        {
            "env_runners/episode_return_mean": "stop criterion",
            "learners/default_policy/qf_loss": "stop criterion",
            "num_updates_lifetime": "stop criterion",
            "evaluation/env_runners/episode_return_mean": "scheduler metric",
        }
    )
    for iteration in range(1, 20):
        assert watch.check("t", _result(iteration)) is None  # no episode, no update, no evaluation yet
    assert watch.check("t", _result(20, episodes=1, learning=True, evaluated=True)) is None
    assert watch.check("t", _result(21, episodes=1, learning=True)) is None
    assert watch.overdue is None


def test_a_key_missing_once_it_must_be_there_is_overdue_with_one_line():
    from smac_rllib.cli.overdue import KeyWatch

    watch = KeyWatch({"learners/default_policy/qf_losss": "stop criterion"}, where="x.yaml")
    assert watch.check("t", _result(1)) is None and watch.check("t", _result(2)) is None  # learning not started
    assert watch.check("t", _result(3, learning=True)) is None  # the first result that must hold it
    message = watch.check("t", _result(4, learning=True))
    assert message == (
        "x.yaml: stop criterion 'learners/default_policy/qf_losss' is in none of the trial's 2 results after "
        "learning started (up to iteration 4), so it would never stop the run: stopped the run; did you mean "
        "'learners/default_policy/qf_loss'?"
    )
    assert "\n" not in message and watch.overdue == message


def test_each_family_of_keys_waits_for_its_own_gate():
    from smac_rllib.cli.overdue import KeyWatch, gate

    assert [gate(k) for k in ("timers/x", "env_runners/my_metric", "async/updates_per_s", "evaluation/a/b")] == [
        "always",
        "episodes",
        "learning",
        "evaluation",
    ]
    # a key of every result (PPO's results hold no num_env_steps_trained_lifetime at the top): the first two results
    watch = KeyWatch({"timers/no_such_timer": "checkpoint_config.checkpoint_score_attribute"})
    assert watch.check("a", _result(1)) is None
    assert "would never rank the checkpoints" in watch.check("a", _result(2))
    # a callback's metric: once an episode ended; per trial
    watch = KeyWatch({"env_runners/my_metric": "stop criterion"})
    assert watch.check("a", _result(1)) is None and watch.check("a", _result(2)) is None
    assert watch.check("a", _result(3, episodes=2)) is None and watch.check("b", _result(3, episodes=2)) is None
    assert "'env_runners/my_metric' is in none of the trial's 2 results after an episode ended" in watch.check(
        "a", _result(4, episodes=3)
    )
    # an evaluation key: in results that evaluated only
    watch = KeyWatch({"evaluation/env_runners/episode_len_mean": "scheduler metric"})
    for iteration in (1, 2, 3):
        watch.check("a", _result(iteration))
    assert watch.check("a", _result(4, evaluated=True)) is None
    assert "2 results that evaluated" in watch.check("a", _result(8, evaluated=True))


def test_a_key_seen_once_is_never_overdue():
    from smac_rllib.cli.overdue import KeyWatch

    watch = KeyWatch({"num_updates_lifetime": "stop criterion"})
    assert watch.check("a", _result(1, learning=True)) is None
    later = _result(2, learning=True)
    del later["num_updates_lifetime"]
    assert watch.check("a", later) is None and watch.check("a", later) is None


def test_watched_keys_are_the_stop_criteria_the_checkpoint_score_and_the_scheduler_metrics():
    from smac_rllib.cli.overdue import watched_keys

    keys = watched_keys(
        {"training_iteration": 10},
        {"checkpoint_score_attribute": "evaluation/env_runners/episode_return_mean"},
        {"type": "ASHA", "metric": "env_runners/episode_return_mean", "time_attr": "training_iteration"},
    )
    assert keys == {
        "training_iteration": "stop criterion",
        "evaluation/env_runners/episode_return_mean": "checkpoint_config.checkpoint_score_attribute",
        "env_runners/episode_return_mean": "scheduler metric",
    }


def test_metric_stopper_ends_the_run_on_an_overdue_key_and_a_pickled_old_one_still_stops(capfd):
    import pickle

    from smac_rllib.cli import overdue
    from smac_rllib.cli.train import MetricStopper

    overdue.OVERDUE.clear()
    stopper = MetricStopper({"training_iteration": 5, "timers/no_such_timer": 1})
    assert stopper("a", _result(1)) is False and not stopper.stop_all()
    assert stopper("a", _result(2)) is True and stopper.stop_all()
    err = capfd.readouterr().err
    assert err.count("\n") == 1 and err.startswith("rllib: error: stop criterion 'timers/no_such_timer' is in none")
    assert overdue.OVERDUE and overdue.OVERDUE[0] in err
    overdue.OVERDUE.clear()

    old = pickle.loads(pickle.dumps(stopper))
    del old.watch  # as pickled by a version before the watch (a --resume of an older run)
    assert old("a", _result(5)) is True and old("a", _result(4)) is False and not old.stop_all()


# --------------------------------------------------------------------------------------------- pending trials


def test_what_a_pending_trial_waits_for_is_one_line():
    from smac_rllib.cli.pending import describe_wait

    assert describe_wait(
        {"CPU": 5.0, "GPU": 1.0}, 3, "PACK", {"CPU": 2.0, "GPU": 0.0}, {"CPU": 16.0, "GPU": 1.0}, 2
    ) == (
        "asks for CPU 5, GPU 1 (3 bundles, PACK); free now CPU 2 of 16, GPU 0 of 1: waits for CPU, GPU that other "
        "trials hold"
    )
    line = describe_wait({"CPU": 3.0, "learner_node": 1.0}, 3, "STRICT_SPREAD", {"CPU": 8.0}, {"CPU": 8.0}, nodes=1)
    assert line == (
        "asks for CPU 3, learner_node 1 (3 bundles, STRICT_SPREAD); free now CPU 8 of 8, learner_node 0 of 0: no node "
        "offers learner_node 1 (until an autoscaler adds one); STRICT_SPREAD needs 3 nodes, the cluster has 1"
    )


class _PendingTrial:
    def __init__(self, trial_id: str, status: str = "PENDING"):
        from ray.tune.execution.placement_groups import PlacementGroupFactory

        self.trial_id, self.status, self.experiment_tag = trial_id, status, f"{trial_id[-1]}"
        self.placement_group_factory = PlacementGroupFactory([{"CPU": 1}, {"CPU": 2}], strategy="PACK")


def test_pending_trials_are_reported_every_minute_on_a_cluster_and_locally_only_when_none_runs():
    from smac_rllib.cli.pending import PendingReporter

    def state():
        return {"CPU": 1.0}, {"CPU": 4.0}, 1

    reporter = PendingReporter(cluster=True, every_s=60)
    a, b = _PendingTrial("t0"), _PendingTrial("t1", status="RUNNING")
    assert reporter.lines([a, b], 0.0, state) == []  # just pending
    assert reporter.lines([a, b], 59.0, state) == []
    assert reporter.lines([a, b], 60.0, state) == [
        "[0] pending 1m00s: asks for CPU 3 (2 bundles, PACK); free now CPU 1 of 4: waits for CPU that other trials hold"
    ]
    assert reporter.lines([a, b], 100.0, state) == []  # once a minute
    assert len(reporter.lines([a, b], 120.0, state)) == 1
    a.status = "RUNNING"
    assert reporter.lines([a, b], 240.0, state) == []  # started

    local = PendingReporter(cluster=False, every_s=60)
    c = _PendingTrial("t2")
    local.lines([c, b], 0.0, state)
    assert local.lines([c, b], 60.0, state) == [], "another trial runs: its lines are the progress"
    b.status = "TERMINATED"
    assert len(local.lines([c, b], 61.0, state)) == 1
