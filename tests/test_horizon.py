"""The arithmetic of ``smac_rllib/cli/horizon.py`` in closed form, and the tuned examples against it: every one passes
as written, and at a hundredth of its stop it either still runs a gradient update (and an evaluation where
checkpoints are ranked by evaluation) or is refused in one line naming what to scale.
The refusals themselves are rows of ``tests/test_mistakes.py`` (``# --- measured against the stop``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from smac_rllib.cli import horizon
from smac_rllib.cli.errors import UserError
from smac_rllib.cli.episode_bounds import episode_return_bound, episode_return_range, episode_steps
from smac_rllib.cli.horizon import env_steps_at_stop, iterations_at_stop, steps_per_iteration, updates_at_stop

REPO = Path(__file__).resolve().parents[1]
TUNED_EXAMPLES = sorted((REPO / "tuned_examples").glob("*.yaml"))
STEPS = "env_runners/num_env_steps_sampled_lifetime"


class Config:
    """The fields the arithmetic reads, with our configs' defaults (training/fields.py)."""

    def __init__(self, **fields):
        self.min_time_s_per_iteration = 0
        self.min_sample_timesteps_per_iteration = 1000
        self.rollout_fragment_length = 10
        self.num_envs_per_env_runner = 1
        self.num_env_runners = 0
        self.async_learning = True
        self.updates_per_env_step = 1.0
        self.num_steps_sampled_before_learning_starts = 5000
        self.__dict__.update(fields)

    def resolved(self, name):
        return getattr(self, name)

    def get_rollout_fragment_length(self):
        return self.rollout_fragment_length


@pytest.mark.parametrize(
    "fields, steps",
    [
        ({}, 1000),  # 100 fragments of 10
        ({"min_sample_timesteps_per_iteration": 0}, 10),  # one round
        ({"num_env_runners": 16, "rollout_fragment_length": 64, "async_learning": False}, 1024),  # 1 round of 1024
        ({"num_env_runners": 16, "rollout_fragment_length": 64}, 1024),  # 16 requests of 64
        ({"num_env_runners": 3, "rollout_fragment_length": 125, "async_learning": False}, 1125),  # 3 rounds of 375
        ({"num_env_runners": 3, "rollout_fragment_length": 125}, 1000),  # 8 requests of 125
        ({"num_envs_per_env_runner": 4, "rollout_fragment_length": 300}, 1200),  # 1 request of 4 x 300
        ({"min_time_s_per_iteration": 1}, None),  # iterations last a time: unknown
    ],
)
def test_steps_per_iteration_is_the_first_whole_round_at_the_minimum(fields, steps):
    assert steps_per_iteration(Config(**fields)) == steps


def test_rllibs_own_algorithms_count_their_own_way():
    class RLlibConfig:  # no resolved(), no async_learning
        min_time_s_per_iteration = 0
        min_sample_timesteps_per_iteration = 1000

    assert steps_per_iteration(RLlibConfig()) is None
    assert iterations_at_stop({"training_iteration": 7}, RLlibConfig()) == 7  # the iteration stop still counts
    assert iterations_at_stop({STEPS: 5000}, RLlibConfig()) is None
    assert env_steps_at_stop({"training_iteration": 7}, RLlibConfig()) is None


@pytest.mark.parametrize(
    "stop, iterations",
    [
        ({"training_iteration": 2}, 2),
        ({"training_iteration": 2.5}, 3),  # a stop fires at the first result at or above its value
        ({STEPS: 5000}, 5),
        ({STEPS: 5001}, 6),
        ({"num_env_steps_sampled_lifetime": 999}, 1),
        ({STEPS: 500_000, "training_iteration": 20}, 20),  # the earlier of the two
        ({"time_total_s": 60}, None),  # can only end earlier: no bound
        ({"evaluation/env_runners/episode_return_mean": 800}, None),
        ({"time_total_s": 60, "training_iteration": 4}, 4),
    ],
)
def test_iterations_and_env_steps_at_the_stop(stop, iterations):
    config = Config()
    assert iterations_at_stop(stop, config) == iterations
    assert env_steps_at_stop(stop, config) == (None if iterations is None else iterations * 1000)


@pytest.mark.parametrize(
    "fields, stop_steps, updates",
    [
        ({}, 5000, 0),  # the stop is the warm-up's last step: nothing granted
        ({}, 6000, 1000),  # one update per env step stored after it
        ({"updates_per_env_step": 0.2}, 6000, 200),
        ({"updates_per_env_step": 0.2, "num_steps_sampled_before_learning_starts": 5996}, 6000, 0),  # 4 x 0.2 < 1
        ({"updates_per_env_step": 0.2, "num_steps_sampled_before_learning_starts": 5995}, 6000, 1),
        ({"num_steps_sampled_before_learning_starts": 0}, 1000, 1000),
    ],
)
def test_updates_at_the_stop_are_the_rate_limiters_grant(fields, stop_steps, updates):
    assert updates_at_stop({STEPS: stop_steps}, Config(**fields)) == updates


@pytest.mark.parametrize(
    "env, env_config, steps, bound",
    [
        ("dmc/cheetah-run", {}, 1000, 1000),  # 10 s at 0.01 s per control step
        ("dmc/cheetah-run", {"action_repeat": 2}, 500, 1000),  # each agent step sums 2 rewards <= 1
        ("dmc/cheetah-run", {"from_pixels": True}, 500, 1000),  # pixels: action_repeat 2 by default
        ("dmc/cheetah-run", {"action_repeat": 3}, 334, 1000),  # the last agent step stops at the episode's end
        ("dmc/cartpole-balance", {"time_limit": 1.0}, 100, 100),
        ("dmc/cartpole-balance", {"time_limit": 1.0, "action_repeat": 8}, 13, 100),
        ("dmc/ball_in_cup-catch", {}, 1000, 1000),  # 20 s at 0.02 s
        ("dmc/lqr-lqr_2_1", {}, None, None),  # no time limit
        ("HalfCheetah-v5", {}, 1000, None),  # gymnasium: its registered max_episode_steps, no known bound
        ("HalfCheetah-v5", {"max_episode_steps": 100}, 100, None),
        ("NoSuchEnv-v0", {}, None, None),
        ("Pendulum-v1", {}, 200, 0.0),  # its reward is a cost: <= 0 at every step
        ("Pendulum-v1", {"max_episode_steps": 50}, 50, 0.0),
    ],
)
def test_episode_length_and_return_bound(env, env_config, steps, bound):
    assert episode_steps(env, env_config) == steps
    assert episode_return_bound(env, env_config) == bound


def test_pendulum_lowest_return_is_its_largest_cost_at_every_step():
    low, high, _ = episode_return_range("Pendulum-v1", {})
    assert high == 0.0 and low == pytest.approx(-16.2736044 * 200)  # pi^2 + 0.1 * 8^2 + 0.001 * 2^2 per step
    assert episode_return_range("dmc/cartpole-balance", {"time_limit": 1.0})[:2] == (0.0, 100.0)


# --------------------------------------------------------------------------------------------- tuned examples


def _specs(path: Path):
    import smac_rllib
    from smac_rllib.cli.yaml_loader import load_experiments

    smac_rllib.register()
    return load_experiments(str(path))


@pytest.mark.parametrize("path", TUNED_EXAMPLES, ids=lambda p: p.name)
def test_every_tuned_example_passes_as_written(path):
    for spec in _specs(path):
        horizon.check_horizon(spec)


@pytest.mark.parametrize("path", TUNED_EXAMPLES, ids=lambda p: p.name)
def test_a_tuned_example_at_a_hundredth_of_its_stop_updates_or_names_what_to_scale(path):
    """Mechanism 5's laptop property, on the arithmetic: a refusal is one line that says what to lower or raise."""
    for spec in _specs(path):
        spec.stop = {key: value / 100 for key, value in spec.stop.items()}
        try:
            horizon.check_horizon(spec)
        except UserError as e:
            message = str(e)
            assert "\n" not in message and ("lower " in message or "raise " in message), message
            continue
        for config in spec.configs:
            updates = updates_at_stop(spec.stop, config)
            assert updates is None or updates >= 1, spec.name
            score = spec.checkpoint_config.get("checkpoint_score_attribute") or ""
            iterations = iterations_at_stop(spec.stop, config)
            if score.startswith("evaluation/") and iterations is not None:
                assert config.evaluation_interval <= iterations, spec.name


def test_a_warm_up_only_run_passes_with_warm_up_only_true(tmp_path, capfd):
    from smac_rllib.cli.main import main

    text = (REPO / "tests" / "data" / "tiny.yaml").read_text()
    text = text.replace("learning_starts: 100", "learning_starts: 300")
    path = tmp_path / "warm_up.yaml"
    path.write_text(text)  # 3 iterations x 100 env steps = the warm-up: no update
    assert main(["train", "file", str(path), "--dry-run"]) == 2
    assert "no gradient update would run" in capfd.readouterr().err
    path.write_text(text.replace("  run: SMAC\n", "  run: SMAC\n  warm_up_only: true\n"))
    assert main(["train", "file", str(path), "--dry-run"]) == 0, capfd.readouterr().err


def test_a_sequence_batch_larger_than_the_whole_run_is_refused(tmp_path, capfd):
    """Rule 8 for pixels: B x T sequence steps per update past every env step the run collects (each sequence fits
    in the warm-up, so the warm-up's own batch rule passes)."""
    from smac_rllib.cli.main import main

    text = (REPO / "tuned_examples" / "smac_pixels_quick.yaml").read_text()
    text = text.replace("env_runners/num_env_steps_sampled_lifetime: 6000", "training_iteration: 3")
    path = tmp_path / "big_batch.yaml"
    path.write_text(text.replace("batch_size_B: 16", "batch_size_B: 64"))  # 64 x 32 = 2,048 > 3 x 500
    assert main(["train", "file", str(path), "--dry-run"]) == 2
    assert "one update replays 2,048 env steps (batch_size_B x batch_length_T = 64 x 32), more than the run ever " in (
        capfd.readouterr().err
    )
