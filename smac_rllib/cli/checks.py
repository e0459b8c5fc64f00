"""Checks of a tuned example's ``config`` before Ray sees them (``env`` and ``env_config``: ``env_checks.py``).

Unknown keys get the closest known one (``difflib``); values are checked against the type annotations of
RLlib's config setters (``training(twin_q: Optional[bool])``, ...) or, for keys without one (SMAC's own
fields), the type of the default. Integer-valued floats (``1e6``) for integer settings are converted in place.
Value ranges: ``cli/ranges.py`` (RLlib's numeric settings, and the algorithms' own from ``config_questions.ranges``),
``smac_rllib.envs.validation`` for env_config, ``config_errors()`` for settings that depend on each other
(each algorithm's own errors, ranges and batch come from ``smac_rllib.algorithms.config_questions``).
NaN and inf are refused anywhere (``check_finite``). Result keys: ``cli/result_keys.py``.
"""

from __future__ import annotations

import inspect
import math
import re
import types
import typing
from collections.abc import Mapping
from typing import Any

from ray.rllib.algorithms.algorithm_config import AlgorithmConfig

from smac_rllib.core.values import is_int, is_real
from smac_rllib.cli.other_keys import OTHER_LIBRARY_KEYS
from smac_rllib.cli.unknown_keys import also_unknown, is_unknown_key, placeholders, said_before_type, unknown_key_hint
from smac_rllib.cli.same_trials import UPDATE_ONLY_KEYS
from smac_rllib.cli.errors import UserError, did_you_mean, type_name
from smac_rllib.cli.experiment_spec import EXPERIMENT_KEYS
from smac_rllib.cli.grids import is_grid
from smac_rllib.cli.ranges import CHOICES, all_ranges, check_choice, check_range
from smac_rllib.cli.ray_output import quiet


def known_config_keys(default_config) -> set[str]:
    """Every key ``update_from_dict`` turns into a real setting of this config class."""
    keys = set(config_dict := default_config.to_dict()) - placeholders(config_dict)
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


def config_key_hint(key, algo_class: type) -> str:
    """``; num_particles is a config key of SMAC: move it under config:`` for a config key written beside config."""
    with quiet():
        known = known_config_keys(algo_class.get_default_config())
    if not isinstance(key, str) or key not in known:
        return ""
    return f"; {key} is a config key of {algo_class.__name__}: move it under `config:` (indented one level more)"


def _refuse_experiment_key(key: str, mapping: str, where: str) -> None:
    """An experiment key (``stop``, ``num_samples``, ...) written inside ``config`` / ``evaluation_config``."""
    if key in EXPERIMENT_KEYS and str(where).endswith("(--config)"):
        flag = {"stop": "--stop", "num_samples": "--num-samples", "storage_path": "--storage-path"}.get(key)
        fix = (
            "--config is already the config: pass its keys directly, e.g. --config '{\"num_particles\": 8}'"
            if key == "config"
            else f"pass it as {flag} instead"
            if flag
            else f"write {key}: in the file, beside config:"
        )
        raise UserError(f"{key} is an experiment key, and --config sets config keys only; {fix}", where)
    if key in EXPERIMENT_KEYS:
        up = "beside it (one level up)" if mapping == "config" else "beside config: (two levels up)"
        raise UserError(f"{key} is an experiment key, not a config key: move `{key}:` out of {mapping}, {up}", where)


def check_config(config: dict, algo_class: type, line_of) -> None:
    """Unknown keys (with the closest known one), values of the wrong type and out of range, before Ray sees them."""
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
        if is_unknown_key(key, known):
            _refuse_experiment_key(key, "config", line_of(key))
            public = sorted(k for k in known if not k.startswith("_"))
            hint = unknown_key_hint(key, algo_class.__name__, public, removed=key in placeholders(default.to_dict()))
            raise UserError(
                f"unknown config key {key!r} for {algo_class.__name__}{hint} (see {type(default).__name__}; all keys: "
                f"{type(default).__name__}().to_dict()){also_unknown(config, key, known)}",
                line_of(key),
            )
        if said := said_before_type(attr, config[key], default, annotations.get(attr)):  # a choice, a multi-agent key
            raise UserError(said, line_of(key))
        expected = _expected_type(key, attr, annotations, default)
        own = attr in getattr(default, "ALL_FIELDS", {})  # our field tables: None may stand for a per-run value
        value = default.resolved(attr) if own else getattr(default, attr, None)
        check_type(key, config[key], expected, line_of(key), config, key, value)
        check_range(key, attr, config[key], line_of(key), algo_class=algo_class)
        check_choice(key if key in CHOICES else attr, config[key], line_of(key))
        if key == "evaluation_config" and isinstance(config[key], dict) and not is_grid(config[key]):
            _check_evaluation_config(config[key], algo_class, known, annotations, default, line_of)


def _expected_type(key: str, attr: str, annotations: dict[str, Any], default) -> Any:
    if key.startswith(("num_cpus", "num_gpus")):
        return typing.Optional[float]  # fractional resources are fine
    if key in annotations:
        return annotations[key]
    declared = getattr(type(default), "FIELD_TYPES", {})  # types a None default does not show
    if attr in declared:
        return declared[attr]
    return type_of_default(getattr(default, attr, None))


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


# Read by the training loop only (besides ``UPDATE_ONLY_KEYS``): an iteration's size, the learners, the replay.
TRAINING_ONLY_KEYS = (
    "num_steps_sampled_before_learning_starts", "replay_buffer_config", "lr", "min_sample_timesteps_per_iteration",
    "min_train_timesteps_per_iteration", "min_time_s_per_iteration", "train_batch_size", "training_intensity",
    "num_learners", "num_gpus_per_learner", "num_cpus_per_learner", "n_step",
)  # fmt: skip


def _check_evaluation_config(
    overrides: dict, algo_class: type, known: set[str], annotations: dict[str, Any], default, line_of
) -> None:
    """``evaluation_config: {explore: false, ...}``: the evaluation runners' config overrides, checked as config
    keys."""
    for key in list(overrides):
        if not isinstance(key, str):
            raise UserError(
                f"evaluation_config key {key!r} is not a name; use config keys like explore",
                line_of("evaluation_config"),
            )
        attr = AlgorithmConfig._translate_special_keys(key, warn_deprecated=False)
        if key in ("env", "env_config") or attr in ("env", "env_config"):
            continue
        if attr in ("num_env_runners", "num_workers"):  # the evaluation's runners are counted at the top
            raise UserError(
                f"evaluation_config.{key}: the evaluation's env runners are evaluation_num_env_runners, at the top of "
                f"config (num_env_runners inside evaluation_config is never read); write evaluation_num_env_runners: "
                f"{overrides[key]!r} next to evaluation_config",
                line_of("evaluation_config", key),
            )
        if attr in EVALUATION_ONLY_AT_TOP or attr.startswith("evaluation_"):
            raise UserError(
                f"evaluation_config.{key}: RLlib reads {attr} only at the top of config, never inside "
                f"evaluation_config (the evaluation would not run as written); move `{key}` up one level, next to "
                "evaluation_config",
                line_of("evaluation_config", key),
            )
        learner_only = UPDATE_ONLY_KEYS + TRAINING_ONLY_KEYS + getattr(default, "LEARNER_ONLY", ())
        if key in learner_only or key.endswith("_lr"):  # the evaluation never trains
            raise UserError(
                f"evaluation_config.{key}: the evaluation runs the trained policy and never trains, so {key} there "
                "is never read; move it up to config (or remove it)",
                line_of("evaluation_config", key),
            )
        if is_unknown_key(key, known):
            _refuse_experiment_key(key, "evaluation_config", line_of("evaluation_config", key))
            public = sorted(k for k in known if not k.startswith("_"))
            hint = f"; {OTHER_LIBRARY_KEYS[key]}" if key in OTHER_LIBRARY_KEYS else did_you_mean(key, public)
            raise UserError(
                f"unknown evaluation_config key {key!r} for {algo_class.__name__}{hint}"
                " (evaluation_config overrides config keys for the evaluation runners, e.g. {explore: false})",
                line_of("evaluation_config", key),
            )
        where = line_of("evaluation_config", key)
        check_type(
            f"evaluation_config.{key}",
            overrides[key],
            _expected_type(key, attr, annotations, default),
            where,
            overrides,
            key,
        )
        check_range(key, attr, overrides[key], where, prefix="evaluation_config.", algo_class=algo_class)
        check_choice(attr, overrides[key], where, prefix="evaluation_config.")


def type_of_default(value: Any) -> Any:
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


def check_type(
    name: str, value: Any, expected: Any, where: str, container: dict, key: Any, default: Any = None
) -> None:
    """Raise a UserError when ``value`` (or any of its grid_search options) cannot be ``expected``.

    Integer-valued floats for integer settings (``1e6``) are converted in place.
    """
    if is_grid(value):
        options = value["grid_search"]
        for i, option in enumerate(options):
            check_type(name, option, expected, where, options, i, default)
        return
    verdict = _matches(value, expected)
    if verdict is False:
        fix = _example_fix(name, expected, value)
        generic = isinstance(value, str) and fix == _example_fix(name, expected, "")  # not the user's own value
        if generic and is_real(default) and not isinstance(default, bool):  # initial_alpha: 0.1, not 0.0003
            fix = f" (write e.g. `{name.split('.')[-1]}: {default!r}`, its default)"
        if isinstance(value, str) and re.fullmatch(r"\s*-?[\d.e]+(\s+-?[\d.e]+)+\s*", value):  # [0 1 2]: one string
            fix = f" (a YAML list separates its values with commas: [{', '.join(value.split())}])"
        if isinstance(value, str) and value.strip().lower() in ("none", "nil", "undefined"):
            allowed = _matches(None, expected) is not False
            fix = f" (YAML's None is null: `{name.split('.')[-1]}: null`)" if allowed else f"; it takes no null{fix}"
        raise UserError(
            f"{name}={value!r} has the wrong type: expected {_describe(expected)}, got {type_name(value)}{fix}",
            where,
        )
    if verdict == "int" and isinstance(value, float):
        container[key] = value = int(value)
    if verdict in (True, "int") and _is_integer_setting(expected) and is_int(value):
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
        return is_real(value)
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


def _example_fix(name: str, expected: Any, value: Any = None) -> str:
    """`` (write e.g. `key: [16]`)``: a value of the expected type, from the user's own value where it converts (the
    string ``"16"`` -> ``16``, the number ``16`` for a list -> ``[16]``), never the wrong value back."""
    key = name.split(".")[-1]
    if isinstance(value, list) and value and all(_matches(v, expected) is not False for v in value):
        distinct = list({repr(v): v for v in value}.values())
        if len(distinct) < len(value) and ("dim" in key or "hidden" in key):  # [256, 256]: RLlib's fcnet_hiddens
            return f" ({key} is one width for every layer: `{key}: {value[0]!r}`)"
        if len(distinct) < len(value):
            return f" (a sweep lists each value once: `{key}: {{grid_search: {distinct!r}}}`)"
        return f" (a sweep over these values is `{key}: {{grid_search: {value!r}}}`)"  # the list the user meant
    args = [a for a in typing.get_args(expected) if a is not type(None)] or [expected]
    if typing.get_origin(expected) in (list, tuple):
        args = [expected]
    for a in args:
        example = _example(a, value)
        if example is not None:
            quotes = ", without quotes" if isinstance(value, str) else ""
            return f" (write e.g. `{key}: {example}`{quotes})"
    return ""


_EXAMPLES = {bool: "true", int: "16", float: "0.0003"}


def _example(expected: Any, value: Any) -> str | None:
    """A YAML value of type ``expected`` (a scalar or a list of one), ``value`` converted where it can be."""
    if expected in _EXAMPLES:
        return _converted(expected, value) or _EXAMPLES[expected]
    if expected in (list, tuple, typing.List, typing.Tuple) or typing.get_origin(expected) in (list, tuple):
        items = [a for a in typing.get_args(expected) if a is not Ellipsis]
        item = items[0] if len(items) == 1 or typing.get_origin(expected) is list else None
        if item in _EXAMPLES:
            return f"[{_converted(item, value) or _EXAMPLES[item]}]"
        if value is not None and not isinstance(value, (dict, list)):
            return f"[{value}]"
        return "[16]" if item is None else None
    return None


def _converted(expected: type, value: Any) -> str | None:
    """``value`` written as a YAML ``expected`` (``"16"`` -> ``16``, ``2.5`` for an integer -> ``2``), else None."""
    text = str(value).strip() if isinstance(value, (str, int, float)) and not isinstance(value, bool) else None
    if text is None:
        return None
    if expected is bool:
        return text.lower() if text.lower() in ("true", "false") else None
    try:
        number = float(text)
    except ValueError:
        return None
    if expected is int:  # 2.5 -> 2 (the nearest whole number below: the user's scale, not an unrelated 16); 0.5 -> 1
        if not math.isfinite(number):
            return None
        return "1" if 0 < number < 1 else str(math.floor(number))
    return text if math.isfinite(number) else None
