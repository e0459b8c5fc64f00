"""The paper's SAC baseline: RLlib's built-in SAC, configured like pytorch_sac, on our off-policy loop.

Same env wrapper, same replay (uniform, 1M), same update-to-data ratio and batch as SMAC, learning rates 3e-4,
initial alpha 0.1, and width 400 (so its parameter count matches SMAC's width-256 latent policy). So
``SMACConfig`` vs ``SACBaselineConfig`` is one switch. What stays RLlib's: the Huber critic loss, the actor
using Q_1 only, and the policy (not uniform random actions) acting before learning starts.
"""

from __future__ import annotations

from ray.rllib.algorithms.algorithm_config import NotProvided
from ray.rllib.algorithms.sac.sac import SAC, SACConfig

from smac_rllib.algorithms.off_policy import OffPolicyLoop


class SACBaselineConfig(SACConfig):
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
        self.updates_per_env_step = 1.0  # as SMAC (pytorch_sac: 1)
        self.hidden_dim = 400  # paper: 400 for SAC vs 256 for SMAC, to match parameter counts

    def training(self, *, updates_per_env_step=NotProvided, hidden_dim=NotProvided, **kwargs) -> "SACBaselineConfig":
        if updates_per_env_step is not NotProvided:
            self.updates_per_env_step = updates_per_env_step
        if hidden_dim is not NotProvided:
            self.hidden_dim = hidden_dim
        super().training(**kwargs)
        return self

    def validate(self) -> None:
        super().validate()
        if not (isinstance(self.updates_per_env_step, (int, float)) and self.updates_per_env_step > 0):
            raise ValueError(f"updates_per_env_step={self.updates_per_env_step!r} must be > 0 (pytorch_sac: 1)")
        if not (isinstance(self.hidden_dim, int) and self.hidden_dim >= 1):
            raise ValueError(f"hidden_dim={self.hidden_dim!r} must be an integer >= 1 (paper's SAC baseline: 400)")

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
