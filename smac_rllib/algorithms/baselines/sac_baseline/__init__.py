"""The paper's SAC baseline in RLlib's per-algorithm layout: ``sac_baseline.py`` (config and algorithm),
``sac_baseline_rl_module.py``, ``sac_baseline_learner.py``. The names below are also this package's, so checkpoints
written when it was one module (``smac_rllib.algorithms.baselines.sac_baseline``) find their classes."""

from smac_rllib.algorithms.baselines.sac_baseline.sac_baseline import SACBaseline, SACBaselineConfig
from smac_rllib.algorithms.baselines.sac_baseline.sac_baseline_learner import SACBaselineTorchLearner
from smac_rllib.algorithms.baselines.sac_baseline.sac_baseline_rl_module import (
    ConcatObsActionMLPEncoder,
    SACBaselineCatalog,
    SACBaselineTorchRLModule,
    SquashedGaussianTanhMean,
)

__all__ = [
    "ConcatObsActionMLPEncoder",
    "SACBaseline",
    "SACBaselineCatalog",
    "SACBaselineConfig",
    "SACBaselineTorchLearner",
    "SACBaselineTorchRLModule",
    "SquashedGaussianTanhMean",
]
