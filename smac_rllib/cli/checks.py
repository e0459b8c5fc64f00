"""Checks of a tuned example's ``env``, ``env_config`` and ``config`` before Ray sees them.

Unknown keys get the closest known one (``difflib``); values are checked against the type annotations of
RLlib's config setters (``training(twin_q: Optional[bool])``, ...) or, for keys without one (SMAC's own
fields), the type of the default. Integer-valued floats (``1e6``) for integer settings are converted in place.
Value ranges are left to ``smac_errors()`` / ``validate()``.
"""

from __future__ import annotations

import difflib
import inspect
import logging
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
    if env_config is None:
        return
    if not isinstance(env_config, dict):
        raise UserError(f"env_config must be a mapping, got {type_name(env_config)}", line_of("env_config"))
    if not all(e.startswith("dmc/") for e in env_options):
        return  # a gymnasium env: its own kwargs
    from smac_rllib.envs import DMCEnv

    hints = typing.get_type_hints(DMCEnv.__init__)
    for key, value in env_config.items():
        if key not in ENV_CONFIG_KEYS:
            raise UserError(
                f"unknown env_config key {key!r}{did_you_mean(key, ENV_CONFIG_KEYS)} (valid: {', '.join(ENV_CONFIG_KEYS)})",
                line_of("env_config", key),
            )
        _check_type(f"env_config.{key}", value, hints.get(key, Any), line_of("env_config", key), env_config, key)


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
    """Unknown keys (with the closest known one) and values of the wrong type, before Ray sees them."""
    from ray.rllib.algorithms.algorithm_config import AlgorithmConfig

    with quiet():
        default = algo_class.get_default_config()
    known = known_config_keys(default)
    annotations = _config_annotations(type(default))
    for key in list(config):
        if key in ("env", "env_config"):
            continue
        attr = AlgorithmConfig._translate_special_keys(key, warn_deprecated=False)
        if attr not in known and key not in known:
            public = sorted(k for k in known if not k.startswith("_"))
            raise UserError(
                f"unknown config key {key!r} for {algo_class.__name__}{did_you_mean(key, public)}"
                f" (see {type(default).__name__}; all keys: {type(default).__name__}().to_dict())",
                line_of(key),
            )
        _check_type(key, config[key], _expected_type(key, attr, annotations, default), line_of(key), config, key)
        if key == "evaluation_config" and isinstance(config[key], dict):
            _check_evaluation_config(config[key], algo_class, known, annotations, default, line_of)


def _expected_type(key: str, attr: str, annotations: dict[str, Any], default) -> Any:
    if key.startswith(("num_cpus", "num_gpus")):
        return typing.Optional[float]  # fractional resources are fine
    if key in annotations:
        return annotations[key]
    return _type_of_default(getattr(default, attr, None))


def _check_evaluation_config(overrides: dict, algo_class: type, known: set[str], annotations: dict[str, Any], default, line_of) -> None:
    """``evaluation_config: {explore: false, ...}``: the evaluation runners' config overrides, checked as config keys."""
    from ray.rllib.algorithms.algorithm_config import AlgorithmConfig

    for key in list(overrides):
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
