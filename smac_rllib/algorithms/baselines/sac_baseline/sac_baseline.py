"""The paper's SAC baseline: RLlib's built-in SAC, configured like pytorch_sac, on our off-policy loop.

Same env wrapper, same replay (uniform, 1M), same update-to-data ratio and batch as SMAC, learning rates 3e-4,
initial alpha 0.1, width 400 (so its parameter count matches SMAC's width-256 latent policy), the MSE critic
loss and exactly ``num_steps_sampled_before_learning_starts`` uniform random steps first (pytorch_sac; the
same warm-up code as SMAC, ``OffPolicyLoop._sample_warm_up``). So ``SMACConfig`` vs ``SACBaselineConfig`` is
one switch and the two differ only by the latent policy (and width 400 vs 256). The actor, like RLlib's and
pytorch_sac's, takes the minimum of the twin critics. What stays RLlib's: Adam eps 1e-7 (pytorch_sac: 1e-8)
and one backward per optimizer (docs/fidelity.md).

Three things of RLlib 2.60's SAC are replaced, so that the baseline is the paper's SAC:
- the critic loss: RLlib's is Huber (delta 1); ``SACBaselineTorchLearner`` uses ``smac_rllib.objectives.losses``' MSE
  (``critic_loss: huber`` restores RLlib's);
- the critic: RLlib encodes x and a in separate 400-400 streams joined by a dense tanh "fusion" net (256, 256, 400;
  ~4x the parameters); ``SACBaselineCatalog`` builds pytorch_sac's Q = MLP(x || a) with ReLU layers 400-400 -> 1;
- the deterministic action: RLlib's squashed Gaussian returns the pre-tanh mean (``explore=False`` evaluation, e.g.
  ``rllib evaluate``, acted with clip(mean) instead of tanh(mean)); ``SquashedGaussianTanhMean`` squashes it.
"""

from __future__ import annotations

from ray.rllib.algorithms.sac.sac import SAC, SACConfig
from ray.rllib.core.rl_module.rl_module import RLModuleSpec

from smac_rllib.algorithms.baselines.sac_baseline import sac_baseline_learner, sac_baseline_rl_module
from smac_rllib.training.fields import (
    MAX_UPDATES_PER_ENV_STEP,
    MIN_UPDATES_PER_ENV_STEP,
    ASYNC_FIELDS,
    OFF_POLICY_RLLIB_FIELDS,
    SAC_RLLIB_FIELDS,
    Field,
    FieldTableConfig,
    count,
    positive,
    seed_actions,
)
from smac_rllib.training.off_policy import OffPolicyLoop

_FIELDS = (
    {  # name: Field(default, meaning, checks) -- one home per field (training/fields.py)
        "updates_per_env_step": positive(
            1.0,
            "gradient updates per sampled env step (as SMAC; pytorch_sac: 1)",
            hint="(per env step, not per iteration; pytorch_sac: 1)",
            high=MAX_UPDATES_PER_ENV_STEP,
            low=MIN_UPDATES_PER_ENV_STEP,
            low_open=False,
        ),
        "hidden_dim": count(
            400,
            "width of the actor and critic MLPs (paper: 400 for SAC vs 256 for SMAC, to match parameters)",
            hint="(paper's SAC baseline: 400)",
        ),
        "critic_loss": Field("mse", "'mse' (pytorch_sac) | 'huber' (RLlib SAC's)", choices=("mse", "huber")),
        "random_actions_before_learning": seed_actions("pytorch_sac's seed steps, as SMAC"),
        # RLlib's own fields (with SAC_RLLIB_FIELDS): RLlib's training() takes them; these rows set the defaults
        "initial_alpha": positive(
            0.1, "initial temperature (pytorch_sac init_temperature)", hint="(pytorch_sac: 0.1)", rllib=True
        ),
        "num_steps_sampled_before_learning_starts": count(
            5000, "uniform random agent steps before learning (pytorch_sac)", low=0, hint="(paper: 5000)", rllib=True
        ),
        "train_batch_size_per_learner": count(256, "transitions per update", hint="(paper: 256)", rllib=True),
    }
    | SAC_RLLIB_FIELDS
    | ASYNC_FIELDS
    | OFF_POLICY_RLLIB_FIELDS
)  # the asynchronous actor-learner and replay, as SMAC (docs/design.md §8)


class SACBaselineConfig(FieldTableConfig, SACConfig):
    FIELDS = _FIELDS  # one row per field (training/fields.py: FieldTableConfig)
    READS_TWIN_Q = True  # RLlib's SAC module and its loss take twin_q: false (one critic)

    def __init__(self, algo_class=None):
        super().__init__(algo_class=algo_class or SACBaseline)  # every row of _FIELDS at its default (RLlib's too)

    def get_default_rl_module_spec(self) -> RLModuleSpec:
        return RLModuleSpec(
            module_class=sac_baseline_rl_module.SACBaselineTorchRLModule,
            catalog_class=sac_baseline_rl_module.SACBaselineCatalog,
        )

    def get_default_learner_class(self):
        return sac_baseline_learner.SACBaselineTorchLearner

    @property
    def _model_config_auto_includes(self):
        # RLlib's SAC catalog: `fcnet_hiddens` are the encoder layers, `head_fcnet_hiddens` [] = linear heads.
        return super()._model_config_auto_includes | {
            "fcnet_hiddens": [self.hidden_dim, self.hidden_dim],
            "fcnet_activation": "relu",
            "head_fcnet_hiddens": [],
        }


class SACBaseline(OffPolicyLoop, SAC):
    """RLlib's SAC learner and module, trained by the same loop as SMAC."""

    @classmethod
    def get_default_config(cls) -> SACBaselineConfig:
        return SACBaselineConfig()
