"""Value ranges of numeric settings (``RANGES``: RLlib's, plus those the algorithms declare through
``config_questions.ranges``), NaN and inf refused anywhere, and the errors of settings that depend on each other
(``config_errors``), each a one-line ``UserError`` naming the fix."""

from __future__ import annotations

import functools
import math
from typing import Any

from smac_rllib.core.values import is_real
from smac_rllib.algorithms import config_questions
from smac_rllib.cli.errors import UserError
from smac_rllib.core.values import Range
from smac_rllib.cli.grids import grid_options, is_grid


def _r(low=None, high=None, low_open=False, high_open=False, hint=""):
    return Range(low, high, low_open, high_open, hint)


_UNIT = dict(low=0, high=1, low_open=True)
# RLlib's numeric settings (the algorithms' own come from config_questions.ranges): key -> allowed numbers. None and
# strings ("auto") are left to RLlib; types are checked before (an integer setting gets an integer).
RANGES: dict[str, Range] = {
    "gamma": _r(**_UNIT, hint="(paper: 0.99)"),
    "tau": _r(**_UNIT, hint="(paper: 0.005; 1 copies the weights)"),
    "lr": _r(0, low_open=True, hint="(e.g. 3e-4)"),
    "actor_lr": _r(0, low_open=True, hint="(paper: 3e-4)"),
    "critic_lr": _r(0, low_open=True, hint="(paper: 3e-4)"),
    "alpha_lr": _r(0, low_open=True, hint="(paper: 3e-4)"),
    "initial_alpha": _r(0, low_open=True, hint="(pytorch_sac: 0.1)"),
    "grad_clip": _r(0, low_open=True, hint="(or null: no clipping)"),
    "n_step": _r(1, hint="(1: one-step TD targets)"),
    "train_batch_size_per_learner": _r(1, hint="(paper: 256)"),
    "train_batch_size": _r(1, hint="(paper: 256)"),
    "minibatch_size": _r(1),
    "num_epochs": _r(1),
    "num_env_runners": _r(0, hint="(0: sample in the trial process)"),
    "num_workers": _r(0, hint="(0: sample in the trial process)"),
    "num_envs_per_env_runner": _r(1),
    "num_learners": _r(0, hint="(0: learn in the trial process)"),
    "evaluation_num_env_runners": _r(0, hint="(0: evaluate in the trial process)"),
    "num_aggregator_actors_per_learner": _r(0),
    "num_cpus_per_env_runner": _r(0),
    "num_gpus_per_env_runner": _r(0),
    "num_cpus_per_learner": _r(0),
    "num_gpus_per_learner": _r(0, hint="(1 on a GPU node, 0 on CPU)"),
    "num_cpus_for_main_process": _r(0),
    "num_cpus_for_driver": _r(0),
    "num_gpus": _r(0),
    "rollout_fragment_length": _r(1, hint="(or auto)"),
    "min_sample_timesteps_per_iteration": _r(0),
    "min_train_timesteps_per_iteration": _r(0),
    "min_time_s_per_iteration": _r(0),
    "evaluation_interval": _r(0, hint="(null or 0: no evaluation; 10: every 10 iterations)"),
    "evaluation_duration": _r(1, hint="(or auto)"),
    "evaluation_sample_timeout_s": _r(0, low_open=True),
    "sample_timeout_s": _r(1, hint="(seconds a sample request may take; RLlib: 60, or null: no timeout)"),
    "metrics_num_episodes_for_smoothing": _r(1, hint="(e.g. 100)"),
    "target_network_update_freq": _r(0, hint="(0: every update)"),
    "num_steps_sampled_before_learning_starts": _r(0, hint="(paper: 5000)"),
    "training_intensity": _r(0, low_open=True, hint="(or null)"),
    "seed": _r(0, 2**32, high_open=True, hint="(numpy seeds; e.g. 0)"),
    "max_requests_in_flight_per_env_runner": _r(1),
    "num_consecutive_env_runner_failures_tolerance": _r(0),
    "max_num_env_runner_restarts": _r(0),
    "delay_between_env_runner_restarts_s": _r(0),
    "env_runner_health_probe_timeout_s": _r(0),
    "env_runner_restore_timeout_s": _r(0),
    "episode_lookback_horizon": _r(1),
    "replay_buffer_config.capacity": _r(1, hint="(paper: 1000000)"),
    "replay_buffer_config.alpha": _r(0, 1),
    "replay_buffer_config.beta": _r(0, 1),
}


@functools.cache
def all_ranges(algo_class: type | None = None) -> dict[str, Range]:
    """RLlib's common ranges and those the algorithm declares (every algorithm's when None;
    ``config_questions.ranges``)."""
    return RANGES | config_questions.ranges(algo_class)


def check_range(key: str, attr: str, value: Any, where: str, prefix: str = "", algo_class: type | None = None) -> None:
    """Raise a UserError when a number (or one of its grid options, or a sub-key of a mapping) is out of range for
    ``algo_class`` (every algorithm's ranges when None)."""
    ranges = all_ranges(algo_class)
    for option in grid_options(value):
        if isinstance(option, dict):
            for sub, sub_value in option.items():
                check_range(f"{key}.{sub}", f"{attr}.{sub}", sub_value, where, prefix, algo_class)
            continue
        allowed = ranges.get(key) or ranges.get(attr)
        if allowed is None or not is_real(option):
            continue
        if option not in allowed:
            raise UserError(f"{prefix}{key}={option!r} must be {allowed.describe()} {allowed.hint}".rstrip(), where)


def check_finite(value: Any, name: str, where: str, what: str = "") -> None:
    """NaN and inf are refused anywhere in a config (a NaN threshold never triggers, an inf capacity never fits)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise UserError(
            f"{what}{name}={value!r} is not a finite number; write a finite value (NaN and inf are not allowed)", where
        )
    if is_grid(value):
        value = value["grid_search"] if isinstance(value["grid_search"], list) else []
    if isinstance(value, dict):
        for key, sub in value.items():
            check_finite(sub, f"{name}.{key}", where, what)
    elif isinstance(value, (list, tuple)):
        for sub in value:
            check_finite(sub, name, where, what)


def config_errors(config) -> list[str]:
    """Mistakes in how one grid point's settings fit together (each alone is in range), naming the fix, then the
    algorithm's own (``config_questions.errors``)."""
    errors = []
    buffer = getattr(config, "replay_buffer_config", None)
    buffer = buffer if isinstance(buffer, dict) else {}
    capacity = buffer.get("capacity")
    batch, what = config_questions.replay_batch(config)
    if is_real(capacity) and batch and capacity < batch:
        errors.append(
            f"replay_buffer_config.capacity={capacity!r} must be >= the batch size {batch} ({what}); "
            "raise the capacity (paper: 1000000) or lower the batch"
        )
    warm_up = getattr(config, "num_steps_sampled_before_learning_starts", None)
    if is_real(capacity) and is_real(warm_up) and capacity < warm_up:
        errors.append(
            f"replay_buffer_config.capacity={capacity!r} holds fewer steps than the warm-up "
            f"(num_steps_sampled_before_learning_starts={warm_up!r}): its first {warm_up - capacity!r} steps are "
            f"dropped before the first update; raise the capacity to >= {warm_up!r} or lower the warm-up"
        )
    errors += _batch_past_warm_up(config, batch, what, warm_up)
    for key, value in sorted(vars(config).items()):
        if (key == "lr" or key.endswith("_lr")) and is_real(value) and not isinstance(value, bool) and value >= 1:
            errors.append(
                f"{key}={value!r}: Adam moves each weight by up to ~{value!r} per update, so the networks diverge at "
                f"once (a sign lost from an exponent, 3e4 for 3e-4?); write e.g. {key}: 0.0003 (paper: 3e-4)"
            )
    tau = getattr(config, "tau", None)
    if is_real(tau) and 0.9 <= tau < 1:
        errors.append(
            f"tau={tau!r} moves the target networks {tau:.1%} of the way to the online ones at every update: "
            "RLlib's tau is the online weight (target <- tau*online + (1-tau)*target), 1 - SpinningUp's polyak; "
            f"write tau: {1 - tau:.3g} (paper: 0.005), or tau: 1 for a plain copy"
        )
    if getattr(config, "gamma", None) == 1 and isinstance(config.env, str) and config.env.startswith("dmc/"):
        errors.append(
            f"gamma=1 on {config.env}: a DMC episode ends only at its time limit, where the TD target bootstraps "
            "(a truncation, not a terminal state), so the discounted return is an endless sum and the Q-values "
            "have no finite fixed point; use gamma < 1 (paper: 0.99)"
        )
    if getattr(config, "explore", True) is False and not _learns_offline(config):
        errors.append(
            "explore: false in config makes the env runners that collect the training data act deterministically "
            "(no sampled actions after the warm-up: the policy learns from its own mean actions only); put "
            "`evaluation_config: {explore: false}` for a deterministic evaluation and leave explore out of config"
        )
    if getattr(config, "autocast", None) == "fp16" and not getattr(config, "num_gpus_per_learner", 0):
        errors.append(
            "autocast: fp16 on a CPU learner (num_gpus_per_learner: 0): half precision is a GPU setting; on the CPU "
            "its gradient scaler skips the updates whose gradients overflow and each op is slower than in fp32; "
            "write autocast: auto (fp32 on the CPU, bf16 on a GPU)"
        )
    if _learns_offline(config) and not config.is_offline:
        name = type(config).__name__.removesuffix("Config")
        errors.append(
            f"run: {name} learns offline, from recorded episodes (config `input_`: a directory or files of recorded "
            f"data), not from the env, and this experiment gives none; set input_ (with RLlib's offline_data "
            "settings) or run an algorithm that learns from the env (SMAC, SACBaseline, SAC)"
        )
    return errors + config_questions.errors(config)


def _batch_past_warm_up(config, batch: int | None, what: str, warm_up: Any) -> list[str]:
    """The first update's batch against what the replay holds then (the warm-up's steps): a transition batch larger
    than it replays the same few steps; a sequence longer than it does not exist yet."""
    if not (batch and is_real(warm_up)):
        return []
    fix = "raise num_steps_sampled_before_learning_starts to >= {} or lower {}"
    if "batch_length_T" in what:
        length = config.batch_length_T
        if length > warm_up:
            return [
                f"batch_length_T={length} is longer than the warm-up ({warm_up} steps, "
                f"num_steps_sampled_before_learning_starts): when updates start the replay holds no whole sequence "
                f"of {length} steps; " + fix.format(length, "batch_length_T")
            ]
    elif batch > warm_up:
        return [
            f"train_batch_size_per_learner={batch} is larger than the warm-up ({warm_up} steps, "
            f"num_steps_sampled_before_learning_starts): the first updates draw {batch} transitions from a replay "
            f"of {max(int(warm_up), 1)}, the same few again and again; " + fix.format(batch, "the batch")
        ]
    return []


def _learns_offline(config) -> bool:
    """RLlib's offline algorithms: BC, MARWIL and IQL say so (``is_online`` False); CQL, a SAC config, does not."""
    return not getattr(config, "is_online", True) or any(c.__name__ == "CQLConfig" for c in type(config).__mro__)


# Settings whose strings RLlib or Ray compare exactly (a wrong case is silently another choice, or a failure after Ray
# started): key -> the allowed values.
CHOICES = {
    "placement_strategy": ("PACK", "SPREAD", "STRICT_PACK", "STRICT_SPREAD"),
    "evaluation_duration_unit": ("episodes", "timesteps"),
    "batch_mode": ("truncate_episodes", "complete_episodes"),
    "framework": ("torch",),
    "log_level": ("DEBUG", "INFO", "WARN", "ERROR"),
}


def check_choice(key: str, value: Any, where: str, prefix: str = "") -> None:
    """A string setting must be one of ``CHOICES[key]`` exactly; the message names the spelling meant."""
    allowed = CHOICES.get(key)
    for option in grid_options(value):
        if allowed is None or not isinstance(option, str) or option in allowed:
            continue
        if key == "framework":
            raise UserError(
                f"{prefix}framework={option!r}: this package's algorithms (and RLlib's new API stack here) run on "
                "PyTorch only; remove framework (torch is the default)",
                where,
            )
        meant = next((a for a in allowed if a.lower() == option.lower().replace("-", "_")), None)
        fix = f"write {meant!r}" if meant else f"use one of {', '.join(repr(a) for a in allowed)}"
        raise UserError(f"{prefix}{key}={option!r} is not a value RLlib knows ({', '.join(allowed)}); {fix}", where)
