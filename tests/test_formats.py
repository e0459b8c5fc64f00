"""Formats and commands behave as users' other tools do: YAML merge keys and hidden templates as in CI and
compose files, ``file://`` and the default storage path checked like ``--storage-path``, ``--resume`` that honours
a stop raised in the file, DMC names spelled with other separators, ``--video`` frames from gymnasium envs.

In-process and without Ray (``--dry-run``, the checks' functions), as ``test_mistakes.py``; the real resume with a
raised stop is in ``test_cli.py`` (the Ctrl-C run it continues).
"""

from __future__ import annotations

import json
import os
import pickle

import pytest

from smac_rllib.cli.errors import UserError
from smac_rllib.cli.main import main
from tests.test_mistakes import BASE

TEMPLATES = """\
.defaults: &defaults              # a GitLab CI hidden job: a template, not run
  run: SMAC
  env: dmc/cartpole-balance
  stop: {training_iteration: 2}
  max_failures: 0
  config: &config
    env_config: {time_limit: 1.0}
    seed: 0
    num_env_runners: 0
    rollout_fragment_length: 50
    min_sample_timesteps_per_iteration: 100
    num_steps_sampled_before_learning_starts: 100
    train_batch_size_per_learner: 16
    num_particles: 4
    latent_dim: 4
    hidden_dim: 16
    critic_hidden_dim: 16
x-eval: &eval {evaluation_interval: 2, evaluation_duration: 1, evaluation_config: {explore: false}}  # compose-style
k4:
  <<: *defaults
k8:
  <<: *defaults
  stop: {training_iteration: 3}
  config:
    <<: [*eval, *config]
    num_particles: 8
"""


def _run(argv: list[str], capfd) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as e:
        code = e.code
    out, err = capfd.readouterr()
    return code, out, err


def test_merge_keys_and_hidden_templates_give_the_experiments_meant(tmp_path, capfd):
    from smac_rllib.cli.yaml_loader import load_experiments

    path = tmp_path / "t.yaml"
    path.write_text(TEMPLATES)
    specs = load_experiments(str(path), build=False)
    assert [s.name for s in specs] == ["k4", "k8"], "templates (.name, x-name) are not experiments"
    k4, k8 = specs
    assert k4.stop == {"training_iteration": 2} and k4.param_space["num_particles"] == 4
    assert k8.stop == {"training_iteration": 3}, "a key written next to `<<:` wins"
    assert k8.param_space["num_particles"] == 8 and k8.param_space["latent_dim"] == 4
    assert k8.param_space["evaluation_interval"] == 2, "a list of mappings merges every one"
    assert k4.key_lines["latent_dim"] == f"{path}:15", "a merged key keeps the line it was written on"
    code, out, err = _run(["train", "file", str(path), "--dry-run"], capfd)
    assert code == 0 and "warning" not in err, err
    assert "k4" in out and "k8" in out and ".defaults" not in out and "x-eval" not in out, out


def test_a_mapping_next_to_a_merge_key_replaces_the_merged_one_and_says_so(tmp_path, capfd):
    """YAML's merge is shallow: ``config: {...}`` next to ``<<: *defaults`` drops the template's config keys."""
    path = tmp_path / "t.yaml"
    path.write_text(TEMPLATES.replace("    <<: [*eval, *config]\n", ""))
    code, _, err = _run(["train", "file", str(path), "--dry-run"], capfd)
    # SMAC's defaults (a 5,000-step warm-up) under the template's 3-iteration stop: the warning says why, and the
    # stop arithmetic refuses the run that would never update
    assert code == 2 and "no gradient update would run" in err, err
    assert (
        f"rllib: warning: {path}:24: `config:` here replaces the `config:` merged by `<<:` (line 6) as a whole, "
        "without its env_config, seed, num_env_runners, rollout_fragment_length, min_sample_timesteps_per_iteration, "
        "... (YAML's merge is shallow); to keep them merge it too: `config: {<<: *config, ...}`"
    ) in err, err


def test_file_uri_storage_is_the_local_directory_and_checked_like_one(tmp_path, capfd):
    from smac_rllib.cli.experiment_spec import Overrides
    from smac_rllib.cli.yaml_loader import load_experiments

    path = tmp_path / "x.yaml"
    path.write_text(BASE)
    results = tmp_path / "my results"
    uri = "file://" + str(results).replace(" ", "%20")
    (spec,) = load_experiments(str(path), Overrides(storage_path=uri), build=False)
    assert spec.storage_path == str(results)
    (tmp_path / "a_file").write_text("x")
    code, _, err = _run(
        ["train", "file", str(path), "--storage-path", f"file://{tmp_path}/a_file/r", "--dry-run"], capfd
    )
    assert code == 2 and f"--storage-path: storage path {tmp_path}/a_file/r cannot be created" in err, err


def test_the_default_storage_path_is_checked_and_old_tune_variables_named(tmp_path, capfd, monkeypatch):
    path = tmp_path / "x.yaml"
    path.write_text(BASE)
    home = tmp_path / "home_is_a_file"
    home.write_text("x")
    monkeypatch.setenv("HOME", str(home))
    code, _, err = _run(["train", "file", str(path), "--dry-run"], capfd)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "the default storage path ~/ray_results (--storage-path DIR for another): storage path " in err
    assert f"cannot be created: {home} is a file" in err
    assert _run(["train", "file", str(path), "--storage-path", str(tmp_path), "--dry-run"], capfd)[0] == 0

    monkeypatch.setenv("TUNE_RESULT_DIR", str(tmp_path / "old"))
    code, _, err = _run(["train", "file", str(path), "--storage-path", str(tmp_path), "--dry-run"], capfd)
    assert code == 2 and f"unset it and pass --storage-path {tmp_path / 'old'}" in err, err

    monkeypatch.delenv("TUNE_RESULT_DIR")
    monkeypatch.setenv("TUNE_DISABLE_AUTO_CALLBACK_LOGGERS", "1")  # a run without result.json / progress.csv
    code, _, err = _run(["train", "file", str(path), "--storage-path", str(tmp_path), "--dry-run"], capfd)
    assert code == 2 and "TUNE_DISABLE_AUTO_CALLBACK_LOGGERS=1 is set: Tune would write no result.json" in err, err
    monkeypatch.setenv("TUNE_DISABLE_AUTO_CALLBACK_LOGGERS", "0")  # Tune reads exactly "1"
    assert _run(["train", "file", str(path), "--storage-path", str(tmp_path), "--dry-run"], capfd)[0] == 0

    monkeypatch.setenv("WANDB_MODE", "offine")  # W&B's settings would raise in every trial's logging actor
    code, _, err = _run(["train", "file", str(path), "--storage-path", str(tmp_path), "--wandb", "--dry-run"], capfd)
    assert code == 2 and "WANDB_MODE=offine is not a W&B mode; did you mean 'offline'?" in err, err
    assert _run(["train", "file", str(path), "--storage-path", str(tmp_path), "--dry-run"], capfd)[0] == 0  # W&B off


def test_dmc_names_with_other_separators_are_respelled():
    from smac_rllib.envs.names import respelled

    assert respelled("dmc.cartpole.swingup") == "dmc/cartpole-swingup"
    assert respelled("dm_control/ball_in_cup/catch") == "dmc/ball_in_cup-catch"
    assert respelled("dmc:Cheetah-Run") == "dmc/cheetah-run"
    assert respelled("dmc/cheetah-run") is None and respelled("Pendulum-v1") is None
    assert respelled("my_package.envs.Cartpole") is None, "a class path stays one"


# --------------------------------------------------------------------------------------------- --resume


def _finished_run(tmp_path, old_stop: dict, reached: int, checkpoint: bool):
    """What Tune leaves after a run that ended by its stop: tuner.pkl, the experiment state (its stopper pickled as
    Tune does) and the trial directory, with a complete checkpoint or none."""
    from smac_rllib.cli.checkpoints import write_marker
    from smac_rllib.cli.train import MetricStopper

    exp = tmp_path / "tiny"
    trial = exp / "SMAC_abcde_00000"
    trial.mkdir(parents=True)
    (exp / "tuner.pkl").write_bytes(b"")
    if checkpoint:
        (trial / "checkpoint_000000").mkdir()
        (trial / "checkpoint_000000" / "rllib_checkpoint.json").write_text("{}")
        write_marker(str(trial / "checkpoint_000000"), reached)
    trial_json = {"trial_id": "abcde_00000", "status": "TERMINATED", "relative_logdir": trial.name}
    metadata = {"last_result": {"training_iteration": reached}}
    stopper = {"_type": "CLOUDPICKLE_FALLBACK", "value": pickle.dumps(MetricStopper(old_stop)).hex()}
    state = {"trial_data": [[json.dumps(trial_json), json.dumps(metadata)]], "runner_data": {"_stopper": stopper}}
    (exp / "experiment_state-2026-01-01_00-00-00.json").write_text(json.dumps(state))
    return exp


@pytest.mark.parametrize("checkpoint", [True, False])
def test_a_stop_raised_in_the_file_continues_finished_trials_or_says_why_not(tmp_path, capfd, checkpoint):
    from smac_rllib.cli.resume_stop import all_finished, trials_to_continue

    exp = _finished_run(tmp_path, {"training_iteration": 2}, reached=2, checkpoint=checkpoint)
    assert all_finished(str(exp))
    assert trials_to_continue(str(exp), {"training_iteration": 2}, None, "x.yaml") == [], "the same stop: done"
    assert trials_to_continue(str(exp), {"training_iteration": 1}, None, "x.yaml") == [], "a lower stop: done"
    path = tmp_path / "x.yaml"
    path.write_text(BASE.replace("training_iteration: 2", "training_iteration: 5"))  # the stop raised in the file
    argv = ["train", "file", str(path), "--storage-path", str(tmp_path), "--resume", "--dry-run"]
    if checkpoint:
        (trial,) = trials_to_continue(str(exp), {"training_iteration": 5}, None, str(path))
        assert trial.trial_id == "abcde_00000"
        assert _run(argv, capfd)[0] == 0
        # a trial an ASHA scheduler ended (below the old stop) stays ended
        assert trials_to_continue(str(exp), {"training_iteration": 5}, {"type": "ASHA"}, "x.yaml")
        exp_asha = _finished_run(tmp_path / "asha", {"training_iteration": 9}, reached=2, checkpoint=True)
        assert trials_to_continue(str(exp_asha), {"training_iteration": 20}, {"type": "ASHA"}, "x.yaml") == []
    else:
        code, _, err = _run(argv, capfd)
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert (
            'trial abcde_00000 finished (training_iteration=2) without a checkpoint, so the raised stop '
            '{"training_iteration": 5} cannot continue it; start a new run instead (drop --resume)'
        ) in err, err


def test_a_stop_that_does_not_raise_the_runs_own_leaves_it_as_it_started(tmp_path):
    """A resume without the ``--stop`` the run started with (the file's stop lower, or on another key) continues to
    the run's own stop, and says so; a raise applies."""
    from smac_rllib.cli.resume_stop import effective_stop

    exp = str(_finished_run(tmp_path, {"training_iteration": 9}, reached=4, checkpoint=True))
    assert effective_stop(exp, {"training_iteration": 12}) == ({"training_iteration": 12}, None)
    assert effective_stop(exp, {"training_iteration": 9}) == ({"training_iteration": 9}, None)
    for given in ({"training_iteration": 3}, {"num_env_steps_sampled_lifetime": 100}):
        stop, note = effective_stop(exp, given)
        assert stop == {"training_iteration": 9}, given
        assert note.startswith('the run started with stop {"training_iteration": 9};') and "does not raise" in note


def test_the_pickled_stopper_is_read_without_building_anything_else():
    from smac_rllib.cli.resume_stop import _old_criteria

    class Evil:
        def __reduce__(self):
            return (os.system, ("true",))

    evil = {"runner_data": {"_stopper": {"value": pickle.dumps(Evil()).hex()}}}
    assert _old_criteria(evil) is None


# --------------------------------------------------------------------------------------------- --video


def test_video_frames_from_a_gymnasium_env_and_a_missing_renderer_in_one_line():
    import gymnasium as gym

    from smac_rllib.cli.rendering import render_options

    assert render_options("HalfCheetah-v5", {"max_episode_steps": 10}, 32) == {
        "render_mode": "rgb_array",
        "width": 32,
        "height": 32,
    }, "MuJoCo's gymnasium envs take the frame size"
    assert render_options("dmc/cartpole-balance", {"time_limit": 1.0}, 32) == {
        "render_mode": "rgb_array",
        "render_size": 32,
    }
    try:
        import pygame  # noqa: F401
    except ImportError:
        with pytest.raises(UserError, match=r"--video: Pendulum-v1 cannot render a frame \(pygame is not installed"):
            render_options("Pendulum-v1", {}, 32)
    else:  # classic control: no frame size of its own to set, its frames keep theirs
        assert render_options("Pendulum-v1", {}, 32) == {"render_mode": "rgb_array"}
    assert gym.spec("Pendulum-v1") is not None


def test_a_storage_path_with_a_variable_is_expanded_as_a_shell_does(tmp_path, monkeypatch):
    from smac_rllib.cli.experiment_spec import Overrides
    from smac_rllib.cli.yaml_loader import load_experiments

    monkeypatch.setenv("SMAC_TEST_RESULTS", str(tmp_path / "results"))
    path = tmp_path / "x.yaml"
    path.write_text(BASE.replace("tiny:\n", "tiny:\n  storage_path: $SMAC_TEST_RESULTS/file\n", 1))
    (spec,) = load_experiments(str(path), build=False)
    assert spec.storage_path == str(tmp_path / "results" / "file")
    (spec,) = load_experiments(str(path), Overrides(storage_path="${SMAC_TEST_RESULTS}/flag"), build=False)
    assert spec.storage_path == str(tmp_path / "results" / "flag")


def test_resuming_a_run_that_already_ended_says_so_without_starting_ray(tmp_path, capfd, ray_never_starts):
    """Every trial reached its stop and the file does not raise it: one line, exit 0, no Ray (it took 13 s and a
    full summary)."""
    exp = _finished_run(tmp_path, {"training_iteration": 2}, reached=2, checkpoint=True)
    path = tmp_path / "x.yaml"
    path.write_text(BASE)  # its stop: training_iteration 2, the run's own
    code, out, err = _run(["train", "file", str(path), "--storage-path", str(tmp_path), "--resume"], capfd)
    assert code == 0, err
    assert (
        f"== tiny: every trial of {exp} already ended (stop training_iteration >= 2); nothing to resume: raise the "
        "stop in the file (or pass --stop) to train further"
    ) in out, out
