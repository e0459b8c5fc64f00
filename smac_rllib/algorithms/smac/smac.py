"""SMACConfig and SMAC: state-based Stochastic Marginal Actor-Critic (Alg. 1) on RLlib's new API stack.

Made like RLlib's TQC, by subclassing SAC's Config / Algorithm; the RLModule and Learner live next door.
``SMAC.training_step`` reads like Alg. 1: act, store, then ``updates_per_env_step`` gradient updates per new
env step from uniform replay, then sync the inference-only policy to the env runners.
"""

from __future__ import annotations

import math
from typing import Any

from ray.rllib.algorithms.algorithm_config import AlgorithmConfig, NotProvided
from ray.rllib.algorithms.sac.sac import SAC, SACConfig
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from ray.rllib.execution.rollout_ops import synchronous_parallel_sample
from ray.rllib.utils.metrics import (
    ENV_RUNNER_RESULTS,
    ENV_RUNNER_SAMPLING_TIMER,
    LEARNER_RESULTS,
    LEARNER_UPDATE_TIMER,
    NUM_AGENT_STEPS_SAMPLED_LIFETIME,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    REPLAY_BUFFER_ADD_DATA_TIMER,
    REPLAY_BUFFER_SAMPLE_TIMER,
    SYNCH_WORKER_WEIGHTS_TIMER,
    TIMERS,
)

from smac_rllib import estimators

_FIELDS = {  # name: (default, reference-code name / meaning) -- one home per hyperparameter
    "num_particles": (16, "K, fresh latent particles per entropy estimate (reference code: num_p); K+1 with s0"),
    "latent_dim": (16, "dimension of s in q(s|x) (reference code: latent_dim)"),
    "estimator": ("mlmc", "'mlmc' (Eq. 7) | 'nested' (Eq. 6) | 'naive' | 'iwae' (upper bounds, ablation only)"),
    "beta": (0.0, "weight of the conditional-entropy regularizer, App. B.3 (0 = off)"),
    "hidden_dim": (256, "width of the q(s|x) and pi(a|s) MLPs (SMAC 256; the SAC baseline uses 400)"),
    "critic_hidden_dim": (256, "width of the twin Q MLPs"),
    "num_hidden_layers": (2, "hidden layers of every MLP (paper: 2)"),
    "critic_loss": ("mse", "'mse' (paper, pytorch_sac) | 'huber' (RLlib SAC's default)"),
    "updates_per_env_step": (1.0, "gradient updates per sampled env step (pytorch_sac: 1)"),
    "random_actions_before_learning": (True, "uniform random actions until learning starts (pytorch_sac seed steps)"),
    "max_consecutive_nonfinite_updates": (100, "stop the run after this many skipped non-finite updates in a row"),
    "torch_num_threads": (1, "torch threads per CPU learner / env runner process (DESIGN §3); 0 = torch default"),
}


class SMACConfig(SACConfig):
    """Configuration of SMAC. Example::

        config = (SMACConfig().environment("dmc/cartpole-swingup")
                  .training(num_particles=32, latent_dim=16, estimator="mlmc"))
        algo = config.build_algo()

    Fields beyond SAC (paper name -> ours): K -> ``num_particles``; latent size -> ``latent_dim``;
    estimator -> ``estimator``; beta (App. B.3) -> ``beta``; see ``_FIELDS`` for each one's meaning.
    SAC defaults changed to the paper's (pytorch_sac): all learning rates 3e-4, uniform replay of 1M,
    MSE critic loss, initial alpha 0.1, 5000 random steps before learning, 1 update per env step.
    Batch 256 (not pytorch_sac's 1024): 4x cheaper per update on CPU learners and SAC's original setting.
    """

    def __init__(self, algo_class=None):
        super().__init__(algo_class=algo_class or SMAC)
        for name, (default, _) in _FIELDS.items():
            setattr(self, name, default)
        self.actor_lr = 3e-4  # RLlib SAC default is 3e-5
        self.critic_lr = 3e-4
        self.alpha_lr = 3e-4
        self.initial_alpha = 0.1  # pytorch_sac init_temperature
        self.tau = 0.005
        self.gamma = 0.99
        self.train_batch_size_per_learner = 256
        self.num_steps_sampled_before_learning_starts = 5000
        self.replay_buffer_config = {"type": "EpisodeReplayBuffer", "capacity": 1_000_000}
        self.store_buffer_in_checkpoints = True  # RLlib 2.60 would drop the buffer on restore (DESIGN §3)
        self.rollout_fragment_length = 10
        self.min_sample_timesteps_per_iteration = 1000  # >= one DMC episode per iteration
        self.min_time_s_per_iteration = 0

    def training(self, **kwargs) -> "SMACConfig":
        """SAC's ``training()`` plus the SMAC fields (see ``_FIELDS``), e.g. ``training(num_particles=32)``."""
        for name in _FIELDS:
            value = kwargs.pop(name, NotProvided)
            if value is not NotProvided:
                setattr(self, name, value)
        super().training(**kwargs)
        return self

    def validate(self) -> None:
        super().validate()
        errors = self.smac_errors()
        if errors:
            raise ValueError(errors[0])

    def smac_errors(self) -> list[str]:
        """Every invalid SMAC setting, each as a message that names the fix."""
        errors = []
        if self.estimator not in estimators.ESTIMATORS:
            errors.append(f"estimator={self.estimator!r} is unknown; use one of {sorted(estimators.ESTIMATORS)}")
        if not isinstance(self.num_particles, int) or self.num_particles < 0:
            errors.append(f"num_particles={self.num_particles!r} must be an integer >= 0 (try 16)")
        elif self.estimator == "mlmc":
            try:
                estimators.mlmc_levels(self.num_particles)
            except ValueError as e:
                errors.append(str(e))
        elif self.estimator in ("naive", "iwae") and self.num_particles < 1:
            errors.append(f"estimator={self.estimator!r} needs num_particles >= 1 (try 16)")
        for name in ("latent_dim", "hidden_dim", "critic_hidden_dim"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                errors.append(f"{name}={value!r} must be an integer >= 1 (paper: latent_dim in 8/16/32, width 256)")
        for name in ("actor_lr", "critic_lr", "alpha_lr"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not value > 0 or not math.isfinite(value):
                errors.append(f"{name}={value!r} must be a positive number (paper: 3e-4)")
        if not (isinstance(self.beta, (int, float)) and self.beta >= 0):
            errors.append(f"beta={self.beta!r} must be >= 0 (App. B.3; 0 turns the regularizer off)")
        if self.critic_loss not in ("mse", "huber"):
            errors.append(f"critic_loss={self.critic_loss!r} is unknown; use 'mse' (paper) or 'huber'")
        if not (isinstance(self.updates_per_env_step, (int, float)) and self.updates_per_env_step > 0):
            errors.append(f"updates_per_env_step={self.updates_per_env_step!r} must be > 0 (pytorch_sac: 1)")
        if not (isinstance(self.initial_alpha, (int, float)) and self.initial_alpha > 0):
            errors.append(f"initial_alpha={self.initial_alpha!r} must be > 0 (pytorch_sac: 0.1)")
        if isinstance(self.env_config, dict) and self.env_config.get("from_pixels"):
            errors.append("state-based SMAC got env_config from_pixels=True; pixel SMAC (RSSM) is not available yet, set from_pixels=False")
        return errors

    def get_default_rl_module_spec(self) -> RLModuleSpec:
        from smac_rllib.algorithms.smac.smac_rl_module import SMACTorchRLModule

        return RLModuleSpec(module_class=SMACTorchRLModule)

    def get_default_learner_class(self):
        from smac_rllib.algorithms.smac.smac_learner import SMACTorchLearner

        return SMACTorchLearner

    @property
    def _model_config_auto_includes(self) -> dict[str, Any]:
        module_fields = ("num_particles", "latent_dim", "hidden_dim", "critic_hidden_dim", "num_hidden_layers")
        return super()._model_config_auto_includes | {name: getattr(self, name) for name in module_fields} | {
            "random_actions_before_learning": self.random_actions_before_learning and self.num_steps_sampled_before_learning_starts > 0,
            "initial_log_alpha": math.log(self.initial_alpha),
            "torch_num_threads": self.torch_num_threads,
        }


class SMAC(SAC):
    """Stochastic Marginal Actor-Critic (Zhang et al., ICLR 2023), state-based variant (Alg. 1)."""

    @classmethod
    def get_default_config(cls) -> SMACConfig:
        return SMACConfig()

    def setup(self, config: AlgorithmConfig) -> None:
        super().setup(config)
        self._update_credit = 0.0  # fractional updates owed (updates_per_env_step may be < 1)

    def training_step(self) -> None:
        # 1. Act: every env runner collects a fragment with the current (inference-only) policy.
        with self.metrics.log_time((TIMERS, ENV_RUNNER_SAMPLING_TIMER)):
            episodes, env_runner_results = synchronous_parallel_sample(
                worker_set=self.env_runner_group,
                concat=True,
                sample_timeout_s=self.config.sample_timeout_s,
                _uses_new_env_runners=True,
                _return_metrics=True,
            )
        self.metrics.aggregate(env_runner_results, key=ENV_RUNNER_RESULTS)
        new_env_steps = sum(e.env_steps() for e in episodes)
        # 2. Store.
        with self.metrics.log_time((TIMERS, REPLAY_BUFFER_ADD_DATA_TIMER)):
            self.local_replay_buffer.add(episodes)
        lifetime_steps = self.metrics.peek((ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME), default=0)
        if lifetime_steps < self.config.num_steps_sampled_before_learning_starts:
            return
        # 3. Learn: critic, actor, alpha (Alg. 1), `updates_per_env_step` per new env step.
        self._update_credit += new_env_steps * self.config.updates_per_env_step
        num_updates, self._update_credit = int(self._update_credit), self._update_credit % 1.0
        for _ in range(num_updates):
            with self.metrics.log_time((TIMERS, REPLAY_BUFFER_SAMPLE_TIMER)):
                batch_episodes = self.local_replay_buffer.sample(
                    num_items=self.config.total_train_batch_size,
                    n_step=self.config.n_step,
                    gamma=self.config.gamma,
                    sample_episodes=True,
                )
            with self.metrics.log_time((TIMERS, LEARNER_UPDATE_TIMER)):
                learner_results = self.learner_group.update(
                    episodes=batch_episodes,
                    timesteps={
                        NUM_ENV_STEPS_SAMPLED_LIFETIME: lifetime_steps,
                        NUM_AGENT_STEPS_SAMPLED_LIFETIME: lifetime_steps,
                    },
                )
            self.metrics.aggregate(learner_results, key=LEARNER_RESULTS)
        self.metrics.log_value("num_updates_lifetime", num_updates, reduce="lifetime_sum")
        # 4. Sync the inference-only policy (encoder q + pi) to the env runners.
        if num_updates:
            with self.metrics.log_time((TIMERS, SYNCH_WORKER_WEIGHTS_TIMER)):
                self.env_runner_group.sync_weights(from_worker_or_learner_group=self.learner_group, inference_only=True)

    # --- checkpoints include the replay buffer (RLlib 2.60's new stack leaves it out) -------------------
    def get_state(self, components=None, *, not_components=None, **kwargs) -> dict[str, Any]:
        state = super().get_state(components, not_components=not_components, **kwargs)
        if self.config.store_buffer_in_checkpoints and self._check_component("replay_buffer", components, not_components):
            state["replay_buffer"] = self.local_replay_buffer.get_state()
            state["update_credit"] = self._update_credit
        return state

    def set_state(self, state: dict[str, Any]) -> None:
        super().set_state(state)
        if "replay_buffer" in state:
            self.local_replay_buffer.set_state(state["replay_buffer"])
            self._update_credit = state.get("update_credit", 0.0)
