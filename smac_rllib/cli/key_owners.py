"""Which other algorithm has a config key: a key this run's algorithm does not know, but another one does (PPO's
``clip_param``, TD3's ``policy_delay``), names its owners instead of the nearest spelling here (``clip_param`` is
not ``clip_rewards``). Ours (``smac_rllib.TRAINABLES``) and RLlib's registry, read once, only on that error path."""

from __future__ import annotations

import functools
from typing import Any

from ray._common.deprecation import DEPRECATED_VALUE

from ray.rllib.algorithms.registry import ALGORITHMS

import smac_rllib
from smac_rllib import algorithms
from smac_rllib.cli.ray_output import quiet


def is_placeholder(value: Any) -> bool:
    """RLlib's ``DEPRECATED_VALUE`` (-1) default of a removed key (not a bool, not a float)."""
    return type(value) is int and value == DEPRECATED_VALUE


def _settings(config_dict: dict) -> frozenset:
    """The keys of a config that are settings (not RLlib's placeholders of removed keys)."""
    return frozenset(key for key, value in config_dict.items() if not is_placeholder(value))


@functools.cache
def _keys_by_algorithm() -> dict[str, frozenset]:
    found: dict[str, frozenset] = {}
    with quiet():
        for name in smac_rllib.TRAINABLES:
            found[name] = _settings(getattr(algorithms, name).get_default_config().to_dict())
        for name, load in ALGORITHMS.items():
            try:
                _, config = load()
            except Exception:  # noqa: BLE001, S112 - an algorithm whose extra is not installed names nothing
                continue
            found.setdefault(name, _settings(config.to_dict() if hasattr(config, "to_dict") else config))
    return found


def owners_of(key: str, algorithm: str) -> list[str]:
    """The algorithms other than ``algorithm`` whose config has ``key`` (ours first)."""
    return [name for name, keys in _keys_by_algorithm().items() if key in keys and name != algorithm]
