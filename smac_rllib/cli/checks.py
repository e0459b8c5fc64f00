"""Checks of a tuned example's ``env``, ``env_config`` and ``config`` before Ray sees them.

Unknown keys get the closest known one (``difflib``); values are checked against the type annotations of
RLlib's config setters (``training(twin_q: Optional[bool])``, ...) or, for keys without one (SMAC's own
fields), the type of the default. Integer-valued floats (``1e6``) for integer settings are converted in place.
Value ranges: ``RANGES`` for RLlib's numeric settings (and the SMAC ones ``smac_errors()`` leaves alone),
``smac_rllib.envs.validation`` for env_config, ``config_errors()`` for settings that depend on each other
(each algorithm's own errors, ranges and batch come from ``smac_rllib.algorithms.config_questions``).
NaN and inf are refused anywhere (``check_finite``).
Result keys (stop criteria, scheduler metrics) must be ones a result can contain (``result_key_hint``).
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import logging
import functools
import math
import re
import types
import typing
import warnings
from collections.abc import Mapping
from typing import Any

from smac_rllib.cli.errors import UserError, one_line


def known_config_keys(default_config) -> set[str]:
    """Every key ``update_from_dict`` turns into a real setting of this config class."""
    keys = set(default_config.to_dict())
    keys |= {"train_batch_size_per_learner", "multiagent", "num_workers", "lambda", "num_cpus_for_driver", "callbacks_class"}
    return keys


def _config_annotations(config_class: type) -> dict[str, Any]:
    """Type annotations of the keyword arguments of every ``AlgorithmConfig`` setter (training(), env_runners(), ...)."""
    annotations: dict[str, Any] = {}
    for klass in reversed(config_class.__mro__):
        for attr in vars(klass).values():
            if not inspect.isfunction(attr) or attr.__name__.startswith("_"):
                continue
            try:
                params = inspect.signature(attr).parameters
            except (TypeError, ValueError):
                continue
            for pname, p in params.items():
                if p.kind is p.KEYWORD_ONLY and p.annotation is not inspect.Parameter.empty and not isinstance(p.annotation, str):
                    annotations[pname] = p.annotation
    return annotations


def check_env(config: dict, algo_class: type, line_of) -> None:
    from smac_rllib.envs import ENV_CONFIG_KEYS

    env_options = grid_options(config["env"])
    for env in env_options:
        if not isinstance(env, str):
            raise UserError(f"env must be a name like 'dmc/cheetah-run', got {type_name(env)}", line_of("env"))
        _check_env_name(env, line_of("env"))
    env_config = config.get("env_config")
    if env_config is not None and not isinstance(env_config, dict):
        raise UserError(f"env_config must be a mapping, got {type_name(env_config)}", line_of("env_config"))
    env_config = env_config or {}
    if not all(e.startswith("dmc/") for e in env_options):
        for env in env_options:  # a gymnasium env: its own kwargs
            if not env.startswith("dmc/"):
                _check_action_space(env, env_config, algo_class, line_of("env"))
        return
    from smac_rllib.envs import DMCEnv

    hints = typing.get_type_hints(DMCEnv.__init__)
    for key, value in env_config.items():
        if key not in ENV_CONFIG_KEYS:
            raise UserError(
                f"unknown env_config key {key!r}{did_you_mean(key, ENV_CONFIG_KEYS)} (valid: {', '.join(ENV_CONFIG_KEYS)})",
                line_of("env_config", key),
            )
        _check_type(f"env_config.{key}", value, hints.get(key, Any), line_of("env_config", key), env_config, key)
    _check_env_config_values(env_options, env_config, line_of)


def _check_env_config_values(env_options: list[str], env_config: dict, line_of) -> None:
    """Ranges and pixel-only keys of every (env, env_config grid point) pair (``smac_rllib.envs.validation``)."""
    from smac_rllib.envs.validation import env_config_errors

    seen: set[str] = set()
    for env in env_options:
        for variant in grid_variants(env_config, limit=MAX_GRID_POINTS):
            key = repr((env, sorted(variant.items(), key=repr)))
            if key in seen:
                continue
            seen.add(key)
            errors = env_config_errors(env, variant)
            if errors:
                bad_key, message = errors[0]
                raise UserError(message, line_of("env_config", bad_key))


def _check_action_space(env: str, env_config: dict, algo_class: type, where: str) -> None:
    """SMAC and SACBaseline act in a continuous space: a gymnasium env with another action space is refused."""
    if not algo_class.__module__.startswith("smac_rllib."):
        return  # RLlib's own algorithms say what they support
    import gymnasium as gym

    if any(is_grid(v) for v in env_config.values()):
        return
    try:
        with quiet():
            made = gym.make(env, **env_config)
    except TypeError as e:  # an env_config key the env does not take: the trial would fail the same way, after Ray
        bad = re.search(r"unexpected keyword argument '([^']+)'", str(e))
        if bad:
            raise UserError(f"env_config key {bad.group(1)!r} is not an argument of {env!r} ({one_line(e)}); remove it or "
                            "use one of the env's own keyword arguments", where) from None
        return
    except Exception:  # noqa: BLE001 - cannot build it here (missing extra, a class path): RLlib will say why
        return
    try:
        space = made.action_space
    finally:
        made.close()
    if not isinstance(space, gym.spaces.Box):
        raise UserError(
            f"{algo_class.__name__} needs a continuous (Box) action space, but {env!r} has {space}; use a continuous "
            "env (dmc/<domain>-<task>, e.g. dmc/cartpole-swingup, or Pendulum-v1) or an RLlib algorithm for discrete actions (run: PPO)",
            where,
        )


def _check_env_name(env: str, where: str) -> None:
    from smac_rllib.envs import env_names, parse_env_name

    if env.startswith("dmc/"):
        try:
            parse_env_name(env)
        except ValueError as e:
            raise UserError(one_line(e), where) from None
        return
    import gymnasium as gym

    if env in gym.registry or "." in env.split("/")[-1].split("-v")[0]:  # a gymnasium id or a class path
        return
    try:
        parse_env_name(env)
    except ValueError:
        pass
    else:
        raise UserError(f"unknown env {env!r}; did you mean 'dmc/{env}'? (DMC tasks are named dmc/<domain>-<task>)", where)
    names = env_names() + sorted(gym.registry)
    close = difflib.get_close_matches(env, names, n=1) or difflib.get_close_matches("dmc/" + env, names, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise UserError(f"unknown env {env!r}; {hint}(DMC tasks: python -m smac_rllib.envs --list)", where)


def check_config(config: dict, algo_class: type, line_of) -> None:
    """Unknown keys (with the closest known one), values of the wrong type and out of range, before Ray sees them."""
    from ray.rllib.algorithms.algorithm_config import AlgorithmConfig

    with quiet():
        default = algo_class.get_default_config()
    known = known_config_keys(default)
    annotations = _config_annotations(type(default))
    for key in list(config):
        if key in ("env", "env_config"):
            continue
        if not isinstance(key, str):
            raise UserError(f"config key {key!r} is not a name; config keys are setting names like gamma or num_particles", line_of(key))
        attr = AlgorithmConfig._translate_special_keys(key, warn_deprecated=False)
        if attr not in known and key not in known:
            public = sorted(k for k in known if not k.startswith("_"))
            raise UserError(
                f"unknown config key {key!r} for {algo_class.__name__}{did_you_mean(key, public)}"
                f" (see {type(default).__name__}; all keys: {type(default).__name__}().to_dict())",
                line_of(key),
            )
        _check_type(key, config[key], _expected_type(key, attr, annotations, default), line_of(key), config, key)
        check_range(key, attr, config[key], line_of(key))
        if key == "evaluation_config" and isinstance(config[key], dict):
            _check_evaluation_config(config[key], algo_class, known, annotations, default, line_of)


def _expected_type(key: str, attr: str, annotations: dict[str, Any], default) -> Any:
    if key.startswith(("num_cpus", "num_gpus")):
        return typing.Optional[float]  # fractional resources are fine
    if key in annotations:
        return annotations[key]
    declared = getattr(type(default), "FIELD_TYPES", {})  # types the defaults do not show (a None default, a nullable str)
    if attr in declared:
        return declared[attr]
    return _type_of_default(getattr(default, attr, None))


def _check_evaluation_config(overrides: dict, algo_class: type, known: set[str], annotations: dict[str, Any], default, line_of) -> None:
    """``evaluation_config: {explore: false, ...}``: the evaluation runners' config overrides, checked as config keys."""
    from ray.rllib.algorithms.algorithm_config import AlgorithmConfig

    for key in list(overrides):
        if not isinstance(key, str):
            raise UserError(f"evaluation_config key {key!r} is not a name; use config keys like explore", line_of("evaluation_config"))
        attr = AlgorithmConfig._translate_special_keys(key, warn_deprecated=False)
        if key in ("env", "env_config") or attr in ("env", "env_config"):
            continue
        if attr not in known and key not in known:
            public = sorted(k for k in known if not k.startswith("_"))
            raise UserError(
                f"unknown evaluation_config key {key!r} for {algo_class.__name__}{did_you_mean(key, public)}"
                " (evaluation_config overrides config keys for the evaluation runners, e.g. {explore: false})",
                line_of("evaluation_config", key),
            )
        where = line_of("evaluation_config", key)
        _check_type(f"evaluation_config.{key}", overrides[key], _expected_type(key, attr, annotations, default), where, overrides, key)
        check_range(key, attr, overrides[key], where, prefix="evaluation_config.")


def _type_of_default(value: Any) -> Any:
    if value is None:
        return Any
    if isinstance(value, bool):
        return bool
    if isinstance(value, int):
        return int
    if isinstance(value, float):
        return float
    if isinstance(value, str):
        return str
    if isinstance(value, dict):
        return dict
    if isinstance(value, (list, tuple)):
        return list
    return Any


def _check_type(name: str, value: Any, expected: Any, where: str, container: dict, key: Any) -> None:
    """Raise a UserError when ``value`` (or any of its grid_search options) cannot be ``expected``.

    Integer-valued floats for integer settings (``1e6``) are converted in place.
    """
    if is_grid(value):
        options = value["grid_search"]
        for i, option in enumerate(options):
            _check_type(name, option, expected, where, options, i)
        return
    verdict = _matches(value, expected)
    if verdict is False:
        raise UserError(
            f"{name}={value!r} has the wrong type: expected {_describe(expected)}, got {type_name(value)}"
            f"{_example_fix(name, expected)}",
            where,
        )
    if verdict == "int" and isinstance(value, float):
        container[key] = int(value)


def _matches(value: Any, expected: Any) -> bool | str | None:
    """True / False / None (cannot tell) / "int" (an integer-valued float where an int is expected)."""
    if expected is Any or expected is inspect.Parameter.empty:
        return True
    origin, args = typing.get_origin(expected), typing.get_args(expected)
    if origin is typing.Union or isinstance(expected, types.UnionType):
        verdicts = [_matches(value, a) for a in args]
        for good in (True, "int", None):
            if good in verdicts:
                return good
        return False
    if expected is type(None):
        return value is None
    if expected is bool:
        return isinstance(value, bool)
    if expected is int:
        if isinstance(value, bool):
            return False
        if isinstance(value, int):
            return True
        return "int" if isinstance(value, float) and value.is_integer() else False
    if expected is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if expected is str:
        return isinstance(value, str)
    if expected in (dict, typing.Dict) or origin is dict or origin is Mapping:
        return isinstance(value, dict)
    if expected in (list, tuple, typing.List, typing.Tuple) or origin in (list, tuple):
        return isinstance(value, (list, tuple))
    return None


def _describe(expected: Any) -> str:
    names = {bool: "true or false", int: "an integer", float: "a number", str: "a string", dict: "a mapping", list: "a list"}
    if typing.get_origin(expected) is typing.Union or isinstance(expected, types.UnionType):
        parts = [_describe(a) for a in typing.get_args(expected) if a is not type(None)]
        return " or ".join(dict.fromkeys(parts))
    if typing.get_origin(expected) in (list, tuple):
        return "a list"
    if typing.get_origin(expected) is dict:
        return "a mapping"
    return names.get(expected, getattr(expected, "__name__", str(expected)))


def _example_fix(name: str, expected: Any) -> str:
    key = name.split(".")[-1]
    examples = {bool: "true", int: "16", float: "0.0003"}
    args = [a for a in typing.get_args(expected) if a is not type(None)] or [expected]
    for a in args:
        if a in examples:
            return f" (write e.g. `{key}: {examples[a]}`, without quotes)"
    return ""


# --------------------------------------------------------------------------------------------- ranges


@dataclasses.dataclass(frozen=True)
class Range:
    """Allowed numbers of a setting: ``low``/``high`` (None: unbounded), each end included unless ``*_open``."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    hint: str = ""

    def __contains__(self, value: float) -> bool:
        above = self.low is None or (value > self.low if self.low_open else value >= self.low)
        below = self.high is None or (value < self.high if self.high_open else value <= self.high)
        return above and below

    def describe(self) -> str:
        if self.low is not None and self.high is not None:
            high = "2**32" if self.high == 2**32 else f"{self.high:g}"
            return f"in {'(' if self.low_open else '['}{self.low:g}, {high}{')' if self.high_open else ']'}"
        if self.low is not None:
            return f"{'>' if self.low_open else '>='} {self.low:g}"
        return f"{'<' if self.high_open else '<='} {self.high:g}"


def _r(low=None, high=None, low_open=False, high_open=False, hint=""):
    return Range(low, high, low_open, high_open, hint)


_UNIT = dict(low=0, high=1, low_open=True)
# RLlib's numeric settings (and SMAC's that smac_errors() does not check): key -> allowed numbers. None and
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
    "sample_timeout_s": _r(0, low_open=True, hint="(or null: no timeout)"),
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
    # SMAC's settings that smac_errors() leaves alone
    "torch_num_threads": _r(0, hint="(0: torch's default)"),
    "max_consecutive_nonfinite_updates": _r(1, hint="(default 100)"),
    "num_hidden_layers": _r(1, hint="(paper: 2)"),
    "pixel_grad_clip": _r(0, low_open=True, hint="(reference: 100)"),
}


@functools.cache
def _ranges() -> dict[str, Range]:
    """RLlib's common ranges and those the algorithms declare (``config_questions.ranges``)."""
    from smac_rllib.algorithms import config_questions

    return RANGES | {k: Range(*v) for k, v in config_questions.ranges().items()}


def check_range(key: str, attr: str, value: Any, where: str, prefix: str = "") -> None:
    """Raise a UserError when a number (or one of its grid options, or a sub-key of a mapping) is out of range."""
    for option in grid_options(value):
        if isinstance(option, dict):
            for sub, sub_value in option.items():
                check_range(f"{key}.{sub}", f"{attr}.{sub}", sub_value, where, prefix)
            continue
        allowed = _ranges().get(key) or _ranges().get(attr)
        if allowed is None or isinstance(option, bool) or not isinstance(option, (int, float)):
            continue
        if option not in allowed:
            raise UserError(f"{prefix}{key}={option!r} must be {allowed.describe()} {allowed.hint}".rstrip(), where)


def check_finite(value: Any, name: str, where: str, what: str = "") -> None:
    """NaN and inf are refused anywhere in a config (a NaN threshold never triggers, an inf capacity never fits)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise UserError(f"{what}{name}={value!r} is not a finite number; write a finite value (NaN and inf are not allowed)", where)
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
    from smac_rllib.algorithms import config_questions

    errors = []
    buffer = getattr(config, "replay_buffer_config", None)
    buffer = buffer if isinstance(buffer, dict) else {}
    capacity = buffer.get("capacity")
    batch, what = config_questions.replay_batch(config)
    if isinstance(capacity, (int, float)) and not isinstance(capacity, bool) and batch and capacity < batch:
        errors.append(
            f"replay_buffer_config.capacity={capacity!r} must be >= the batch size {batch} ({what}); "
            "raise the capacity (paper: 1000000) or lower the batch"
        )
    return errors + config_questions.errors(config)


# --------------------------------------------------------------------------------------------- grids

MAX_GRID_POINTS = 10_000  # every point is validated (~2 ms each); a bigger sweep is a mistake here


def check_grids(value: Any, name: str, where: str) -> None:
    """Every ``{grid_search: [...]}`` under ``value`` is alone in its mapping and has a non-empty list."""
    if isinstance(value, dict) and "grid_search" in value:
        options = value["grid_search"]
        if len(value) > 1:
            others = ", ".join(repr(k) for k in value if k != "grid_search")
            raise UserError(f"{name}: grid_search must be the only key of its mapping (found {others} next to it); "
                            f"write {name}: {{grid_search: [...]}}", where)
        if not isinstance(options, list) or not options:
            got = "an empty list" if options == [] else type_name(options)
            raise UserError(f"grid_search of {name} needs a non-empty list, e.g. {name}: {{grid_search: [8, 16, 32]}}; got {got}", where)
        for option in options:
            check_grids(option, name, where)
    elif isinstance(value, dict):
        for key, sub in value.items():
            check_grids(sub, f"{name}.{key}", where)
    elif isinstance(value, list):
        for sub in value:
            check_grids(sub, name, where)


def _grid_paths(value: Any, path: tuple = ()):
    if is_grid(value):
        yield path, value["grid_search"]
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _grid_paths(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _grid_paths(v, path + (i,))


def num_grid_points(param_space: dict) -> int:
    n = 1
    for _, options in _grid_paths(param_space):
        n *= len(options)
    return n


def grid_variants(param_space: dict, limit: int = MAX_GRID_POINTS) -> list[dict]:
    """The concrete configs of a param space with ``grid_search`` entries (the first ``limit`` of them)."""
    import copy
    import itertools

    paths = list(_grid_paths(param_space))
    variants = []
    for combo in itertools.islice(itertools.product(*[options for _, options in paths]), limit):
        variant = copy.deepcopy(param_space)
        for (path, _), option in zip(paths, combo):
            node = variant
            for step in path[:-1]:
                node = node[step]
            node[path[-1]] = copy.deepcopy(option)
        variants.append(variant)
    return variants


# --------------------------------------------------------------------------------------------- result keys

# What a result of our algorithms (and RLlib's) holds, "a/b" = result["a"]["b"]: stop criteria, the scheduler's
# metric and the checkpoint score must be one of these (or lie under an open prefix), else they never trigger.
_RUNNER_KEYS = (
    "episode_return_mean", "episode_return_max", "episode_return_min", "episode_len_mean", "episode_len_max",
    "episode_len_min", "episode_duration_sec_mean", "num_episodes", "num_episodes_lifetime", "num_env_steps_sampled",
    "num_env_steps_sampled_lifetime", "env_reset_timer", "env_step_timer", "sample", "time_between_sampling",
    "rlmodule_inference_timer", "weights_seq_no", "num_env_steps_sampled_lifetime_throughput",
)  # fmt: skip
RESULT_KEYS: tuple[str, ...] = (
    "training_iteration", "time_total_s", "time_this_iter_s", "time_since_restore", "iterations_since_restore",
    "timesteps_since_restore", "timestamp", "num_env_steps_sampled_lifetime", "num_env_steps_stored_lifetime",
    "num_agent_steps_sampled_lifetime", "num_env_steps_trained_lifetime", "num_training_step_calls_per_iteration",
    "num_updates_lifetime", "done",
    *(f"env_runners/{k}" for k in _RUNNER_KEYS),
    *(f"evaluation/env_runners/{k}" for k in _RUNNER_KEYS),
)  # fmt: skip
# Subtrees whose keys depend on the module ids, the learner or the run: anything below them is accepted.
RESULT_PREFIXES = (
    "learners/", "timers/", "perf/", "fault_tolerance/", "info/", "config/", "env_runner_group/",
    "env_runners/module_episode_return_mean/", "env_runners/agent_episode_return_mean/",
    "env_runners/num_agent_steps_sampled", "env_runners/num_module_steps_sampled",
    "env_runners/env_to_module_connector/", "env_runners/module_to_env_connector/", "env_runners/env_to_module_sum",
    "env_runners/num_env_steps_sampled_lifetime_throughput/", "evaluation/num_", "evaluation/actor_manager",
)  # fmt: skip


def result_key_error(key: Any, what: str, custom_metrics: bool = False) -> str | None:
    """None when ``key`` can be in a result; else a message with the closest key (``training_iterations``).

    ``custom_metrics``: the config has callbacks, which may log anything under ``env_runners/``."""
    if not isinstance(key, str):
        return f"{what} {key!r} is not a result key; use one like training_iteration or env_runners/episode_return_mean"
    body = key[len("evaluation/"):] if key.startswith("evaluation/env_runners/") else key
    if key in RESULT_KEYS or key.startswith(RESULT_PREFIXES) or body.startswith(RESULT_PREFIXES):
        return None
    if custom_metrics and body.startswith("env_runners/"):
        return None
    hint = did_you_mean(key, RESULT_KEYS) or "; use e.g. training_iteration, env_runners/num_env_steps_sampled_lifetime"
    return (f"{what} {key!r} is never in a result, so it would never trigger{hint} "
            "(keys: a result.json under ~/ray_results; a/b = result['a']['b'])")


# --------------------------------------------------------------------------------------------- helpers

def is_grid(value: Any) -> bool:
    return isinstance(value, dict) and set(value) == {"grid_search"}


def grid_options(value: Any) -> list:
    return list(value["grid_search"]) if is_grid(value) else [value]


class quiet:
    """Silence RLlib's warnings and log lines ("You are running SAC on the new API stack!") while checking."""

    def __enter__(self):
        self._warnings = warnings.catch_warnings()
        self._warnings.__enter__()
        warnings.simplefilter("ignore")
        self._loggers = [logging.getLogger(n) for n in ("ray", "ray.rllib", "ray.tune")]
        self._levels = [lg.level for lg in self._loggers]
        for lg in self._loggers:
            lg.setLevel(logging.ERROR)
        return self

    def __exit__(self, *exc):
        for lg, level in zip(self._loggers, self._levels):
            lg.setLevel(level)
        self._warnings.__exit__(*exc)
        return False


def did_you_mean(key: Any, choices) -> str:
    close = difflib.get_close_matches(str(key), [str(c) for c in choices], n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "null"
    return type(value).__name__
