"""The envs a trial makes, built once before Ray (cached per env and env_config) and stepped once, and what follows
from their spaces alone: the automatic ``target_entropy`` (-|A|) and the most a squashed policy's entropy can be."""

from __future__ import annotations

import gc
import os
import sys
import warnings

import math
from typing import Any

import gymnasium as gym

from smac_rllib.cli.episode_bounds import episode_return_range, episode_steps
from smac_rllib.cli.errors import one_line, warn
from smac_rllib.cli.ray_output import quiet
from smac_rllib.core.values import is_real
from smac_rllib.envs.registry import make_env


class TrialError(Exception):
    """A trial's mistake, to be located at config key ``key`` (its line in the file)."""

    def __init__(self, message: str, key: str = ""):
        super().__init__(message)
        self.key = key


_SPACES: dict[str, tuple | str | None] = {}  # (env, env_config) -> (observation, action) spaces, an error, or None


def env_spaces(env: Any, env_config: dict) -> tuple | None:
    """The spaces of ``env`` built once with ``env_config`` (then closed), cached; None for an env this process does
    not make (a class path, a Tune-registered name). A UserError when it cannot be made."""
    key = _key(env, env_config)
    if key not in _SPACES:
        _SPACES[key] = _build(env, dict(env_config or {}))
    found = _SPACES[key]
    if isinstance(found, str):
        raise TrialError(found, "env")
    return found


def _key(env: Any, env_config: dict | None) -> str:
    return repr((env, sorted((env_config or {}).items(), key=repr)))


def _make(env: str, env_config: dict):
    with quiet():
        return make_env(env, env_config) if env.startswith("dmc/") else gym.make(env, **env_config)


def _build(env: Any, env_config: dict) -> tuple | str | None:
    if not isinstance(env, str) or not (env.startswith("dmc/") or env in gym.registry):
        return None
    hook, sys.unraisablehook = sys.unraisablehook, lambda _: None  # a half-made GL context's __del__ traceback
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the GL library's own warnings: the one line below says what to do
            return _build_and_step(env, env_config)
    finally:
        gc.collect()
        sys.unraisablehook = hook


def _build_and_step(env: str, env_config: dict) -> tuple | str:
    try:
        made = _make(env, env_config)
    except gym.error.DependencyNotInstalled as e:
        return f"env {env!r} cannot be made here: {one_line(e)}"
    except Exception as e:  # noqa: BLE001 - the env's own words: the trial would fail the same way, after Ray
        config = f" with env_config {env_config}" if env_config else ""
        zeros = [k for k, v in env_config.items() if is_real(v) and v == 0] if isinstance(e, ZeroDivisionError) else []
        if zeros:  # `frame_skip: 0`: the env divides by it
            return (
                f"env {env!r} cannot be made{config}: {one_line(e)}, by env_config {zeros[0]}: 0; it must be above 0 "
                "(or leave it out for the env's default)"
            )
        return f"env {env!r} cannot be made{config}: {one_line(e)}; fix the env name or env_config"
    try:
        return _first_step(made, env, env_config) or (made.observation_space, made.action_space)
    finally:
        made.close()


def _first_step(made, env: str, env_config: dict) -> str | None:
    """Reset and one random step: some env settings fail only there (a gymnasium env's kwargs unpacked per step, a
    DMC task's physics). The trial would fail the same way after Ray, retried; here it is one line."""
    config = f" with env_config {env_config}" if env_config else ""
    try:
        with quiet():
            made.action_space.seed(0)
            for seed in range(FIRST_STEP_RESETS):  # one, unless the episode ended at once
                made.reset(seed=seed)
                if not made.step(made.action_space.sample())[2]:
                    break
            else:
                return _ends_at_once(env, env_config, config)
    except Exception as e:  # noqa: BLE001 - the env's own words
        gl = os.environ.get("MUJOCO_GL")
        if "rendering with MUJOCO_GL" in str(e):  # the machine's GL, not the env_config
            return (
                f"env {env!r} cannot render with MUJOCO_GL={gl} here (a GL backend without its display or library); "
                "unset MUJOCO_GL (egl, the default, renders headless) and PYOPENGL_PLATFORM"
            )
        return f"env {env!r}{config} fails at its first step: {one_line(e)}; fix env_config"
    return None


FIRST_STEP_RESETS = 3


def _ends_at_once(env: str, env_config: dict, config: str) -> str:
    """Every episode terminated at its first step: no transition to learn from (a reversed healthy range, a
    termination threshold the reset state already crosses)."""
    reversed_ranges = [
        f"{key}: [{value[0]}, {value[1]}]"
        for key, value in env_config.items()
        if isinstance(value, (list, tuple)) and len(value) == 2 and all(map(is_real, value)) and value[0] > value[1]
    ]
    cause = (
        f"{', '.join(reversed_ranges)} lists its high end first: write [low, high]"
        if reversed_ranges
        else "fix the env_config that ends it (a termination threshold the start state already crosses?)"
    )
    return (
        f"env {env!r}{config} ends every episode at its first step ({FIRST_STEP_RESETS} resets, random actions: "
        f"terminated after 1 step each), so there is nothing to learn; {cause}"
    )


def env_values(config) -> dict[str, tuple]:
    """Automatic settings whose value comes from the env's spaces: ``target_entropy: auto`` is -|A|."""
    if getattr(config, "target_entropy", None) != "auto":
        return {}
    try:
        spaces = env_spaces(config.env, config.env_config)
    except TrialError:
        return {}  # the trial's own check names it
    if spaces is None or not isinstance(spaces[1], gym.spaces.Box):
        return {}
    value = -float(math.prod(spaces[1].shape))
    return {"target_entropy": (value, f"{value!r} for {config.env}")}


def check_target_entropy(config, action_space) -> None:
    """A squashed policy's actions lie in the box [-1, 1]^|A|, whose entropy is at most |A| log 2 (the uniform
    one): a higher ``target_entropy`` is never reached, so the temperature grows without bound and the policy ends
    uniform. The default ("auto") is -|A| (docs/design.md §3)."""
    target = getattr(config, "target_entropy", None)
    if not is_real(target) or not isinstance(action_space, gym.spaces.Box) or len(action_space.shape) != 1:
        return
    most = action_space.shape[0] * math.log(2.0)
    if target >= most:
        raise TrialError(
            f"target_entropy: {target} is never reached: {config.env}'s {action_space.shape[0]} action dimension(s) "
            f"squashed to [-1, 1] allow at most |A| log 2 = {most:.3g} nats, so the temperature alpha would grow "
            f"without bound; write target_entropy: auto (= -|A| = {-action_space.shape[0]}, the paper's) or a value "
            f"below {most:.3g}",
            "target_entropy",
        )
    usual = -action_space.shape[0]
    if target <= 2 * usual - 1 and (config.env, target) not in _WARNED_TARGETS:
        _WARNED_TARGETS.add((config.env, target))
        copied = f" (a value copied from a {-int(target)}-D task?)" if float(target).is_integer() else ""
        warn(
            f"target_entropy: {target} is far below -|A| = {usual}, the usual target for {config.env}'s "
            f"{-usual}-D action{copied}: alpha shrinks until the policy is near deterministic; write "
            "target_entropy: auto (-|A|) unless a low target is the experiment"
        )


def _check_evaluation_return_stop(stop: dict, config, random_return: float | None) -> None:
    key = "evaluation/env_runners/episode_return_mean"
    threshold, returns = stop.get(key), episode_return_range(config.env, config.env_config)
    if not is_real(threshold) or random_return is None or random_return < threshold:
        return
    if returns is not None and threshold <= returns[0]:
        return  # met by every episode: the stop rules say so (cli/episode_bounds.py)
    scale = (
        f" (its returns lie in [{returns[0]:.4g}, {returns[1]:.4g}]: 90% is {0.9 * returns[1]:.4g})" if returns else ""
    )
    raise TrialError(
        f"stop criterion {key}={threshold:g} is met by an episode of uniform random actions ({config.env} at random "
        f"returned {random_return:.4g}), so the run would stop at its first evaluation; raise the threshold{scale}",
        "stop",
    )


_WARNED_TARGETS: set = set()
RANDOM_EPISODE_CAP = 10_000  # agent steps in all: a longer episode is not rolled out (its return stays unknown)
RANDOM_EPISODES = 5  # the first result's mean return is one such episode: a stop is compared with the best of them
_REWARD_ONLY = ("time_limit", "action_repeat")  # what a dmc episode's return depends on (not its pixels)
_RANDOM_RETURNS: dict[str, list[float] | None] = {}


def random_episode_returns(env: Any, env_config: dict) -> list[float] | None:
    """The returns of ``RANDOM_EPISODES`` episodes of uniform random actions (seeds 0, 1, ...), cached; None where the
    env is not made here or its first episode does not end within ``RANDOM_EPISODE_CAP`` steps."""
    if isinstance(env, str) and env.startswith("dmc/"):
        env_config = {key: value for key, value in (env_config or {}).items() if key in _REWARD_ONLY}
    key = _key(env, env_config)
    if key not in _RANDOM_RETURNS:
        _RANDOM_RETURNS[key] = _roll_random(env, dict(env_config or {}))
    return _RANDOM_RETURNS[key]


def _roll_random(env: Any, env_config: dict) -> list[float] | None:
    if env_spaces(env, env_config) is None:
        return None
    made = _make(env, env_config)
    returns: list[float] = []
    try:
        made.action_space.seed(0)
        steps = 0
        for seed in range(RANDOM_EPISODES):
            made.reset(seed=seed)
            total, done = 0.0, False
            while not done:
                _, reward, terminated, truncated, _ = made.step(made.action_space.sample())
                total, steps, done = total + float(reward), steps + 1, terminated or truncated
                if steps >= RANDOM_EPISODE_CAP and not done:
                    return returns or None
            returns.append(total)
        return returns
    finally:
        made.close()


def check_return_stop_after_warm_up(stop: dict, config) -> None:
    """A training-return stop that the warm-up's uniform random episodes already meet ends the run before its first
    update (our loops act uniformly at random until ``num_steps_sampled_before_learning_starts``); an evaluation-return
    stop that a random episode meets ends it at its first evaluation."""
    key = "env_runners/episode_return_mean"
    threshold = stop.get(key)
    if not is_real(threshold) and is_real(stop.get(f"evaluation/{key}")):
        _check_evaluation_return_stop(stop, config, _first(random_episode_returns(config.env, config.env_config)))
    if not is_real(threshold) or not hasattr(config, "async_learning"):  # not one of our loops
        return
    episode = episode_steps(config.env, config.env_config)
    if not episode:
        return
    warm_up = config.resolved("num_steps_sampled_before_learning_starts")
    returns = episode_return_range(config.env, config.env_config)
    if returns is not None and threshold <= returns[0]:
        return  # met by every episode: the stop rules say so (cli/episode_bounds.py)
    random_returns = random_episode_returns(config.env, config.env_config)
    _check_evaluation_return_stop(stop, config, _first(random_returns))
    random_return = max(random_returns) if random_returns else None
    if random_return is not None and random_return >= threshold:
        first = (
            "before its first gradient update"
            if warm_up >= episode
            else f"at its first episode ({episode:,} env steps, {warm_up:,} of them uniform random warm-up)"
        )
        raise TrialError(
            f"stop criterion {key}={threshold:g} is met by uniform random actions ({len(random_returns)} episodes of "
            f"{config.env} at random returned up to {random_return:.4g}), so the run would stop {first} (a stop "
            f"ends the run at the first criterion met); raise the threshold above "
            f"{random_return:.4g}, or stop on evaluation/env_runners/episode_return_mean",
            "stop",
        )


def _first(returns: list[float] | None) -> float | None:
    return returns[0] if returns else None
