"""Value checks of a ``dmc/<domain>-<task>`` env_config, before any env (or Ray) is built.

``env_config_errors(name, env_config)`` returns ``(key, message)`` pairs, each message naming the fix; ``DMCEnv``
raises on the same mistakes, but only inside an env runner, after Ray started. Types are checked elsewhere
(``smac_rllib.cli.checks`` against ``DMCEnv.__init__``'s annotations); a value of the wrong type is left alone here.
"""

from __future__ import annotations

import functools
import logging
import math
import warnings
from typing import Any

from dm_control import suite

from smac_rllib.core.values import is_int, is_real
from smac_rllib.envs.names import parse_env_name

__all__ = [
    "PIXEL_FORMATS",
    "PIXEL_ONLY_KEYS",
    "SEED_BOUND",
    "env_config_errors",
    "episode_control_steps",
    "task_timing",
]

SEED_BOUND = 2**32  # numpy RandomState seeds
PIXEL_FORMATS = ("uint8", "float")  # DMCEnv(pixel_format=...): raw frames | float32 x / 255 - 0.5 (RLlib's DreamerV3)
PIXEL_ONLY_KEYS = ("image_size", "camera_id", "fast_render", "pixel_noise_std", "sensor_missing_prob", "pixel_format")


def env_config_errors(name: str, env_config: dict) -> list[tuple[str, str]]:
    """Every invalid value of one (grid-free) env_config of ``name`` (``dmc/cartpole-swingup``)."""
    errors: list[tuple[str, str]] = []
    get = env_config.get
    _integer_at_least(errors, "action_repeat", get("action_repeat"), 1, "(paper pixels: 2; null: 1 states, 2 pixels)")
    _integer_at_least(errors, "image_size", get("image_size"), 1, "(paper: 64)")
    _integer_at_least(errors, "render_size", get("render_size"), 1, "(e.g. 256; null: image_size)")
    limit = get("time_limit")
    if _is_number(limit) and not limit > 0:
        errors.append(
            (
                "time_limit",
                f"env_config.time_limit={limit!r} must be > 0 simulated seconds (null: the task's own, mostly 1000 "
                "steps)",
            )
        )
    elif _is_number(limit) and math.isfinite(limit):
        message = _time_limit_error(name, float(limit), get("action_repeat"), get("from_pixels") is True)
        if message:
            errors.append(("time_limit", message))
    repeat = get("action_repeat")
    if is_int(repeat) and repeat > 1 and not errors:
        message = _one_step_episode_error(name, repeat, limit if _is_number(limit) else None)
        if message:
            errors.append(("action_repeat", message))
    seed = get("seed")
    if _is_number(seed) and not (0 <= seed < SEED_BOUND):
        errors.append(("seed", f"env_config.seed={seed!r} must be in [0, 2**32) (numpy seeds); e.g. seed: 0"))
    noise = get("pixel_noise_std")
    if _is_number(noise) and not noise >= 0:
        errors.append(
            (
                "pixel_noise_std",
                f"env_config.pixel_noise_std={noise!r} must be >= 0 (paper Table 1: 0.01 or 0.05; 0 disables it)",
            )
        )
    missing = get("sensor_missing_prob")
    if _is_number(missing) and not 0 <= missing <= 1:
        errors.append(
            (
                "sensor_missing_prob",
                f"env_config.sensor_missing_prob={missing!r} must be a probability in [0, 1] (paper Table 1: 0.01 or "
                "0.05)",
            )
        )
    fmt = get("pixel_format")
    if isinstance(fmt, str) and fmt not in PIXEL_FORMATS:
        errors.append(
            (
                "pixel_format",
                f"env_config.pixel_format={fmt!r} is not a pixel format; use uint8 (default) or float "
                "(float32 in [-0.5, 0.5], for run: DreamerV3)",
            )
        )
    mode = get("render_mode")
    if mode not in (None, "rgb_array"):
        errors.append(
            ("render_mode", f"env_config.render_mode={mode!r} is not supported; use rgb_array or leave it out")
        )
    if get("from_pixels") is not True:
        for key in PIXEL_ONLY_KEYS:
            if key in env_config:
                errors.append(
                    (key, f"env_config.{key} applies to pixel observations only; set from_pixels: true or remove {key}")
                )
    camera = get("camera_id")
    if is_int(camera) and not errors:
        message = _camera_error(name, camera)
        if message:
            errors.append(("camera_id", message))
    return errors


MAX_STEPS_PER_EPISODE = 100_000  # agent steps: an episode longer than this never ends within a run's reporting
LONGER_EPISODE_FACTOR = 10  # a time limit 10x the task's own or more: steps written where seconds are read


def _control_timestep(name: str) -> float:
    """The task's control step in simulated seconds."""
    return task_timing(name)[0]


def episode_control_steps(name: str, time_limit: float | None = None) -> int | None:
    """Control steps (agent steps x action_repeat) in one episode of ``name`` with ``env_config.time_limit``
    (None: the task's own; mostly 1000); None for a task without a time limit. dm_control ends an episode at the
    first step whose count reaches ``time_limit / control_timestep``."""
    control, default_limit = task_timing(name)
    limit = default_limit if time_limit is None else float(time_limit)
    if not math.isfinite(limit):
        return None
    return max(1, math.ceil(limit / control - 1e-6))


@functools.lru_cache(maxsize=64)
def task_timing(name: str) -> tuple[float, float]:
    """(control step, default time limit) of the task in simulated seconds (loads the MJCF model once per task,
    nothing rendered); the limit is inf for a task without one."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        absl = logging.getLogger("absl")
        level, absl.level = absl.level, logging.ERROR
        try:
            env = suite.load(*parse_env_name(name))
        finally:
            absl.setLevel(level)
    try:
        control = float(env.control_timestep())
        return control, float(env._step_limit) * control  # dm_control keeps the limit in steps only (private)
    finally:
        env.close()


def _time_limit_error(name: str, limit: float, action_repeat: Any, pixels: bool) -> str | None:
    """``time_limit`` is simulated seconds: shorter than one agent step, every episode ends at its first step; longer
    than ``MAX_STEPS_PER_EPISODE`` agent steps (a limit meant in steps), no episode ends, and no return is reported."""
    repeat = (
        int(action_repeat)
        if _is_number(action_repeat) and float(action_repeat).is_integer() and action_repeat >= 1
        else (2 if pixels else 1)
    )
    try:
        control, own = task_timing(name)
    except Exception:  # noqa: BLE001 - an unknown task is reported elsewhere
        return None
    step = control * repeat
    steps = limit / step
    if steps < 1:
        return (
            f"env_config.time_limit={limit!r} is shorter than one agent step of {name} ({control:g} s x action_repeat "
            f"{repeat}): every episode would end at once; time_limit is in simulated seconds, e.g. {step * 1000:g} for "
            "1000 steps"
        )
    if math.isfinite(own) and limit >= LONGER_EPISODE_FACTOR * own:  # 1000 meant in steps, not seconds
        return (
            f"env_config.time_limit={limit!r} s is {limit / own:g}x the {own:g} s episode of {name} ({steps:,.0f} "
            f"agent steps): time_limit counts simulated seconds, not steps; e.g. {own:g} for the task's own "
            f"{own / step:,.0f} steps (or null)"
        )
    if steps > MAX_STEPS_PER_EPISODE:
        return (
            f"env_config.time_limit={limit!r} s is {steps:,.0f} agent steps of {name}: no episode would end within a "
            f"run; time_limit is in simulated seconds, e.g. {step * 1000:g} for 1000 steps"
        )
    return None


def _one_step_episode_error(name: str, repeat: int, time_limit: float | None) -> str | None:
    """An action repeat that spans the whole episode: every episode is one agent step (nothing to learn from)."""
    try:
        control = episode_control_steps(name, time_limit)
    except Exception:  # noqa: BLE001 - an unknown task is reported elsewhere
        return None
    if control is None or control <= 1 or math.ceil(control / repeat) > 1:
        return None
    return (
        f"env_config.action_repeat={repeat} spans the whole episode of {name} ({control:,} control steps): every "
        "episode would be one agent step; action_repeat repeats each action that many control steps (paper pixels: "
        "2; PlaNet 2-8)"
    )


def _camera_error(name: str, camera_id: int) -> str | None:
    if camera_id < 0:
        return f"env_config.camera_id={camera_id} must be >= 0 (null: camera 0, quadruped 2)"
    domain, task = parse_env_name(name)
    env = suite.load(domain, task)  # a few ms: the MJCF model only, nothing rendered
    try:
        ncam = env.physics.model.ncam
    finally:
        env.close()
    if camera_id >= max(ncam, 1):
        return (
            f"env_config.camera_id={camera_id} is out of range: {name} has {ncam} camera(s), ids 0..{max(ncam, 1) - 1}"
        )
    return None


def _integer_at_least(errors: list, key: str, value: Any, low: int, hint: str) -> None:
    if _is_number(value) and not (float(value).is_integer() and value >= low):
        errors.append((key, f"env_config.{key}={value!r} must be an integer >= {low} {hint}"))


def _is_number(value: Any) -> bool:
    return is_real(value) and not math.isnan(value)
