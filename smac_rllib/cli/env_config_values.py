"""env_config values that build an env here but not as the run needs it: checked before Ray (``env_checks.check_env``
calls ``check_env_config_values``).

- ``render_mode: human`` (a window per env, in worker processes without a display); DreamerV3's float frames
  (``pixel_format: float``) for one of our algorithms, which scale uint8 frames themselves.

- A relative file path (``xml_file: ./my_cheetah.xml``): Tune runs each trial in its own directory, where the path
  names nothing.
- A quoted number or boolean for a gymnasium env's keyword argument whose default is a number or a boolean
  (``g: "3.71"``): gymnasium passes the string on, and the env fails (or computes with a string) at its first step.
- A DMC task without a time limit (the LQR tasks end only at the origin) and no ``env_config.time_limit``: its episodes
  may never end, so no return, and no evaluation, ever comes.
"""

from __future__ import annotations

import functools
import inspect
import math
import os
from typing import Any

import gymnasium as gym

from smac_rllib.cli.errors import UserError
from smac_rllib.core.values import is_real
from smac_rllib.envs.validation import task_timing


def check_env_config_values(env: str, env_config: dict, algo_class: type, line_of) -> None:
    """The checks of the module docstring for one env and its env_config (no grid values)."""
    if env_config.get("render_mode") == "human":
        raise UserError(
            "env_config.render_mode='human' opens a window in every env: training runs in Ray's worker processes, "
            "which have no display and show no frames; remove render_mode (`rllib evaluate CKPT --video` records an "
            "mp4 of the trained policy)",
            line_of("env_config", "render_mode"),
        )
    if env_config.get("pixel_format") == "float" and algo_class.__module__.startswith("smac_rllib"):
        raise UserError(
            f"env_config.pixel_format='float' is for RLlib's DreamerV3: {algo_class.__name__} takes uint8 frames and "
            "scales them itself (float frames would be scaled twice, in a replay 4x larger); remove pixel_format",
            line_of("env_config", "pixel_format"),
        )
    for key, value in env_config.items():
        if isinstance(value, str) and _relative_file(value):
            raise UserError(
                f"env_config.{key}={value!r} is a relative path: Tune runs each trial in its own directory, where it "
                f"names nothing; write the absolute path {os.path.abspath(value)!r}",
                line_of("env_config", key),
            )
    if env.startswith("dmc/"):
        _check_time_limit(env, env_config, line_of)
    elif "max_episode_steps" in env_config and env_config["max_episode_steps"] is None:
        limit = _registered_limit(env)
        raise UserError(
            f"env_config.max_episode_steps=null does not lift {env}'s time limit: gymnasium reads None as the "
            f"registered limit ({limit} steps); write a number of steps (a very long episode delays every return and "
            "evaluation) or remove the key",
            line_of("env_config", "max_episode_steps"),
        )
    else:
        _check_gym_kwarg_types(env, env_config, line_of)


def _relative_file(value: str) -> bool:
    return not os.path.isabs(value) and ("/" in value or os.sep in value) and os.path.isfile(value)


def _check_time_limit(env: str, env_config: dict, line_of) -> None:
    if is_real(env_config.get("time_limit")):
        return
    try:
        _, limit = task_timing(env)
    except Exception:  # noqa: BLE001 - an unknown task is said by the name check
        return
    if not math.isfinite(limit):
        raise UserError(
            f"{env} has no time limit (an episode ends only when the task reaches its goal state), so its episodes, "
            "their returns and any evaluation may never end; set env_config.time_limit (simulated seconds, e.g. 10)",
            line_of("env_config"),
        )


def _registered_limit(env: str) -> Any:
    try:
        return gym.spec(env).max_episode_steps
    except Exception:  # noqa: BLE001 - not a registered id: said by the name check
        return "its registered"


@functools.lru_cache(maxsize=64)
def _gym_defaults(env: str) -> dict[str, Any]:
    """{keyword argument: default} of a registered gymnasium env's constructor ({} when it cannot be loaded)."""
    try:
        spec = gym.spec(env)
        creator = spec.entry_point
        if isinstance(creator, str):
            creator = gym.envs.registration.load_env_creator(creator)
        params = inspect.signature(creator).parameters
    except Exception:  # noqa: BLE001 - an env we cannot inspect: nothing to compare with
        return {}
    return {name: p.default for name, p in params.items() if p.default is not inspect.Parameter.empty}


def _check_gym_kwarg_types(env: str, env_config: dict, line_of) -> None:
    defaults = _gym_defaults(env)
    for key, value in env_config.items():
        default = defaults.get(key)
        if not isinstance(value, str) or default is None or isinstance(default, str):
            continue
        kind = "true or false" if isinstance(default, bool) else "a number" if is_real(default) else None
        if kind:
            raise UserError(
                f"env_config.{key}={value!r} is a string, but {env}'s {key} is {kind} (default {default!r}); write "
                f"it without quotes",
                line_of("env_config", key),
            )
