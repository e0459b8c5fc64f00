"""What a config key that is no setting of this algorithm is instead, said as the fix: a key RLlib removed (its config
may keep the name as a placeholder at ``DEPRECATED_VALUE``, -1, only to refuse it later inside Ray), a key that RLlib
sets itself (``in_evaluation``), a dmc ``env_config`` key one level up, another algorithm's or library's setting
(``key_owners.py``, ``other_keys.py``), or else the nearest spelling."""

from __future__ import annotations

import inspect
from typing import Any

from ray.rllib.algorithms.algorithm_config import AlgorithmConfig

from smac_rllib.cli.errors import did_you_mean
from smac_rllib.cli.grids import is_grid
from smac_rllib.cli.key_owners import is_placeholder, owners_of
from smac_rllib.cli.other_keys import OTHER_LIBRARY_KEYS, REMOVED_KEYS
from smac_rllib.envs import ENV_CONFIG_KEYS

# Keys of the config that are no user setting (a traceback inside RLlib when set)
NOT_SETTINGS = {
    "in_evaluation": "RLlib sets it on the evaluation's own copy of the config; evaluation settings go in "
    "evaluation_config (e.g. evaluation_config: {explore: false})",
}


def placeholders(config_dict: dict) -> set[str]:
    """The keys of a config's ``to_dict()`` that are no setting: RLlib's removed keys and ``NOT_SETTINGS``."""
    return {key for key, value in config_dict.items() if is_placeholder(value)} | set(NOT_SETTINGS)


def _builder_method(key: str) -> bool:
    """``training``, ``env_runners``, ``evaluation``, ...: a method of RLlib's config builder, not a setting."""
    return not key.startswith("_") and inspect.isfunction(getattr(AlgorithmConfig, key, None))


def unknown_key_hint(key: str, algorithm: str, public: list[str], removed: bool) -> str:
    """``; <what to write instead>`` for ``key``, unknown to ``algorithm`` (``public``: its keys; ``removed``: the
    key is one of its config's placeholders)."""
    if key in NOT_SETTINGS:
        return f"; {NOT_SETTINGS[key]}"
    if _builder_method(key):
        return (
            f"; {key} is the config builder's method .{key}(...) of the Python API: in the file its keyword arguments "
            f"go directly under config: (e.g. `config: {{num_particles: 16, num_env_runners: 2}}`), without a "
            f"{key}: level"
        )
    if key in REMOVED_KEYS:
        hint = f"; RLlib removed it: {REMOVED_KEYS[key]}"
    elif removed:
        hint = "; RLlib removed it (its config keeps the name only to refuse it inside Ray): remove it"
    else:
        hint = did_you_mean(key, public, 0.75)
    if key in ENV_CONFIG_KEYS:  # a dmc env's setting written one level up
        hint = f"; it is an env_config key: write env_config: {{{key}: ...}}"
    owners = owners_of(key, algorithm)  # another algorithm's setting, not a misspelling
    names = " and ".join([", ".join(owners[:-1]), owners[-1]] if len(owners) > 1 else owners)
    said = [f"it is a setting of {names}, not of {algorithm}"] if owners else []
    said += [OTHER_LIBRARY_KEYS[key]] if key in OTHER_LIBRARY_KEYS else []
    return "".join(f"; {part}" for part in said) or hint


def is_unknown_key(key: str, known: set[str]) -> bool:
    """Neither ``key`` nor the attribute RLlib translates it to (``num_workers`` -> ``num_env_runners``) is known."""
    return key not in known and AlgorithmConfig._translate_special_keys(key, warn_deprecated=False) not in known


def also_unknown(config: dict, key: str, known: set[str]) -> str:
    """``; also unknown: 'b', 'c'`` for the config's other unknown keys (all said at once, not one per run)."""
    others = [
        repr(k)
        for k in config
        if isinstance(k, str) and k not in (key, "env", "env_config") and is_unknown_key(k, known)
    ]
    return f"; also unknown: {', '.join(others[:6])}{', ...' if len(others) > 6 else ''}" if others else ""


# RLlib's multi-agent settings: the envs here have one agent, trained by one policy
MULTI_AGENT_KEYS = (
    "policies", "policy_mapping_fn", "policies_to_train", "multiagent", "algorithm_config_overrides_per_module",
)  # fmt: skip


def said_before_type(key: str, value: Any, default, annotation: Any = None) -> str | None:
    """What a known key's value is instead of a type mistake: a multi-agent setting on these one-agent envs, a value
    outside one of our fields' choices (the choices named, not a type), or a Python object (a class, a function, a
    gymnasium space) that a YAML file cannot hold."""
    if key in _MAPPINGS and value is not None and not isinstance(value, dict):  # `- explore: false`: a list
        return (
            f"{key} must be a mapping of settings, e.g. {key}: {_MAPPINGS[key]}, got {type(value).__name__} {value!r}"
        )
    if key == "target_entropy" and isinstance(value, str) and value != "auto":  # a formula: -dim(A)
        return f"target_entropy={value!r}: write a number (e.g. -6.0) or auto (-|A|, the action space's dimension)"
    if value is not None and (what := _python_object(annotation)):
        instead = PYTHON_OBJECTS_INSTEAD.get(key, "remove it (or build the config in Python)")
        return f"{key}={value!r}: it takes a Python {what}, which a YAML file cannot hold; {instead}"
    if key in MULTI_AGENT_KEYS and value not in (None, {}, []):
        return (
            f"{key}={value!r} is a multi-agent setting: the envs here have one agent, trained by one policy "
            f"(default_policy); remove {key}"
        )
    field = getattr(default, "ALL_FIELDS", {}).get(key)
    if field is not None and field.choices and not is_grid(value):
        return field.error(key, value)
    return None


_MAPPINGS = {"evaluation_config": "{explore: false}", "replay_buffer_config": "{capacity: 1000000}"}
PYTHON_OBJECTS_INSTEAD = {
    "observation_space": "the spaces come from the env itself: remove it",
    "action_space": "the spaces come from the env itself: remove it",
    "env_runner_cls": "the env runners here are RLlib's SingleAgentEnvRunner: remove it",
}


def _python_object(annotation: Any) -> str | None:
    """``class``, ``function`` or ``gymnasium space`` for a setter annotation that takes such an object."""
    text = str(annotation)
    if "Callable" in text:
        return "function"
    if "gymnasium.spaces" in text:
        return "gymnasium space"
    if annotation is type or "Optional[type]" in text or "typing.Type[" in text:
        return "class"
    return None
