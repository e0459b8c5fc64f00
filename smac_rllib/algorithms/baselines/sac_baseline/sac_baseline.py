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

from smac_rllib.training.off_policy import (
    ASYNC_FIELDS,
    FieldTableConfig,
    OffPolicyLoop,
    async_field_errors,
    set_defaults,
)


_FIELDS = {  # name: (default, meaning) -- one home per field: default, doc and training() keyword
    "updates_per_env_step": (1.0, "gradient updates per sampled env step (as SMAC; pytorch_sac: 1)"),
    "hidden_dim": (400, "width of the actor and critic MLPs (paper: 400 for SAC vs 256 for SMAC, to match parameters)"),
    "critic_loss": ("mse", "'mse' (pytorch_sac) | 'huber' (RLlib SAC's)"),
    "random_actions_before_learning": (
        True,
        "uniform random actions for the first num_steps_sampled_before_learning_"
        "starts agent steps (pytorch_sac's seed steps), as SMAC",
    ),
} | ASYNC_FIELDS  # the asynchronous actor-learner, as SMAC (docs/design.md §8)


class SACBaselineConfig(FieldTableConfig, SACConfig):
    FIELDS = _FIELDS  # the fields training() takes (training/off_policy.py: FieldTableConfig)

    def __init__(self, algo_class=None):
        super().__init__(algo_class=algo_class or SACBaseline)
        self.actor_lr = 3e-4
        self.critic_lr = 3e-4
        self.alpha_lr = 3e-4
        self.initial_alpha = 0.1
        self.tau = 0.005
        self.gamma = 0.99
        self.train_batch_size_per_learner = 256
        self.num_steps_sampled_before_learning_starts = 5000
        self.replay_buffer_config = {"type": "EpisodeReplayBuffer", "capacity": 1_000_000}
        self.store_buffer_in_checkpoints = True
        self.rollout_fragment_length = 10
        self.min_sample_timesteps_per_iteration = 1000
        self.min_time_s_per_iteration = 0
        set_defaults(self, _FIELDS)

    def validate(self) -> None:
        super().validate()
        if not (isinstance(self.updates_per_env_step, (int, float)) and self.updates_per_env_step > 0):
            raise ValueError(f"updates_per_env_step={self.updates_per_env_step!r} must be > 0 (pytorch_sac: 1)")
        if not (isinstance(self.hidden_dim, int) and self.hidden_dim >= 1):
            raise ValueError(f"hidden_dim={self.hidden_dim!r} must be an integer >= 1 (paper's SAC baseline: 400)")
        if self.critic_loss not in ("mse", "huber"):
            raise ValueError(f"critic_loss={self.critic_loss!r} is unknown; use 'mse' (paper) or 'huber' (RLlib)")
        if not isinstance(self.random_actions_before_learning, bool):
            raise ValueError(
                f"random_actions_before_learning={self.random_actions_before_learning!r} must be true or false"
            )
        errors = async_field_errors(self)
        if errors:
            raise ValueError(errors[0])

    def get_default_rl_module_spec(self) -> RLModuleSpec:
        from smac_rllib.algorithms.baselines.sac_baseline.sac_baseline_rl_module import (
            SACBaselineCatalog,
            SACBaselineTorchRLModule,
        )

        return RLModuleSpec(module_class=SACBaselineTorchRLModule, catalog_class=SACBaselineCatalog)

    def get_default_learner_class(self):
        from smac_rllib.algorithms.baselines.sac_baseline.sac_baseline_learner import SACBaselineTorchLearner

        return SACBaselineTorchLearner

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
