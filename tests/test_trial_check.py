"""The dry run of every trial before Ray (cli/trial_check.py): valid sweeps pass it, identical grid points
are built once, env spaces are built once per (env, env_config), and a failure names the trial's varying keys.
The mistakes themselves are rows of tests/test_mistakes.py (``# --- trials as they run``)."""

from __future__ import annotations

import pytest

from smac_rllib.cli import grids, same_trials, trial_check, trial_envs, trial_module
from smac_rllib.cli.errors import UserError
from smac_rllib.cli.yaml_loader import load_experiments
from tests.test_mistakes import cfg


def _load(tmp_path, text: str):
    path = tmp_path / "trials.yaml"
    path.write_text(text)
    (spec,) = load_experiments(str(path))
    return spec


@pytest.mark.parametrize(
    "line, read",
    [
        (
            "replay_buffer_config: {grid_search: [{capacity: 150}, {capacity: 1000}]}",
            lambda c: c.replay_buffer_config["capacity"],
        ),
        ("env_config: {grid_search: [{time_limit: 1.0}, {time_limit: 2.0, action_repeat: 2}]}", lambda c: c.env_config),
    ],
    ids=["replay_buffer_config", "env_config"],
)
def test_a_grid_whose_values_are_whole_mappings_passes_the_dry_run(tmp_path, line, read):
    spec = _load(tmp_path, cfg(line))
    assert spec.num_trials == 2
    assert len({repr(read(c)) for c in spec.configs}) == 2, "each trial gets its own mapping"


def test_a_whole_mapping_grid_value_is_still_checked_key_by_key(tmp_path):
    with pytest.raises(
        UserError, match=r"trial evaluation_config\.explre=True: unknown evaluation_config key 'explre'"
    ):
        _load(tmp_path, cfg("evaluation_config: {grid_search: [{explore: false}, {explre: true}]}"))


def test_identical_trials_are_built_once_and_env_spaces_once_per_env_config(tmp_path, monkeypatch):
    builds, modules = [], []
    real_build, real_module = trial_envs._build, trial_module.check_module_spaces
    monkeypatch.setattr(trial_envs, "_SPACES", {})
    monkeypatch.setattr(trial_envs, "_build", lambda env, env_config: builds.append(env) or real_build(env, env_config))
    monkeypatch.setattr(
        trial_module,
        "check_module_spaces",
        lambda config, *spaces: modules.append(config) or real_module(config, *spaces),
    )
    # 2 x 2 grid points, but num_particles' two values are the same: 2 distinct trials, 1 env. A value listed twice
    # is refused when the file is read (grids.py); the dedup of trials still serves any that get past it.
    monkeypatch.setattr(grids, "_check_distinct", lambda options, name, where: None)
    spec = _load(tmp_path, cfg("num_particles: {grid_search: [4, 4]}", "latent_dim: {grid_search: [4, 8]}"))
    assert spec.num_trials == 4 and len(spec.configs) == 4
    assert len({id(c) for c in spec.configs}) == 2, "identical grid points share one built config"
    assert len(modules) == 2
    assert builds == ["dmc/cartpole-balance"], "the training env is built once (the evaluation uses the same one)"


def test_trial_labels_name_the_keys_that_vary():
    variants = [
        {"seed": 0, "num_particles": 8, "env_config": {"time_limit": 1.0}},
        {"seed": 0, "num_particles": 16, "env_config": {"time_limit": 1.0, "from_pixels": True}},
    ]
    assert same_trials.trial_labels(variants) == [
        "num_particles=8",
        "num_particles=16, env_config.from_pixels=True",
    ]
    assert same_trials.trial_labels([{"seed": 0}, {"seed": 0}]) == ["", ""], "identical trials: nothing varies"
    assert trial_check.in_trial("seed=1", "x.yaml:3: gamma=0 must be in (0, 1]") == (
        "x.yaml:3: trial seed=1: gamma=0 must be in (0, 1]"
    )


def test_read_when_conditions_switch_settings_off_by_value():
    """``Field.read_when`` per condition kind: equal to a value (types count: 1 is not True) or above a number."""
    from smac_rllib.algorithms.baselines.td3.td3 import TD3Config
    from smac_rllib.training.fields import When

    assert When("async_learning", True).holds(True) and not When("async_learning", True).holds(1)
    assert When("beta", 0, above=True).holds(0.1) and not When("beta", 0, above=True).holds(0.0)
    assert When("beta", 0, above=True).describe() == "beta > 0"
    config = TD3Config().training(target_noise=0.0)
    off = config.switched_off_keys({"target_noise_clip": 0.3, "policy_delay": 2})
    assert list(off) == ["target_noise_clip"] and "(only with target_noise > 0)" in off["target_noise_clip"]
    assert TD3Config().switched_off_keys({"target_noise_clip": 0.3}) == {}, "read with the default target noise"
    clipped = TD3Config().training(target_noise_clip=0.0).switched_off_keys({"target_noise": 0.2})
    assert "(only with target_noise_clip > 0)" in clipped["target_noise"], "noise clipped to [-0, 0] is no noise"
    both_off = TD3Config().training(target_noise=0.0, target_noise_clip=0.0)
    assert both_off.switched_off_keys({"target_noise": 0.0, "target_noise_clip": 0.0}) == {}, "each the other's switch"


def test_a_setting_read_under_two_conditions_is_off_when_either_fails():
    """``mlmc_average_level0`` needs the MLMC estimator and K >= 2 (at K = 1 the average is over one pair)."""
    from smac_rllib.algorithms.smac.smac import SMACConfig

    def off(**training):
        return SMACConfig().training(**training).switched_off_keys({"mlmc_average_level0": False})

    assert off(estimator="mlmc", num_particles=4) == {}
    assert "(only with estimator: mlmc)" in off(estimator="nested", num_particles=4)["mlmc_average_level0"]
    assert "(only with num_particles > 1)" in off(estimator="mlmc", num_particles=1)["mlmc_average_level0"]


def test_sweeps_of_settings_that_run_alike_by_the_env_or_by_rllib(tmp_path):
    """target_entropy auto is -|A| of the env the trial builds; estimators that coincide at K = 1; RLlib's evaluation
    settings without an evaluation interval; a CUDA switch on a CPU learner."""
    with pytest.raises(UserError, match=r"target_entropy='auto' is -1\.0 for dmc/cartpole-balance\): the sweep"):
        _load(tmp_path, cfg("target_entropy: {grid_search: [auto, -1.0]}"))
    assert _load(tmp_path, cfg("target_entropy: {grid_search: [auto, -0.5]}")).num_trials == 2
    no_eval = cfg("evaluation_duration: {grid_search: [1, 3]}").replace("    evaluation_interval: 2\n", "")
    with pytest.raises(UserError, match=r"is not read: no evaluation runs without evaluation_interval"):
        _load(tmp_path, no_eval)
    with pytest.raises(UserError, match=r"the trials differ only in evaluation_config.explore, which change how a run"):
        _load(tmp_path, cfg("evaluation_config: {grid_search: [{explore: false}, {explore: true}]}"))
    off_on_purpose = cfg("evaluation_duration: 3").replace("evaluation_interval: 2", "evaluation_interval: 0")
    assert _load(tmp_path, off_on_purpose).num_trials == 1, "evaluation turned off by writing evaluation_interval: 0"
    with pytest.raises(UserError, match=r"run the same settings \(evaluation_duration=1 is not read"):
        _load(tmp_path, off_on_purpose.replace("evaluation_duration: 3", "evaluation_duration: {grid_search: [1, 3]}"))
    with pytest.raises(UserError, match=r"estimator='mlmc' is the nested estimator at num_particles=1\)"):
        _load(tmp_path, cfg("num_particles: 1", "estimator: {grid_search: [nested, mlmc, naive]}"))
    assert _load(tmp_path, cfg("num_particles: 4", "estimator: {grid_search: [nested, mlmc]}")).num_trials == 2
    with pytest.raises(UserError, match=r"cuda_deterministic=True is not read with num_gpus_per_learner=0"):
        _load(tmp_path, cfg("cuda_deterministic: {grid_search: [true, false]}"))


def test_rllib_replay_keys_are_those_of_its_buffer_class(tmp_path):
    text = """\
sac:
  run: SAC
  env: Pendulum-v1
  stop: {training_iteration: 1}
  config:
    num_env_runners: 0
    replay_buffer_config: {type: PrioritizedEpisodeReplayBuffer, capacity: 2000, alhpa: 0.5}
"""
    with pytest.raises(UserError, match=r"replay_buffer_config\.alhpa=0\.5 is never read by SAC; did you mean 'alpha'"):
        _load(tmp_path, text)
    spec = _load(tmp_path, text.replace("alhpa", "alpha"))
    assert spec.configs[0].replay_buffer_config["alpha"] == 0.5
