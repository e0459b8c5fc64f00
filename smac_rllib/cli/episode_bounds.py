"""What one episode of a task allows, from its definition alone (no env is built; a DMC task's MJCF model is loaded
once for its time limit): its length in agent steps and the range of its return. ``check_episode_stops``
compares the stop's return and episode-length thresholds with them (``cli/horizon.py``'s rule 2)."""

from __future__ import annotations

import math
from typing import Any

from smac_rllib.cli.errors import UserError
from smac_rllib.cli.errors import yaml_number as _num
from smac_rllib.cli.experiment_spec import ExperimentSpec
from smac_rllib.cli.results import action_repeat
from smac_rllib.core.values import is_int, is_real
from smac_rllib.envs.names import PREFIX
from smac_rllib.envs.validation import episode_control_steps

RETURN_KEYS = ("env_runners/episode_return_mean", "evaluation/env_runners/episode_return_mean")
EPISODE_COUNT_KEYS = ("env_runners/num_episodes_lifetime", "num_episodes_lifetime", "episodes_total")


def episode_steps(env: Any, env_config: dict | None) -> int | None:
    """Agent steps of one episode: DMC from its time limit and action repeat, gymnasium from its registration."""
    env_config = env_config if isinstance(env_config, dict) else {}
    if isinstance(env, str) and env.startswith(PREFIX):
        control = _control_steps(env, env_config)
        return None if control is None else -(-control // action_repeat({"env_config": env_config}))
    if is_int(env_config.get("max_episode_steps")):
        return env_config["max_episode_steps"]  # a gymnasium env's own limit, as the registry applies it
    try:
        import gymnasium as gym  # lazy: only for a gymnasium env name

        return gym.spec(env).max_episode_steps
    except Exception:  # noqa: BLE001 - not a registered gymnasium id: unknown
        return None


def episode_stop_steps(stop: dict, config) -> int | None:
    """The most env steps sampled when an episode-count stop fires: N episodes of at most L agent steps, plus what the
    run's other envs (P in all) have in progress, < L each: (N + P - 1) x L. None without such a stop."""
    counts = [stop[key] for key in EPISODE_COUNT_KEYS if is_real(stop.get(key))]
    length = episode_steps(config.env, config.env_config) if counts else None
    if not length:
        return None
    envs = max(1, getattr(config, "num_env_runners", 0) or 0) * max(1, getattr(config, "num_envs_per_env_runner", 1))
    return int((math.ceil(min(counts)) + envs - 1) * length)


# Per-step reward ranges of gymnasium envs whose reward is bounded (others: unknown, nothing is checked).
# Pendulum-v1: -(theta^2 + 0.1 theta_dot^2 + 0.001 u^2), |theta| <= pi, |theta_dot| <= 8, |u| <= 2.
# InvertedPendulum: 1 per step while the pole is up (v5: int(not terminated); v4: 1).
GYM_STEP_REWARDS = {
    "Pendulum-v1": (-(math.pi**2 + 0.1 * 8**2 + 0.001 * 2**2), 0.0),
    "InvertedPendulum-v4": (0.0, 1.0),
    "InvertedPendulum-v5": (0.0, 1.0),
    # Reacher, Pusher: minus weighted distances and control costs (weights >= 0): at most 0, no useful lower bound
    **dict.fromkeys(("Reacher-v4", "Reacher-v5", "Pusher-v4", "Pusher-v5"), (-math.inf, 0.0)),
}

GYM_GOAL_BONUS = {"MountainCarContinuous-v0": (0.1, 100.0)}  # (the most a step's action costs, the goal's reward)


def episode_return_range(env: Any, env_config: dict | None) -> tuple[float, float, str] | None:
    """(lowest, highest return of one episode, why): DMC rewards are in [0, 1] per control step, a gymnasium env's
    per-step range (``GYM_STEP_REWARDS``) times its episode's steps; None when unknown."""
    env_config = env_config if isinstance(env_config, dict) else {}
    if isinstance(env, str) and env.startswith(PREFIX):
        control = _control_steps(env, env_config)
        return None if control is None else (0.0, float(control), f"{control} control steps x a reward in [0, 1]")
    low, high = GYM_STEP_REWARDS.get(env, (None, None)) if isinstance(env, str) else (None, None)
    steps = episode_steps(env, env_config)
    if env in GYM_GOAL_BONUS and steps:  # -0.1 a^2 per step, +100 once at the goal (which ends the episode)
        cost, bonus = GYM_GOAL_BONUS[env]
        return -cost * steps, bonus, f"{_num(bonus)} once at the goal, minus up to {_num(cost)} per step of {steps}"
    if low is None or not steps:
        return None
    return low * steps, high * steps, f"{steps} steps x a reward in [{low:.4g}, {_num(high)}]"


def episode_return_bound(env: Any, env_config: dict | None) -> float | None:
    """The highest return of one episode (``episode_return_range``); None when unknown."""
    returns = episode_return_range(env, env_config)
    return None if returns is None else returns[1]


def _control_steps(env: str, env_config: dict) -> int | None:
    limit = env_config.get("time_limit")
    try:
        return episode_control_steps(env, limit if is_real(limit) else None)
    except Exception:  # noqa: BLE001 - an unknown task is reported by the env checks
        return None


def fixed_length(env: Any) -> bool:
    """A DMC task whose episodes always run to the time limit (the LQR tasks end at the origin)."""
    return isinstance(env, str) and env.startswith(PREFIX) and "lqr" not in env


def check_episode_stops(spec: ExperimentSpec, config, steps_at_stop: int | None) -> None:
    """``cli/horizon.py``'s rule 2: a return threshold above the task's bound (or at it: only a perfect episode reaches
    it), an episode length above the task's episode, or at most it on a DMC task (its episodes never end early)."""
    _check_an_episode_ends(spec, config, steps_at_stop)
    for key, value in spec.stop.items():
        last = key.rsplit("/", 1)[-1]
        if key not in RETURN_KEYS and not last.startswith("episode_len_"):
            continue
        env = config.get_evaluation_config_object() if key.startswith("evaluation/") else config
        if key in RETURN_KEYS:
            returns = episode_return_range(env.env, env.env_config)
            if returns is None:
                continue
            low, bound, why = returns
            most = f"returns at most {_num(bound)} ({why})"
            if value <= low:  # Tune stops at result[key] >= value
                raise UserError(
                    f"stop criterion {key}={_num(value)} is met by every episode: an episode of {env.env} returns at "
                    f"least {low:.6g} ({why}), so the run would stop at its first result; set a threshold in "
                    f"({low:.6g}, {_num(bound)}]",
                    spec.source,
                )
        else:
            bound = episode_steps(env.env, env.env_config)
            most = f"lasts at most {_num(bound or 0)} agent steps (its time limit)"
        if key in RETURN_KEYS and bound is not None and value == bound:
            example = (
                f"(e.g. {_num(round(low + 0.9 * (bound - low), 6))})"
                if math.isfinite(low)
                else "(the returns have no lower bound: take one a trained run reaches)"
            )
            raise UserError(
                f"stop criterion {key}={_num(value)} is the most an episode of {env.env} can return ({why}): only an "
                f"episode with the highest reward at every step reaches it, so the run would not stop; set a "
                f"threshold below it {example} or stop on training_iteration",
                spec.source,
            )
        if key not in RETURN_KEYS and bound is not None and value <= bound and fixed_length(env.env):
            raise UserError(
                f"stop criterion {key}={_num(value)} is met by every episode: {env.env}'s episodes never end early, "
                f"each lasts {_num(bound)} agent steps, so the run would stop at its first result; stop on a return "
                "(env_runners/episode_return_mean) or on training_iteration",
                spec.source,
            )
        if bound is not None and value > bound:
            raise UserError(
                f"stop criterion {key}={_num(value)} is never reached: an episode of {env.env} {most}; lower it to "
                f"<= {_num(bound)}",
                spec.source,
            )
    _check_smoothing_window(spec, config, steps_at_stop)


def _check_smoothing_window(spec: ExperimentSpec, config, steps: int | None) -> None:
    """A training-return stop averages the last ``metrics_num_episodes_for_smoothing`` episodes: a window the user set
    longer than the run's episodes averages them all, the warm-up's random-action episodes included, to the end."""
    window = getattr(config, "metrics_num_episodes_for_smoothing", None)
    if RETURN_KEYS[0] not in spec.stop or "metrics_num_episodes_for_smoothing" not in spec.param_space:
        return
    length = episode_steps(config.env, config.env_config)
    resolved = getattr(config, "resolved", None)
    warm_up = resolved("num_steps_sampled_before_learning_starts") if callable(resolved) else 0
    if not (steps and length and is_int(window)) or warm_up < length:
        return
    episodes = steps // length
    if window >= episodes:
        raise UserError(
            f"metrics_num_episodes_for_smoothing={window} is more than the {episodes} episodes this run collects "
            f"({steps:,} env steps of {length}-step episodes): the stop's {RETURN_KEYS[0]} is then the mean of every "
            f"episode so far, the warm-up's {warm_up // length} random-action ones included; lower the window (e.g. "
            f"{max(1, episodes // 4)}) or stop on {RETURN_KEYS[1]}",
            spec.key_lines.get("metrics_num_episodes_for_smoothing", spec.source),
        )


def _check_an_episode_ends(spec: ExperimentSpec, config, steps_at_stop: int | None) -> None:
    """A training episode's result (``env_runners/episode_...``) that the stop, the checkpoint score or ASHA reads
    comes once an episode ends: on a DMC task (episodes run to the time limit) a run whose env steps by the stop end
    none would rank or stop on nothing."""
    score, metric = spec.checkpoint_config.get("checkpoint_score_attribute"), (spec.scheduler or {}).get("metric")
    named = [(k, "stop criterion") for k in spec.stop] + [
        (score, "checkpoint_score_attribute"),
        (metric, "ASHA metric"),
    ]
    length = episode_steps(config.env, config.env_config)
    if not (steps_at_stop and length and fixed_length(config.env) and steps_at_stop < length):
        return
    for key, what in named:
        if isinstance(key, str) and key.startswith("env_runners/episode_"):
            raise UserError(
                f"{what} {key} is reported once a training episode ends, and the run's ~{steps_at_stop:,} env steps "
                f"end none of {config.env}'s {length:,}-step episodes; raise the stop past {length:,} env steps, or "
                "rank on evaluation/env_runners/episode_return_mean (with evaluation_interval)",
                spec.source,
            )
