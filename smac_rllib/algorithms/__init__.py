"""RLlib algorithms of this package: SMAC (ours, ``smac/``) and the paper's baselines on the same plumbing
(``baselines/``): state SACBaseline, TD3, SACFlow (Flow2/Flow4), SACMoE (MOE5/MOE10); pixel SLAC (docs/slac.md) and
Dreamer (the reference code's DreamerV1, docs/baselines.md). ``param_counts(config)`` gives each one's actor/critic
sizes; ``config_questions`` answers what the command line asks of any algorithm's config.

The names import lazily (``from smac_rllib.algorithms import SMACConfig`` loads SMAC only), so a module of this
package that needs none of the algorithms does not pay for importing them all.
"""

import importlib

_HOMES = {
    "SMAC": "smac_rllib.algorithms.smac",
    "SMACConfig": "smac_rllib.algorithms.smac",
    "Dreamer": "smac_rllib.algorithms.baselines.dreamer",
    "DreamerConfig": "smac_rllib.algorithms.baselines.dreamer",
    "SACBaseline": "smac_rllib.algorithms.baselines.sac_baseline",
    "SACBaselineConfig": "smac_rllib.algorithms.baselines.sac_baseline",
    "SACFlow": "smac_rllib.algorithms.baselines.sac_flow",
    "SACFlowConfig": "smac_rllib.algorithms.baselines.sac_flow",
    "SACMoE": "smac_rllib.algorithms.baselines.sac_moe",
    "SACMoEConfig": "smac_rllib.algorithms.baselines.sac_moe",
    "SLAC": "smac_rllib.algorithms.baselines.slac",
    "SLACConfig": "smac_rllib.algorithms.baselines.slac",
    "TD3": "smac_rllib.algorithms.baselines.td3",
    "TD3Config": "smac_rllib.algorithms.baselines.td3",
    "param_counts": "smac_rllib.algorithms.counts",
}
__all__ = list(_HOMES)


def __getattr__(name):
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module 'smac_rllib.algorithms' has no attribute {name!r}")
