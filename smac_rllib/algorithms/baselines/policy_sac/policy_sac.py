"""SAC with another policy family, on our plumbing: the shared base of the Flow and MoE baselines (Fig. 9).

Everything but the policy is the paper's SAC baseline (``baselines/sac_baseline/``): the same config defaults (lr 3e-4,
initial alpha 0.1, tau 0.005, batch 256, 1 update per env step, 5000 uniform random steps first, replay 1M,
async loop), the same critic (twin Q = MLP(x || a), ReLU, width ``hidden_dim`` = 400), the MSE critic loss of
``smac_rllib.objectives.losses`` and the soft TD target with the entropy term ``-log pi(a'|x')`` (``losses.td_target``),
the actor loss ``E[alpha log pi(a|x) - min_i Q_i(x, a)]`` and alpha auto-tuned to the target entropy -|A|.
A subclass only says how to build the policy (``build_policy``) and, if it needs to, how to form the actor's
terms (``actor_terms``, e.g. the MoE's per-expert choice).

The module and learner are ours (not RLlib's SAC ones, whose losses assume a squashed Gaussian's dist inputs):
``PolicySACTorchRLModule`` (policy, twin Q, target twin Q, log(alpha); inference-only copy = the policy) and
``PolicySACTorchLearner`` (one optimizer per component: critic, actor, alpha; one backward of the summed losses,
since every parameter gets its gradient from exactly one term, as SMAC's learner). Adam with torch's default eps
1e-8 (pytorch_sac's; the SAC baseline keeps RLlib's 1e-7).

"""

from __future__ import annotations

import math
from typing import Any

from ray.rllib.core.rl_module.rl_module import RLModuleSpec

from smac_rllib.algorithms.baselines.policy_sac.policy_sac_learner import PolicySACTorchLearner
from smac_rllib.algorithms.baselines.sac_baseline.sac_baseline import SACBaselineConfig


class PolicySACConfig(SACBaselineConfig):
    """``SACBaselineConfig`` (same defaults, async fields and checks) with our module and learner."""

    module_class: type = None  # set by subclasses

    def get_default_rl_module_spec(self):
        return RLModuleSpec(module_class=self.module_class)

    def get_default_learner_class(self):
        return PolicySACTorchLearner

    @property
    def _model_config_auto_includes(self) -> dict[str, Any]:
        return super()._model_config_auto_includes | {
            "hidden_dim": self.hidden_dim,
            "initial_log_alpha": math.log(self.initial_alpha)  # checked by the row; read before validate() too
            if isinstance(self.initial_alpha, (int, float)) and self.initial_alpha > 0
            else 0.0,
        }
