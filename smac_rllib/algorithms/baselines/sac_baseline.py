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

import torch
from ray.rllib.algorithms.sac.sac import SAC, SACConfig
from ray.rllib.algorithms.sac.sac_catalog import SACCatalog
from ray.rllib.algorithms.sac.sac_learner import QF_LOSS_KEY, QF_PREDS, QF_TWIN_LOSS_KEY, QF_TWIN_PREDS
from ray.rllib.algorithms.sac.torch.sac_torch_learner import SACTorchLearner
from ray.rllib.algorithms.sac.torch.default_sac_torch_rl_module import DefaultSACTorchRLModule
from ray.rllib.core.columns import Columns
from ray.rllib.core.distribution.torch.torch_distribution import TorchDeterministic, TorchSquashedGaussian
from ray.rllib.core.models.base import ENCODER_OUT
from ray.rllib.core.models.configs import MLPEncoderConfig
from ray.rllib.core.models.torch.encoder import TorchMLPEncoder
from ray.rllib.core.rl_module.rl_module import RLModuleSpec

from smac_rllib.objectives import losses
from smac_rllib.training.off_policy import ASYNC_FIELDS, FieldTableConfig, OffPolicyLoop, async_field_errors, set_defaults
from smac_rllib.training.async_learner import AsyncLearnerMixin


_FIELDS = {  # name: (default, meaning) -- one home per field: default, doc and training() keyword
    "updates_per_env_step": (1.0, "gradient updates per sampled env step (as SMAC; pytorch_sac: 1)"),
    "hidden_dim": (400, "width of the actor and critic MLPs (paper: 400 for SAC vs 256 for SMAC, to match parameters)"),
    "critic_loss": ("mse", "'mse' (pytorch_sac) | 'huber' (RLlib SAC's)"),
    "random_actions_before_learning": (True, "uniform random actions for the first num_steps_sampled_before_learning_"
                                             "starts agent steps (pytorch_sac's seed steps), as SMAC"),
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
            raise ValueError(f"random_actions_before_learning={self.random_actions_before_learning!r} must be true or false")
        errors = async_field_errors(self)
        if errors:
            raise ValueError(errors[0])

    def get_default_rl_module_spec(self) -> RLModuleSpec:
        return RLModuleSpec(module_class=SACBaselineTorchRLModule, catalog_class=SACBaselineCatalog)

    def get_default_learner_class(self):
        return SACBaselineTorchLearner

    @property
    def _model_config_auto_includes(self):
        # RLlib's SAC catalog: `fcnet_hiddens` are the encoder layers, `head_fcnet_hiddens` [] = linear heads.
        return super()._model_config_auto_includes | {
            "fcnet_hiddens": [self.hidden_dim, self.hidden_dim],
            "fcnet_activation": "relu",
            "head_fcnet_hiddens": [],
        }


class ConcatObsActionMLPEncoder(TorchMLPEncoder):
    """Q's encoder as in pytorch_sac: one MLP on the concatenated [x, a] (B, |X| + |A|) -> (B, hidden)."""

    def _forward(self, inputs: dict, **kwargs) -> dict:
        return {ENCODER_OUT: self.net(torch.cat([inputs[Columns.OBS], inputs[Columns.ACTIONS]], dim=-1))}


class SACBaselineCatalog(SACCatalog):
    """SAC's catalog with a plain MLP(x || a) critic (fcnet_hiddens, ReLU) instead of RLlib's two-stream fusion net."""

    def _build_qf_encoder_continuous(self, framework: str):
        if len(self.observation_space.shape) != 1:
            raise ValueError(f"the SAC baseline needs flat state observations, got shape {self.observation_space.shape}")
        hiddens = self._model_config_dict["fcnet_hiddens"]
        self.qf_encoder_config = MLPEncoderConfig(
            input_dims=(self.observation_space.shape[0] + self.action_space.shape[0],),
            hidden_layer_dims=hiddens[:-1],
            hidden_layer_activation=self._model_config_dict["fcnet_activation"],
            output_layer_dim=hiddens[-1],
            output_layer_activation=self._model_config_dict["fcnet_activation"],
        )
        return ConcatObsActionMLPEncoder(self.qf_encoder_config)


class SquashedGaussianTanhMean(TorchSquashedGaussian):
    """RLlib's squashed Gaussian whose deterministic action is squash(mean), inside the action bounds."""

    def to_deterministic(self) -> TorchDeterministic:
        return TorchDeterministic(loc=self._squash(self.loc))


class SACBaselineTorchRLModule(DefaultSACTorchRLModule):
    """RLlib's SAC module with ``SquashedGaussianTanhMean`` as its action distribution (continuous actions)."""

    def setup(self):
        super().setup()
        if self.action_dist_cls is TorchSquashedGaussian:
            self.action_dist_cls = SquashedGaussianTanhMean


class SACBaselineTorchLearner(AsyncLearnerMixin, SACTorchLearner):
    """RLlib's SAC learner with the critic loss of ``smac_rllib.objectives.losses`` (MSE by default, as pytorch_sac).

    Speed layer (training/lean_update.py): not used. The lean update leaves the non-finite check to the learner, and
    RLlib's SAC learner has none of its own; this baseline keeps RLlib's update path as it is (docs/baselines.md)."""

    def _compute_loss_for_module_continuous(self, *, module_id, config, batch, fwd_out):
        total_loss = super()._compute_loss_for_module_continuous(module_id=module_id, config=config, batch=batch, fwd_out=fwd_out)
        if config.critic_loss == "huber":
            return total_loss
        alpha = torch.exp(self.curr_log_alpha[module_id]).detach()
        target_B = losses.td_target(
            batch[Columns.REWARDS],
            batch[Columns.TERMINATEDS],
            fwd_out["q_target_next"].unsqueeze(0),  # already min_i Qbar_i(x', a')
            -fwd_out["logp_next_resampled"],
            alpha=alpha,
            discount_B=config.gamma ** batch["n_step"],
        )  # the same soft target as RLlib's (and Eq. 10 with K = 0)
        for key, q_pred_B in ((QF_LOSS_KEY, fwd_out[QF_PREDS]), (QF_TWIN_LOSS_KEY, fwd_out.get(QF_TWIN_PREDS))):
            if q_pred_B is None:
                continue
            mse = losses.critic_loss(q_pred_B.unsqueeze(0), target_B, kind="mse")
            total_loss = total_loss - self._temp_losses[(module_id, key)].detach() + mse
            self._temp_losses[(module_id, key)] = mse  # SACTorchLearner backpropagates each optimizer's own loss
            self.device_metrics.log((module_id, key), mse, window=1)
        return total_loss


class SACBaseline(OffPolicyLoop, SAC):
    """RLlib's SAC learner and module, trained by the same loop as SMAC."""

    @classmethod
    def get_default_config(cls) -> SACBaselineConfig:
        return SACBaselineConfig()
