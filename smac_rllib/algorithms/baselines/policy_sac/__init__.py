"""SAC with another policy family (the shared base of SACFlow and SACMoE) in RLlib's per-algorithm layout:
``policy_sac.py`` (config), ``policy_sac_rl_module.py``, ``policy_sac_learner.py``. The names below are also this
package's, so checkpoints written when it was one module (``smac_rllib.algorithms.baselines.policy_sac``) find
their classes."""

from smac_rllib.algorithms.baselines.policy_sac.policy_sac import PolicySACConfig
from smac_rllib.algorithms.baselines.policy_sac.policy_sac_learner import PolicySACTorchLearner
from smac_rllib.algorithms.baselines.policy_sac.policy_sac_rl_module import (
    EXTRA_ACTOR_LOSS,
    LOGP,
    LOGP_NEXT,
    Q_NEXT_TARGET,
    Q_PI,
    Q_PRED,
    PolicySACTorchRLModule,
)
from smac_rllib.algorithms.twin_q_module import check_flat_spaces  # here before: old pickles and imports find it

__all__ = [
    "EXTRA_ACTOR_LOSS",
    "LOGP",
    "LOGP_NEXT",
    "PolicySACConfig",
    "PolicySACTorchLearner",
    "PolicySACTorchRLModule",
    "Q_NEXT_TARGET",
    "Q_PI",
    "Q_PRED",
    "check_flat_spaces",
]
