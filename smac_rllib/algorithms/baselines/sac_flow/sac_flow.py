"""SAC with a normalizing-flow policy: the paper's Flow2 / Flow4 baselines (Fig. 9), ``run: SACFlow``.

pi(a|x) is a conditional RealNVP on a standard Gaussian base followed by tanh (``smac_rllib.models.flows``):
z ~ N(0, I), u = f_L o ... o f_1(z; x) with ``flow_blocks`` = L affine coupling blocks, each conditioned on x
through an MLP(x || masked u) of 2 hidden layers of width ``flow_hidden_dim``, a = tanh(u). The log-likelihood
is exact: log N(z) - sum of the blocks' log-dets - the tanh correction (Haarnoja et al. 2018, "Latent space
policies"; Ward et al. 2019). The entropy in the actor loss, the TD target and the alpha loss is -log pi(a|x)
of the sampled action, as SAC's. Everything else is the SAC baseline's (``baselines/policy_sac/``).

Parameter count: each block's conditioner is about one SAC actor (width 400, input x and a instead of x), so
Flow2's actor has ~2x and Flow4's ~4x the SAC actor's parameters, as the paper states (``param_counts``).

Where it differs from the originals: a standard-normal base (Haarnoja et al.; Ward et al. push SAC's state-
conditioned Gaussian through the flow), soft-bounded log-scales (+-3 per block) and zero-initialized
conditioner outputs (the flow starts as the identity) for stability; the deterministic action for evaluation is
tanh(f(0; x)) (the base's mode pushed through the flow; a flow's mode has no closed form).

    SACFlowConfig().environment("dmc/cheetah-run").training(flow_blocks=4).build_algo()
"""

from __future__ import annotations

from ray.rllib.algorithms.sac.sac import SAC

from smac_rllib.algorithms.baselines.policy_sac.policy_sac import PolicySACConfig
from smac_rllib.algorithms.baselines.sac_flow.sac_flow_rl_module import SACFlowTorchRLModule
from smac_rllib.training.fields import count
from smac_rllib.training.off_policy import OffPolicyLoop


_FIELDS = {  # name: Field(default, meaning, checks) -- one home per field (training/fields.py)
    "flow_blocks": count(
        2, "RealNVP coupling blocks: the paper's Flow2; 4 = Flow4", hint="(the paper's Flow2 / Flow4: 2 or 4)"
    ),
    "flow_hidden_dim": count(
        None,
        "width of each block's MLPs; None = hidden_dim (400): each block ~ one SAC actor",
        hint="(None: hidden_dim, 400)",
    ),
}


class SACFlowConfig(PolicySACConfig):
    NONE_IS = {"flow_hidden_dim": "hidden_dim"}  # a None field that runs as another field's value
    FIELDS = _FIELDS  # one row per field (training/fields.py: FieldTableConfig)
    module_class = SACFlowTorchRLModule

    def __init__(self, algo_class=None):
        super().__init__(algo_class=algo_class or SACFlow)

    @property
    def _model_config_auto_includes(self):
        return super()._model_config_auto_includes | {
            "flow_blocks": self.flow_blocks,
            "flow_hidden_dim": self.flow_hidden_dim,
        }


class SACFlow(OffPolicyLoop, SAC):
    """SAC with a conditional RealNVP policy (Flow2 / Flow4 of the paper), trained by the same loop as SMAC."""

    @classmethod
    def get_default_config(cls) -> SACFlowConfig:
        return SACFlowConfig()
