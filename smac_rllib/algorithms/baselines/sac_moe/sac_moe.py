"""SAC with a Gaussian-mixture policy: the paper's MOE5 / MOE10 baselines (Fig. 9), ``run: SACMoE``.

The policy is Ren et al. 2021's probabilistic mixture-of-experts (PMOE): ``num_experts`` tanh-Gaussian experts
on a shared MLP trunk and a linear softmax gate w(x) (``smac_rllib.models.mixture``). Acting samples an expert
k ~ Categorical(w(x)) and then its Gaussian; the log-likelihood log pi(a|x) is the mixture's, exact (log-sum-exp
over the experts, minus the tanh correction).

Gradient estimator for the discrete expert choice: Ren et al.'s *frequency approximate gradient*. For each state
the actor draws one reparameterized action from EVERY expert, a_k = tanh(mu_k + sigma_k eps_k), evaluates
min_i Q_i(x, a_k) (critics frozen) and picks the best expert b = argmax_k; the experts get the pathwise (SAC)
gradient of ``alpha log pi(a_b|x) - Q(x, a_b)`` and the gate is regressed onto the one-hot of b
(``mean((w(x) - onehot(b))^2)``): the frequency with which an expert is the best one is the weight it should
get. Why this one: it is what the MOE baselines of the paper are (Ren et al.'s method and code), and Ren et al.
found it better than the alternatives they compared: the score-function (REINFORCE) estimator is unbiased but
high-variance with a learned Q as the signal, and Gumbel-softmax relaxes the choice into a blend of experts
(biased, temperature-sensitive). Its cost: K critic evaluations per state in the actor step.

Where it differs from Ren et al.'s code: the entropy term (actor, TD target, alpha) uses the exact mixture
log-likelihood log pi(a|x) rather than the chosen expert's own Gaussian log-density, so alpha tunes the entropy
of the policy that acts (as for SAC, Flow and SMAC); the trunk has 2 hidden layers (theirs 4), its width
``moe_hidden_dim`` (None = automatic) is chosen so the actor has as many parameters as the SAC baseline's
(width 400), as the paper compares at equal size; the critic, replay and schedule are the SAC baseline's.
The deterministic action (``explore=False``) is tanh of the most probable expert's mean.

    SACMoEConfig().environment("dmc/cheetah-run").training(num_experts=10).build_algo()
"""

from __future__ import annotations

from ray.rllib.algorithms.sac.sac import SAC

from smac_rllib.algorithms.baselines.policy_sac.policy_sac import PolicySACConfig
from smac_rllib.algorithms.baselines.sac_moe.sac_moe_rl_module import SACMoETorchRLModule
from smac_rllib.training.fields import count
from smac_rllib.training.off_policy import OffPolicyLoop


_FIELDS = {  # name: Field(default, meaning, checks) -- one home per field (training/fields.py)
    "num_experts": count(
        5,
        "mixture components: the paper's MOE5; 10 = MOE10",
        low=2,
        hint="(the paper's MOE5 / MOE10: 5 or 10; one expert is the SACBaseline)",
    ),
    "moe_hidden_dim": count(
        None,
        "expert width; None = the width that matches the SAC actor's parameter count",
        hint="(None: the SAC actor's size)",
    ),
}


class SACMoEConfig(PolicySACConfig):
    FIELDS = _FIELDS  # one row per field (training/fields.py: FieldTableConfig)
    module_class = SACMoETorchRLModule

    def __init__(self, algo_class=None):
        super().__init__(algo_class=algo_class or SACMoE)

    @property
    def _model_config_auto_includes(self):
        return super()._model_config_auto_includes | {
            "num_experts": self.num_experts,
            "moe_hidden_dim": self.moe_hidden_dim,
        }


class SACMoE(OffPolicyLoop, SAC):
    """SAC with a probabilistic mixture-of-experts policy (MOE5 / MOE10 of the paper), trained by the same loop as
    SMAC."""

    @classmethod
    def get_default_config(cls) -> SACMoEConfig:
        return SACMoEConfig()
