"""Checks of a tuned example's ``env``, ``env_config`` and ``config`` before Ray sees them.

Unknown keys get the closest known one (``difflib``); values are checked against the type annotations of
RLlib's config setters (``training(twin_q: Optional[bool])``, ...) or, for keys without one (SMAC's own
fields), the type of the default. Integer-valued floats (``1e6``) for integer settings are converted in place.
Value ranges: ``cli/ranges.py`` (RLlib's numeric settings, and the algorithms' own from ``config_questions.ranges``),
``smac_rllib.envs.validation`` for env_config, ``config_errors()`` for settings that depend on each other
(each algorithm's own errors, ranges and batch come from ``smac_rllib.algorithms.config_questions``).
NaN and inf are refused anywhere (``check_finite``). Result keys: ``cli/result_keys.py``.
"""

from __future__ import annotations

import difflib
import inspect
import logging
import re
import types
import typing
import warnings
from collections.abc import Mapping
from typing import Any

from smac_rllib.cli.errors import UserError, did_you_mean, one_line, type_name
from smac_rllib.cli.grids import MAX_GRID_POINTS, grid_options, grid_variants, is_grid
from smac_rllib.cli.ranges import all_ranges, check_choice, check_range


def known_config_keys(default_config) -> set[str]:
    """Every key ``update_from_dict`` turns into a real setting of this config class."""
    keys = set(default_config.to_dict())
    keys |= {
        "train_batch_size_per_learner",
        "multiagent",
        "num_workers",
        "lambda",
        "num_cpus_for_driver",
        "callbacks_class",
    }
    return keys


def _config_annotations(config_class: type) -> dict[str, Any]:
    """Type annotations of the keyword arguments of every ``AlgorithmConfig`` setter (training(), env_runners(),
    ...)."""
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
                if (
                    p.kind is p.KEYWORD_ONLY
                    and p.annotation is not inspect.Parameter.empty
                    and not isinstance(p.annotation, str)
                ):
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
                f"unknown env_config key {key!r}{did_you_mean(key, ENV_CONFIG_KEYS)} (valid: "
                f"{', '.join(ENV_CONFIG_KEYS)})",
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
    """Our algorithms act in a continuous space on flat observations: a gymnasium env with a discrete action space,
    or image / dict observations, is refused (pixels come from ``dmc/...`` with ``from_pixels``)."""
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
            raise UserError(
                f"env_config key {bad.group(1)!r} is not an argument of {env!r} ({one_line(e)}); remove it or "
                "use one of the env's own keyword arguments",
                where,
            ) from None
        return
    except Exception:  # noqa: BLE001 - cannot build it here (missing extra, a class path): RLlib will say why
        return
    try:
        space, observations = made.action_space, made.observation_space
    finally:
        made.close()
    if not isinstance(space, gym.spaces.Box):
        raise UserError(
            f"{algo_class.__name__} needs a continuous (Box) action space, but {env!r} has {space}; use a continuous "
            "env (dmc/<domain>-<task>, e.g. dmc/cartpole-swingup, or Pendulum-v1) or an RLlib algorithm for discrete "
            "actions (run: PPO)",
            where,
        )
    if not (isinstance(observations, gym.spaces.Box) and len(observations.shape) == 1):
        raise UserError(
            f"{algo_class.__name__} learns from a flat vector of observations (a 1-D Box) on gymnasium envs, but "
            f"{env!r} observes {observations}; use a state env (e.g. HalfCheetah-v5, Pendulum-v1) or, for pixels, "
            "dmc/<domain>-<task> with env_config from_pixels: true",
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
        raise UserError(
            f"unknown env {env!r}; did you mean 'dmc/{env}'? (DMC tasks are named dmc/<domain>-<task>)", where
        )
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
            raise UserError(
                f"config key {key!r} is not a name; config keys are setting names like gamma or num_particles",
                line_of(key),
            )
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
        check_choice(attr, config[key], line_of(key))
        if key == "evaluation_config" and isinstance(config[key], dict):
            _check_evaluation_config(config[key], algo_class, known, annotations, default, line_of)


def check_modalities(config: dict, line_of) -> None:
    """Evaluation on pixels while training on states (or the reverse) is refused: the evaluation runners would build
    observations the trained module cannot read (it fails after Ray started, or evaluates a different task)."""
    evaluation = config.get("evaluation_config")
    if not isinstance(evaluation, dict) or not isinstance(evaluation.get("env_config"), dict):
        return
    if "from_pixels" not in evaluation["env_config"]:
        return
    train = config.get("env_config") if isinstance(config.get("env_config"), dict) else {}
    trained, evaluated = train.get("from_pixels", False), evaluation["env_config"]["from_pixels"]
    if is_grid(trained) or is_grid(evaluated) or bool(trained) == bool(evaluated):
        return
    says = ("pixels", "states") if evaluated else ("states", "pixels")
    raise UserError(
        f"evaluation_config.env_config.from_pixels={evaluated!r} evaluates on {says[0]} a policy trained on {says[1]} "
        f"(env_config.from_pixels={trained!r}); remove from_pixels from evaluation_config.env_config (the evaluation "
        "uses the training env_config plus its own overrides)",
        line_of("evaluation_config", "env_config"),
    )


def _expected_type(key: str, attr: str, annotations: dict[str, Any], default) -> Any:
    if key.startswith(("num_cpus", "num_gpus")):
        return typing.Optional[float]  # fractional resources are fine
    if key in annotations:
        return annotations[key]
    declared = getattr(
        type(default), "FIELD_TYPES", {}
    )  # types the defaults do not show (a None default, a nullable str)
    if attr in declared:
        return declared[attr]
    return _type_of_default(getattr(default, attr, None))


# settings RLlib reads from the main config only: written inside evaluation_config they silently do nothing
EVALUATION_ONLY_AT_TOP = (
    "evaluation_interval",
    "evaluation_duration",
    "evaluation_duration_unit",
    "evaluation_num_env_runners",
    "evaluation_parallel_to_training",
    "evaluation_sample_timeout_s",
    "evaluation_force_reset_envs_before_iteration",
    "evaluation_auto_duration_min_env_steps_per_sample",
)


def _check_evaluation_config(
    overrides: dict, algo_class: type, known: set[str], annotations: dict[str, Any], default, line_of
) -> None:
    """``evaluation_config: {explore: false, ...}``: the evaluation runners' config overrides, checked as config
    keys."""
    from ray.rllib.algorithms.algorithm_config import AlgorithmConfig

    for key in list(overrides):
        if not isinstance(key, str):
            raise UserError(
                f"evaluation_config key {key!r} is not a name; use config keys like explore",
                line_of("evaluation_config"),
            )
        attr = AlgorithmConfig._translate_special_keys(key, warn_deprecated=False)
        if key in ("env", "env_config") or attr in ("env", "env_config"):
            continue
        if attr in EVALUATION_ONLY_AT_TOP or attr.startswith("evaluation_"):
            raise UserError(
                f"evaluation_config.{key}: RLlib reads {attr} only at the top of config, never inside "
                f"evaluation_config (the evaluation would not run as written); move `{key}` up one level, next to "
                "evaluation_config",
                line_of("evaluation_config", key),
            )
        if attr not in known and key not in known:
            public = sorted(k for k in known if not k.startswith("_"))
            raise UserError(
                f"unknown evaluation_config key {key!r} for {algo_class.__name__}{did_you_mean(key, public)}"
                " (evaluation_config overrides config keys for the evaluation runners, e.g. {explore: false})",
                line_of("evaluation_config", key),
            )
        where = line_of("evaluation_config", key)
        _check_type(
            f"evaluation_config.{key}",
            overrides[key],
            _expected_type(key, attr, annotations, default),
            where,
            overrides,
            key,
        )
        check_range(key, attr, overrides[key], where, prefix="evaluation_config.")
        check_choice(attr, overrides[key], where, prefix="evaluation_config.")


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
        container[key] = value = int(value)
    if (
        verdict in (True, "int")
        and _is_integer_setting(expected)
        and isinstance(value, int)
        and not isinstance(value, bool)
    ):
        high = all_ranges().get(name.rsplit(".", 1)[-1])
        if abs(value) > MAX_INTEGER_SETTING and (high is None or high.high is None):
            raise UserError(
                f"{name}={value:.3g} is beyond any size a run can use (integer settings are at most "
                f"2**31 - 1){_example_fix(name, int)}",
                where,
            )


MAX_INTEGER_SETTING = 2**31 - 1  # sizes, counts and lengths: torch and numpy index with int32/int64, RAM holds far less


def _is_integer_setting(expected: Any) -> bool:
    """An int (or Optional[int]) setting: not a float one that also takes integers."""
    args = (
        typing.get_args(expected)
        if typing.get_origin(expected) is typing.Union or isinstance(expected, types.UnionType)
        else (expected,)
    )
    return int in args and float not in args


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
    names = {
        bool: "true or false",
        int: "an integer",
        float: "a number",
        str: "a string",
        dict: "a mapping",
        list: "a list",
    }
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


# --------------------------------------------------------------------------------------------- helpers


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
        for lg, level in zip(self._loggers, self._levels, strict=True):
            lg.setLevel(level)
        self._warnings.__exit__(*exc)
        return False
