"""Which other algorithm has a config key: a key this run's algorithm does not know, but another one does (PPO's
``clip_param``, TD3's ``policy_delay``), names its owners instead of the nearest spelling here (``clip_param`` is
not ``clip_rewards``). Ours (``smac_rllib.TRAINABLES``) and RLlib's registry, read once, only on that error path."""

from __future__ import annotations

import functools

from ray.rllib.algorithms.registry import ALGORITHMS

import smac_rllib
from smac_rllib import algorithms
from smac_rllib.cli.ray_output import quiet


@functools.cache
def _keys_by_algorithm() -> dict[str, frozenset]:
    found: dict[str, frozenset] = {}
    with quiet():
        for name in smac_rllib.TRAINABLES:
            found[name] = frozenset(getattr(algorithms, name).get_default_config().to_dict())
        for name, load in ALGORITHMS.items():
            try:
                _, config = load()
            except Exception:  # noqa: BLE001, S112 - an algorithm whose extra is not installed names nothing
                continue
            found.setdefault(name, frozenset(config.to_dict() if hasattr(config, "to_dict") else config))
    return found


def owners_of(key: str, algorithm: str) -> list[str]:
    """The algorithms other than ``algorithm`` whose config has ``key`` (ours first)."""
    return [name for name, keys in _keys_by_algorithm().items() if key in keys and name != algorithm]
