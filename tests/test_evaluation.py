"""Deterministic evaluation everywhere (paper protocol): RLlib's ``.evaluation(...)`` in every tuned example, real
evaluations on our off-policy loop (states and pixels), and the evaluation return as the default metric of the
progress lines, the run summary and ``rllib plot``.

Real Ray, real dm_control, tiny sizes: 50-step episodes (``time_limit``), one evaluation episode.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from ray.rllib.core import DEFAULT_MODULE_ID

from smac_rllib.cli.errors import UserError
from smac_rllib.cli.main import main

REPO = Path(__file__).resolve().parents[1]
TUNED_EXAMPLES = sorted((REPO / "tuned_examples").glob("*.yaml"))
EVAL_RETURN = "evaluation/env_runners/episode_return_mean"


# --------------------------------------------------------------------------------------------- tuned examples


@pytest.mark.parametrize("path", TUNED_EXAMPLES, ids=lambda p: p.name)
def test_tuned_example_dry_run_evaluates_the_deterministic_policy(path, capsys, monkeypatch):
    import smac_rllib
    from smac_rllib.cli import ray_start
    from smac_rllib.cli.results import action_repeat
    from smac_rllib.cli.yaml_loader import load_experiments

    # cluster_*.yaml are sized for a cluster: on this machine a local Ray would refuse their env runners (more than
    # 8x its CPUs); checked as `ray job submit` runs them, against a cluster address (whose probe is left out here)
    cluster = ["--address", "127.0.0.1:6379"] if path.name.startswith("cluster_") else []
    monkeypatch.setattr(ray_start, "check_address", lambda address: None)
    # the GPU examples are sized for a GPU node's memory (dreamerv3_pixels.yaml's float32 replay: ~23 GiB), which a
    # 24 GiB laptop refuses (tests/test_mistakes.py: the memory check); their evaluation is checked on a 64 GiB node
    from smac_rllib.cli import memory

    monkeypatch.setattr(memory, "physical_memory", lambda: 64 * memory.GiB)
    assert main(["train", "file", str(path), "--dry-run", *cluster]) == 0
    out = capsys.readouterr().out
    smac_rllib.register()
    specs = load_experiments(str(path))
    assert out.count("deterministic policy, on ") == len(specs), out
    assert out.count(f"-> {EVAL_RETURN}") == len(specs), out
    for spec in specs:
        for config in spec.configs:
            assert config.evaluation_interval >= 1 and config.evaluation_duration_unit == "episodes"
            assert config.get_evaluation_config_object().explore is False, (
                "evaluation acts with the deterministic policy"
            )
            steps = config.evaluation_interval * config.min_sample_timesteps_per_iteration
            if path.name in (
                "smac_pixels_quick.yaml",
                "smac_state_quick.yaml",
                "smac_pixels_learns.yaml",
            ):  # laptop runs: a denser cadence, stated in their comments
                continue
            if getattr(config, "is_pixels", False) or (config.env_config or {}).get("from_pixels"):
                assert (
                    steps * action_repeat(config.to_dict()) == 10_000 and config.evaluation_duration == 5
                )  # reference
            else:
                assert steps == 10_000 and config.evaluation_duration == 10  # pytorch_sac


def test_noisy_pixels_uses_the_papers_five_seeds():
    from smac_rllib.cli.yaml_loader import load_experiments

    for spec in load_experiments(str(REPO / "tuned_examples" / "smac_pixels_noisy.yaml")):
        assert {c.seed for c in spec.configs} == {0, 1, 2, 3, 4}
        assert spec.num_trials == 3 * 2 * 2 * 5  # tasks x perturbation levels x {SMAC, Latent-SAC} x seeds


def test_evaluation_metric_needs_evaluation_and_is_the_schedulers_default(tmp_path):
    from smac_rllib.cli.experiment_parts import parse_scheduler
    from smac_rllib.cli.yaml_loader import Overrides, load_experiments

    tiny = (REPO / "tests" / "data" / "tiny.yaml").read_text()
    no_eval = "\n".join(line for line in tiny.splitlines() if "evaluation" not in line) + "\n"
    (tmp_path / "no_eval.yaml").write_text(no_eval)
    with pytest.raises(
        UserError, match="is reported only when the experiment evaluates; add `evaluation_interval: 10`"
    ):
        load_experiments(
            str(tmp_path / "no_eval.yaml"), Overrides(stop={"evaluation/env_runners/episode_return_mean": 100})
        )
    (spec,) = load_experiments(
        str(REPO / "tests" / "data" / "tiny.yaml"), Overrides(stop={"evaluation/episode_reward_mean": 100})
    )
    assert spec.stop == {EVAL_RETURN: 100}  # old key translated
    assert parse_scheduler({"type": "ASHA"}, "x.yaml", evaluates=True)["metric"] == EVAL_RETURN
    assert parse_scheduler({"type": "ASHA"}, "x.yaml")["metric"] == "env_runners/episode_return_mean"
    with pytest.raises(UserError, match="scheduler metric .* is reported only when the experiment evaluates"):
        parse_scheduler({"type": "ASHA", "metric": EVAL_RETURN}, "x.yaml", evaluates=False)
    (tmp_path / "typo.yaml").write_text(tiny.replace("{explore: false}", "{exploree: false}"))
    with pytest.raises(UserError, match="unknown evaluation_config key 'exploree' for SMAC; did you mean 'explore'"):
        load_experiments(str(tmp_path / "typo.yaml"))


# --------------------------------------------------------------------------------------------- real evaluations


def _tiny_state(algo: str):
    from smac_rllib.algorithms import SACBaselineConfig, SMACConfig

    if algo == "SMAC":
        config = SMACConfig().training(num_particles=4, latent_dim=4, hidden_dim=16, critic_hidden_dim=16)
    else:
        config = SACBaselineConfig().training(hidden_dim=16)
    return (
        config.environment("dmc/cartpole-balance", env_config={"time_limit": 0.5})  # 50-step episodes
        .training(
            updates_per_env_step=0.1,
            train_batch_size_per_learner=16,
            num_steps_sampled_before_learning_starts=50,
            initial_alpha=0.1,
        )
        .env_runners(num_env_runners=0, rollout_fragment_length=50)
        .reporting(min_sample_timesteps_per_iteration=50)
        .evaluation(
            evaluation_interval=1,
            evaluation_duration=1,
            evaluation_duration_unit="episodes",
            evaluation_num_env_runners=0,
            evaluation_config={"explore": False},
        )
        .debugging(seed=0)
    )


def _assert_eval_runner_has_learner_weights(algo, eval_state: dict, equal: bool = True) -> None:
    learner_state = algo.learner_group.get_weights()[DEFAULT_MODULE_ID]
    common = [k for k in eval_state if k in learner_state and np.asarray(eval_state[k]).dtype.kind == "f"]
    assert common
    same = all(np.allclose(np.asarray(eval_state[k]), np.asarray(learner_state[k])) for k in common)
    assert same == equal


@pytest.mark.parametrize("algo_name", ["SMAC", "SACBaseline"])
def test_state_run_reports_a_deterministic_evaluation_with_the_learners_weights(ray_local, algo_name):
    from smac_rllib.cli.progress import fresh_evaluation

    algo = _tiny_state(algo_name).evaluation(evaluation_interval=2).build_algo()
    try:
        runner = algo.eval_env_runner  # evaluation_num_env_runners=0: a local eval runner, not the training one
        assert (
            runner is not None
            and runner is not algo.env_runner
            and algo.eval_env_runner_group.num_remote_env_runners() == 0
        )
        assert runner.config.explore is False and runner.config.in_evaluation
        results = [algo.train() for _ in range(3)]
        # Every 2nd iteration evaluates; RLlib repeats that evaluation's metrics in the next one (without the marker).
        assert [("evaluation" in r) for r in results] == [False, True, True]
        assert [fresh_evaluation(r) is not None for r in results] == [False, True, False]
        assert math.isfinite(results[1]["evaluation"]["env_runners"]["episode_return_mean"])
        assert results[1]["evaluation"]["env_runners"]["episode_len_mean"] == 50
        # the async learner may still be running iteration 3's granted updates when its result is reported: wait
        assert results[2]["num_updates_lifetime"] >= results[1]["num_updates_lifetime"] > 0
        algo.wait_for_granted_updates()
        _assert_eval_runner_has_learner_weights(algo, runner.module.get_state(), equal=False)  # updated since
        result = algo.train()  # iteration 4: updates, then evaluates with the weights it just learned
        assert math.isfinite(result["evaluation"]["env_runners"]["episode_return_mean"])
        _assert_eval_runner_has_learner_weights(algo, runner.module.get_state())
        assert math.isfinite(result["env_runners"]["episode_return_mean"])  # the training return stays reported
        # Deterministic: same weights, same evaluation seed (RLlib re-seeds the eval env each evaluation)
        # -> same return.
        first = algo.evaluate()["env_runners"]["episode_return_mean"]
        assert algo.evaluate()["env_runners"]["episode_return_mean"] == first
    finally:
        algo.stop()


def test_a_long_evaluation_writes_live_progress_between_its_episodes(ray_local, monkeypatch):
    """The local evaluation runner samples the episodes one at a time, each followed by a live record (cli/live.py
    prints it as training's in-iteration lines), and the evaluation is RLlib's: 3 episodes, their return."""
    import json

    from smac_rllib.cli.live import format_live
    from smac_rllib.training.off_policy import LIVE_PROGRESS_FILE

    monkeypatch.setenv("SMAC_LIVE_PROGRESS_S", "0")  # a record after every episode (the default: every 30 s)
    algo = _tiny_state("SMAC").evaluation(evaluation_duration=3).build_algo()
    try:
        result = algo.evaluate()
        assert result["env_runners"]["num_episodes"] == 3 and result["env_runners"]["episode_len_mean"] == 50
        with open(os.path.join(algo.logdir, LIVE_PROGRESS_FILE)) as f:
            record = json.load(f)
        assert record["phase"] == "evaluation" and (record["episodes_done"], record["episodes_planned"]) == (3, 3)
        assert format_live("0", record, {}, None).startswith("[0] it   0 evaluating ")  # before any train()
        assert "sample" not in vars(algo.eval_env_runner), "the runner's own sample() is back"
    finally:
        algo.stop()


def _tiny_pixels():
    from smac_rllib.algorithms import SMACConfig

    return (
        SMACConfig()
        .environment("dmc/cartpole-swingup", env_config={"from_pixels": True, "fast_render": True, "time_limit": 1.0})
        .training(
            world_model_preset="tiny",
            pixel_hidden_dim=32,
            actor_layers=2,
            critic_layers=2,
            batch_size_B=3,
            batch_length_T=6,
            num_particles=4,
            num_steps_sampled_before_learning_starts=50,
            updates_per_env_step=0.03,
            initial_alpha=0.1,
        )
        .env_runners(num_env_runners=0, rollout_fragment_length=50)
        .reporting(min_sample_timesteps_per_iteration=50)  # one 50-step (100-frame) episode per iteration
        .evaluation(
            evaluation_interval=1,
            evaluation_duration=1,
            evaluation_duration_unit="episodes",
            evaluation_num_env_runners=1,
            evaluation_config={"explore": False},
        )
        .debugging(seed=0)
    )


@pytest.fixture(scope="module")
def pixel_algo(ray_local):
    algo = _tiny_pixels().build_algo()
    yield algo
    algo.stop()


def test_pixel_run_reports_an_evaluation_of_the_inference_path(pixel_algo):
    def _arm(runner):  # on the remote eval runner (a local function: cloudpickle sends it by value)
        def explored(*args, **kwargs):
            raise AssertionError("evaluation called _forward_exploration")

        runner.module._forward_exploration = explored  # evaluation must take _forward_inference
        return runner.config.explore, runner.module.inference_only

    group = pixel_algo.eval_env_runner_group
    assert group.num_remote_env_runners() == 1  # as the GPU pixel examples (5 remote eval runners)
    assert group.foreach_env_runner(_arm, local_env_runner=False) == [(False, True)]
    pixel_algo.train()  # the 50 warm-up steps
    result = pixel_algo.train()  # updates, then evaluates
    assert result["num_updates_lifetime"] > 0
    evaluation = result["evaluation"]["env_runners"]
    assert math.isfinite(evaluation["episode_return_mean"]) and evaluation["episode_len_mean"] == 50
    assert math.isfinite(result["env_runners"]["episode_return_mean"])  # the training return stays reported


def test_pixel_evaluation_is_deterministic(pixel_algo):
    # the posterior-mean belief is acted on and carried (no sampled latent), tanh(mean): two evaluations agree
    first = pixel_algo.evaluate()["env_runners"]["episode_return_mean"]
    assert pixel_algo.evaluate()["env_runners"]["episode_return_mean"] == first


# --------------------------------------------------------------------------------------------- reporting


def _row(it: int, train: float, evaluation: float | None = None, repeated: bool = False) -> dict:
    """A result row as RLlib 2.60 writes it; ``repeated``: the iteration after an evaluation, which repeats it."""
    row = {
        "training_iteration": it,
        "time_total_s": 10.0 * it,
        "time_this_iter_s": 10.0,
        "env_runners": {"num_env_steps_sampled_lifetime": 1000 * it, "episode_return_mean": train},
    }
    if evaluation is not None:
        row["evaluation"] = {"env_runners": {"episode_return_mean": evaluation}}
        if not repeated:
            row["evaluation"]["num_healthy_workers"] = 0
    return row


def _trial(root: Path, name: str, rows: list[dict], params: dict) -> Path:
    trial = root / name
    trial.mkdir(parents=True)
    (trial / "result.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (trial / "params.json").write_text(json.dumps(params))
    return trial


def test_progress_line_shows_the_evaluation_return_first():
    from smac_rllib.cli.progress import format_result

    assert "| return eval 52.0, train 40.0 |" in format_result("0", _row(2, 40.0, 52.0))
    assert "| return eval 52.0 (it 2), train 41.0 |" in format_result(
        "0", _row(3, 41.0, 52.0, repeated=True), last_eval=(52.0, 2)
    )
    assert "| return eval 52.0 (earlier), train 41.0 |" in format_result(
        "0", _row(3, 41.0, 52.0, repeated=True)
    )  # after a resume
    assert "| return eval -, train 40.0 |" in format_result("0", _row(1, 40.0))


def test_summary_reports_last_and_best_evaluation_return_and_table1_statistic(tmp_path, capsys):
    from smac_rllib.cli.summary import print_summary

    results = []
    pixels = {
        "env": "dmc/finger-spin",
        "num_particles": 32,
        "env_config": {"from_pixels": True, "pixel_noise_std": 0.01},
    }
    for seed, evals in enumerate([(300.0, 500.0, 450.0), (320.0, 480.0, 700.0)]):
        rows = [
            _row(1, 10.0),
            _row(2, 20.0, evals[0]),
            _row(3, 30.0, evals[0], repeated=True),
            _row(4, 40.0, evals[1]),
            _row(5, 50.0, evals[1], repeated=True),
            _row(6, 60.0, evals[2]),
            _row(7, 70.0, evals[2], repeated=True),
        ]
        params = {**pixels, "seed": seed}
        trial = _trial(tmp_path, f"SMAC_0000{seed}_seed={seed}", rows, params)
        results.append(
            SimpleNamespace(
                metrics={**rows[-1], "config": params},
                path=str(trial),
                error=None,
                checkpoint=None,
                config={**params, "evaluation_interval": 2},
            )
        )
    no_eval = _trial(tmp_path, "SMAC_00009", [_row(1, 5.0)], {"env": "dmc/finger-spin"})
    results.append(
        SimpleNamespace(
            metrics=_row(1, 5.0),
            path=str(no_eval),
            error=None,
            checkpoint=None,
            config={"env": "dmc/finger-spin", "evaluation_interval": None},
        )
    )
    print_summary("exp", str(tmp_path), results, 0.0, "resume", None)
    out = capsys.readouterr().out
    # seed 0: best 500 at env step 4,000 (= frame 8,000 at action repeat 2), last 450 at 6,000 (not its repeat at 7,000)
    assert "eval return  last 450.0 (env step 6,000 = frame 12,000), best 500.0 (env step 4,000 = frame 8,000)" in out
    assert "train return last 70.0 (env step 7,000 = frame 14,000), best 70.0" in out
    assert "eval return  - (evaluation is off: set evaluation_interval)" in out
    # Table 1: best evaluation return over training, mean +- std over seeds (500, 700)
    assert "Best eval return over training, mean +- std over seeds (paper Table 1):" in out
    assert "dmc/finger-spin SMAC K=32: 600.0 +- 141.4 (n=2)" in out


def test_plot_defaults_to_the_evaluation_return_and_falls_back_to_the_training_return(tmp_path, capsys):
    from smac_rllib.cli.plot import load_trials, metric_label, run_plot

    evaluated = tmp_path / "evaluated"
    _trial(
        evaluated,
        "SMAC_00000",
        [_row(1, 10.0), _row(2, 20.0, 30.0), _row(3, 25.0, 30.0, repeated=True), _row(4, 40.0, 50.0)],
        {"env": "dmc/x"},
    )
    metric, (trial,) = load_trials(str(evaluated))
    assert metric == EVAL_RETURN and list(trial["y"]) == [30.0, 50.0] and list(trial["x"]) == [2000.0, 4000.0]
    assert metric_label(metric) == "evaluation return (deterministic policy)"
    metric, (trial,) = load_trials(str(evaluated), "env_runners/episode_return_mean")  # --metric: the training return
    assert list(trial["y"]) == [10.0, 20.0, 25.0, 40.0]

    not_evaluated = tmp_path / "not_evaluated"
    _trial(not_evaluated, "SMAC_00000", [_row(1, 10.0), _row(2, 20.0)], {"env": "dmc/x"})
    capsys.readouterr()
    metric, _ = load_trials(str(not_evaluated))
    assert metric == "env_runners/episode_return_mean" and metric_label(metric) == "training return (exploring policy)"
    assert "plotting the training return instead" in capsys.readouterr().err

    out = tmp_path / "curves.png"
    assert run_plot(argparse.Namespace(results_dir=str(evaluated), out=str(out), metric=None)) == 0
    assert os.path.getsize(out) > 10_000


def test_summary_offers_resume_only_where_a_resume_can_continue(tmp_path, capsys):
    """A trial that failed before its first iteration (a configuration error) gets a 'Fix:' line, not '--resume' (which
    would repeat it); one that failed after training some iterations gets the resume command."""
    from smac_rllib.cli.summary import print_summary

    early = SimpleNamespace(
        metrics={},
        path=str(tmp_path / "early"),
        error=ValueError("bad env_config key"),
        checkpoint=None,
        config={"env": "dmc/x"},
    )
    print_summary("exp", str(tmp_path), [early], 0.0, "rllib train file x.yaml --resume", None)
    out = capsys.readouterr().out
    assert "Resume:" not in out and "Fix:         the failed trial(s) stopped before their first iteration" in out
    assert f"(curves: rllib plot {tmp_path}; TensorBoard event files too)" in out and "tensorboard --logdir" not in out
    trial = _trial(tmp_path, "SMAC_00001", [_row(1, 5.0), _row(2, 6.0)], {"env": "dmc/x"})
    late = SimpleNamespace(
        metrics=_row(2, 6.0),
        path=str(trial),
        error=RuntimeError("worker died"),
        checkpoint=None,
        config={"env": "dmc/x"},
    )
    print_summary("exp", str(tmp_path), [late], 0.0, "rllib train file x.yaml --resume", None)
    assert "Resume:      rllib train file x.yaml --resume" in capsys.readouterr().out


def test_ctrl_c_says_how_long_the_current_iteration_still_runs():
    """The first Ctrl-C's message estimates the wait: the slowest running trial's last iteration length minus the time
    since its result (cli/progress.py ``iteration_wait_estimate``); nothing before the first result."""
    from smac_rllib.cli import interrupt, progress

    progress._ITERATION_CLOCK.clear()
    assert interrupt._wait_hint() == "" and progress.iteration_wait_estimate() is None
    progress._ITERATION_CLOCK.update({"a": (1000.0, 250.0), "b": (1100.0, 60.0)})
    assert progress.iteration_wait_estimate(now=1030.0) == 220.0  # a: 250 - 30 = 220, b: 60 + 70 = 130
    assert progress.iteration_wait_estimate(now=2000.0) == 0.0
    progress._ITERATION_CLOCK.update({"a": (time.time() - 500.0, 250.0)})  # already longer than the last one: no "~0s"
    assert "already runs longer than the last one" in interrupt._wait_hint()
    progress._ITERATION_CLOCK.clear()


def test_a_trial_the_scheduler_cut_before_the_stop_is_cut_not_ok(tmp_path, capsys):
    """ASHA ends the worse trials early without an error: the summary marks a trial that met no stop criterion CUT."""
    from smac_rllib.cli.summary import print_summary

    results = []
    for seed, last in ((0, 4), (1, 2)):
        rows = [_row(i, 10.0 * i) for i in range(1, last + 1)]
        trial = _trial(tmp_path, f"SMAC_0000{seed}_seed={seed}", rows, {"seed": seed})
        results.append(
            SimpleNamespace(metrics=rows[-1], path=str(trial), error=None, checkpoint=None, config={"seed": seed})
        )
    print_summary("exp", str(tmp_path), results, 0.0, "resume", None, stop={"training_iteration": 4})
    out = capsys.readouterr().out
    assert "2 trial(s), 1 finished, 0 failed, 1 cut before the stop by the scheduler" in out
    assert "  OK    SMAC_00000_seed=0" in out and "  CUT   SMAC_00001_seed=1" in out
