"""SMACConfig and SMAC: Stochastic Marginal Actor-Critic from states (Alg. 1) and pixels (Alg. 2, ``env_config:
{from_pixels: true}``) on RLlib's new API stack.

Made like RLlib's TQC, by subclassing SAC's Config / Algorithm; the RLModule and Learner live next door.
The outer loop (act, store, ``updates_per_env_step`` updates per new env step, sync) is ``OffPolicyLoop``
in ``smac_rllib/training/off_policy.py``; the field table in ``smac_fields.py``; the update each learner runs in
``objectives/state_update.py`` / ``objectives/pixel_update.py`` (run by ``smac_learner.py``).
"""

from __future__ import annotations

import math
import typing
from typing import Any

from ray.rllib.algorithms.sac.sac import SAC, SACConfig
from ray.rllib.core.rl_module.rl_module import RLModuleSpec

from smac_rllib.algorithms.smac.smac_fields import (
    _FIELDS,
    _PIXEL_MODULE_FIELDS,
    PIXEL_ONLY_FIELDS,
    STATE_ONLY_FIELDS,
    _AUTOCAST,
)
from smac_rllib.core import estimators
from smac_rllib.training.off_policy import (
    FieldTableConfig,
    OffPolicyLoop,
    async_field_errors,
    set_defaults,
)


class SMACConfig(FieldTableConfig, SACConfig):
    """Configuration of SMAC. Example::

        config = (SMACConfig().environment("dmc/cartpole-swingup")
                  .training(num_particles=32, latent_dim=16, estimator="mlmc"))
        algo = config.build_algo()

    Fields beyond SAC (paper name -> ours): K -> ``num_particles``; latent size -> ``latent_dim``;
    estimator -> ``estimator``; beta (App. B.3) -> ``beta``; see ``_FIELDS`` for each one's meaning.
    SAC defaults changed: all learning rates 3e-4 (SAC's original setting; pytorch_sac uses 1e-4), uniform
    replay of 1M, MSE critic loss, initial alpha 0.1, 5000 uniform random steps before learning, 1 update per
    env step (pytorch_sac). Batch 256 (SAC's original setting, not pytorch_sac's 1024): 4x cheaper per update
    on CPU learners. The state path has no public reference code: docs/fidelity.md lists what we chose.
    Pixel defaults are the reference code's (``visual_control/configs/default/default.yaml``): initial alpha
    1.0, 5000 random agent steps (= start_steps 10000 frames at action repeat 2), 0.2 updates per agent step,
    conditional TD-target entropy, critic on all particles. Every difference left: docs/fidelity.md.
    """

    FIELDS = _FIELDS  # the fields training() takes (training/off_policy.py: FieldTableConfig)

    # field types the defaults do not show, for the CLI's type check: autocast also takes null (fp32), num_particles
    # defaults to None (per modality) but is an integer
    FIELD_TYPES = {"autocast": typing.Optional[str], "num_particles": typing.Optional[int]}

    def __init__(self, algo_class=None):
        super().__init__(algo_class=algo_class or SMAC)
        set_defaults(self, _FIELDS)
        self.actor_lr = 3e-4  # RLlib SAC default is 3e-5
        self.critic_lr = 3e-4
        self.alpha_lr = 3e-4
        self.initial_alpha = None  # None = 0.1 for states (pytorch_sac init_temperature) | 1.0 for pixels (init_alpha)
        self.tau = 0.005
        self.gamma = 0.99
        self.train_batch_size_per_learner = 256
        self.num_steps_sampled_before_learning_starts = (
            5000  # agent steps: pytorch_sac's 5000 | reference's 10000 frames
        )
        self.replay_buffer_config = {"type": "EpisodeReplayBuffer", "capacity": 1_000_000}
        self.store_buffer_in_checkpoints = True  # RLlib 2.60 would drop the buffer on restore (docs/design.md §3)
        self.rollout_fragment_length = 10
        self.min_sample_timesteps_per_iteration = 1000  # >= one DMC episode per iteration
        self.min_time_s_per_iteration = 0

    @property
    def is_pixels(self) -> bool:
        return isinstance(self.env_config, dict) and bool(self.env_config.get("from_pixels"))

    @property
    def resolved_updates_per_env_step(self) -> float:
        if self.updates_per_env_step is not None:
            return self.updates_per_env_step
        return 0.2 if self.is_pixels else 1.0

    @property
    def resolved_num_particles(self) -> int:
        if self.num_particles is not None:
            return self.num_particles
        return 32 if self.is_pixels else 16

    def unused_keys(self, written) -> list[str]:
        """One message per written key this run ignores: pixel settings in a state run, state settings in a pixel
        run."""
        if self.is_pixels:
            return [
                f"{key}={written[key]!r} does nothing in a pixel run (env_config from_pixels: true); use {use} "
                "instead, or remove it"
                for key, use in STATE_ONLY_FIELDS.items()
                if key in written
            ]
        return [
            f"{key}={written[key]!r} is a pixel setting (Alg. 2) and this run learns from states; set env_config "
            "from_pixels: true or remove it"
            for key in PIXEL_ONLY_FIELDS
            if key in written
        ]

    # what the command line asks of a config (algorithms/config_questions.py)
    COST_HINT = ("benchmarks/results/pixel_learner_cost_cpu/", "tuned_examples/smac_pixels_quick.yaml")

    def replay_batch(self) -> tuple[int | None, str]:
        """(env steps one update replays, their name): B x T sequences for pixels, transitions for states."""
        if not self.is_pixels:
            batch = self.train_batch_size_per_learner
            return (batch if isinstance(batch, int) else None), "train_batch_size_per_learner"
        from smac_rllib.algorithms.config_questions import sequence_batch

        return sequence_batch(self.batch_size_B, self.batch_length_T)

    def update_memory_terms(self) -> dict[str, tuple[float, str]]:
        """One pixel update's activations on a CPU learner (cli/memory.py): the actor and critics over (K+1) x B x T
        latent rows (actor + twin critics for Q_pi, Q_pred and the targets), forward and backward, and the world
        model over B x T uint8 64x64x3 frames."""
        if not self.is_pixels:
            return {}
        B, T, K = self.batch_size_B, self.batch_length_T, self.resolved_num_particles
        rows = (K + 1) * B * T
        layers = self.actor_layers + 2 * 3 * self.critic_layers
        activations = rows * self.pixel_hidden_dim * layers * 4 * 2 + B * T * 64 * 64 * 3 * 4 * 8
        return {
            f"one update's activations ({rows:,} latent rows of width {self.pixel_hidden_dim})": (
                activations,
                "batch_size_B / batch_length_T / num_particles",
            )
        }

    def cpu_hours_per_10k_frames(self) -> float | None:
        """Learner hours per 10k frames of a paper-preset pixel run on a CPU learner; None for other cases.

        Seconds per update at B x T = 16 x 32, critic on all particles, measured on this project's 2-core CPU with
        1 torch thread (benchmarks/results/pixel_learner_cost_cpu/gpu_learner.md): K=0 3.02 s, K=32 (history)
        5.70 s; scaled linearly in K and in B x T (the 50 x 50 row of benchmarks/results/pixel_learner_cost.md is
        ~5-7x the 16 x 32 one for 4.9x the rows)."""
        if not self.is_pixels or self.world_model_preset != "paper" or (self.num_gpus_per_learner or 0) > 0:
            return None
        k0, k32 = 3.02, 5.70
        s_per_update = (
            (k0 + (k32 - k0) * min(self.resolved_num_particles, 32) / 32)
            * self.batch_size_B
            * self.batch_length_T
            / (16 * 32)
        )
        action_repeat = (self.env_config or {}).get("action_repeat") or 2
        updates = 10_000 / action_repeat * self.resolved_updates_per_env_step
        return s_per_update * updates / 3600 / max(1, self.num_learners)

    @property
    def resolved_learning_starts(self) -> int:
        if self.num_steps_sampled_before_learning_starts is not None:
            return self.num_steps_sampled_before_learning_starts
        return 5000  # states: pytorch_sac num_seed_steps; pixels: reference start_steps 10000 frames / action repeat 2

    @property
    def resolved_initial_alpha(self) -> float:
        if self.initial_alpha is not None:
            return self.initial_alpha
        return 1.0 if self.is_pixels else 0.1  # reference init_alpha (default.yaml:31) | pytorch_sac init_temperature

    @property
    def resolved_td_entropy(self) -> str:
        if self.td_entropy is not None:
            return self.td_entropy
        return "conditional" if self.is_pixels else "marginal"  # Eq. (12) / reference smac.py:153 | Eq. (10)

    def validate(self) -> None:
        super().validate()
        errors = self.smac_errors()
        if errors:
            raise ValueError(errors[0])

    def smac_errors(self) -> list[str]:
        """Every invalid SMAC setting, each as a message that names the fix."""
        errors = []
        if self.fast_update is not True:
            errors.append(
                f"fast_update={self.fast_update!r}: the switch was retired, every run takes the one update "
                "(docs/design.md §9); remove fast_update"
            )
        if self.estimator not in estimators.ESTIMATORS:
            errors.append(f"estimator={self.estimator!r} is unknown; use one of {sorted(estimators.ESTIMATORS)}")
        K = self.resolved_num_particles
        if not isinstance(K, int) or isinstance(K, bool) or K < 0:
            errors.append(f"num_particles={K!r} must be an integer >= 0 (try 16)")
        elif self.estimator == "mlmc":
            try:
                estimators.mlmc_levels(K)
            except ValueError as e:
                errors.append(str(e))
        elif self.estimator in ("naive", "iwae") and K < 1:
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
        if self.beta_scale not in ("alpha", "none"):
            errors.append(f"beta_scale={self.beta_scale!r} is unknown; use 'alpha' (reference code) or 'none' (paper)")
        if self.td_entropy not in (None, "marginal", "conditional"):
            errors.append(
                f"td_entropy={self.td_entropy!r} is unknown; use 'marginal' (Eq. 10), 'conditional' (Eq. 12) or None"
            )
        if not isinstance(self.mlmc_average_level0, bool):
            errors.append(
                f"mlmc_average_level0={self.mlmc_average_level0!r} must be true (reference) or false (Eq. 7 literally)"
            )
        if self.critic_particles not in ("all", "s0"):
            errors.append(f"critic_particles={self.critic_particles!r} is unknown; use 'all' (reference) or 's0'")
        if self.pixel_actor_head not in ("dreamer", "sac"):
            errors.append(f"pixel_actor_head={self.pixel_actor_head!r} is unknown; use 'dreamer' (reference) or 'sac'")
        starts = self.num_steps_sampled_before_learning_starts
        if starts is not None and not (isinstance(starts, int) and not isinstance(starts, bool) and starts >= 0):
            errors.append(f"num_steps_sampled_before_learning_starts={starts!r} must be an integer >= 0 (paper: 5000)")
        if self.critic_loss not in ("mse", "huber"):
            errors.append(f"critic_loss={self.critic_loss!r} is unknown; use 'mse' (paper) or 'huber'")
        upe = self.updates_per_env_step
        if upe is not None and not (isinstance(upe, (int, float)) and upe > 0):
            errors.append(f"updates_per_env_step={upe!r} must be > 0 (pytorch_sac: 1; pixels: 0.2)")
        alpha0 = self.initial_alpha
        if alpha0 is not None and not (isinstance(alpha0, (int, float)) and alpha0 > 0 and math.isfinite(alpha0)):
            errors.append(
                f"initial_alpha={alpha0!r} must be > 0 (pytorch_sac: 0.1; pixel reference: 1.0; None = per modality)"
            )
        limit = self.max_consecutive_nonfinite_updates
        if not (isinstance(limit, int) and not isinstance(limit, bool) and limit >= 1):
            errors.append(f"max_consecutive_nonfinite_updates={limit!r} must be an integer >= 1 (default 100)")
        errors += async_field_errors(self)
        if self.is_pixels:
            errors += self._pixel_errors()
        elif self.learner_capture not in ("auto", "off"):
            errors.append(
                f"learner_capture={self.learner_capture!r} applies to pixel runs (env_config from_pixels: true); "
                "remove it for a state run"
            )
        return errors

    def _pixel_errors(self) -> list[str]:
        from smac_rllib.models.world_model import WorldModelConfig

        errors = []
        try:
            WorldModelConfig.preset(self.world_model_preset)
        except (ValueError, TypeError):
            errors.append(f"world_model_preset={self.world_model_preset!r} is unknown; use 'paper', 'small' or 'tiny'")
        if self.particle_mode not in ("history", "step"):
            errors.append(f"particle_mode={self.particle_mode!r} is unknown; use 'history' (reference) or 'step'")
        for name in ("batch_size_B", "pixel_hidden_dim", "actor_layers", "critic_layers"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                errors.append(f"{name}={value!r} must be an integer >= 1")
        if not isinstance(self.batch_length_T, int) or self.batch_length_T < 2:
            errors.append(
                f"batch_length_T={self.batch_length_T!r} must be an integer >= 2 (TD targets need t+1; reference 50)"
            )
        if not (isinstance(self.world_model_lr, (int, float)) and self.world_model_lr > 0):
            errors.append(f"world_model_lr={self.world_model_lr!r} must be a positive number (reference: 6e-4)")
        if not (isinstance(self.action_noise, (int, float)) and self.action_noise >= 0):
            errors.append(f"action_noise={self.action_noise!r} must be >= 0 (reference: 0.3)")
        if self.autocast not in _AUTOCAST:
            errors.append(f"autocast={self.autocast!r} is unknown; use 'auto', 'bf16', 'fp16' or None")
        errors += self._capture_errors()
        if self.env_config.get("image_size", 64) != 64:
            errors.append(
                f"image_size={self.env_config.get('image_size')!r}: the RSSM's conv stack needs 64x64 frames; set "
                "image_size: 64"
            )
        return errors

    def _capture_errors(self) -> list[str]:
        from smac_rllib.training.fast_update.captured_update import CAPTURE_MODES, CaptureUnavailable, resolve_capture

        mode = self.learner_capture
        if mode not in CAPTURE_MODES:
            return [f"learner_capture={mode!r} is unknown; use one of {list(CAPTURE_MODES)}"]
        if mode in ("auto", "off"):
            return []
        gpu = (
            self.num_gpus_per_learner
            if self.num_learners
            else (self.num_gpus_per_learner or getattr(self, "num_gpus", 0))
        )
        device = "cuda" if gpu else "cpu"
        import torch

        try:
            resolve_capture(mode, torch.device(device), autocast=self.autocast, num_learners=self.num_learners)
        except CaptureUnavailable as e:
            return [str(e) + (" (set num_gpus_per_learner: 1)" if device == "cpu" else "")]
        if self.target_network_update_freq:
            return [
                f"learner_capture={mode!r} averages the target critics in every update; set "
                "target_network_update_freq: 0"
            ]
        return []

    def get_default_rl_module_spec(self) -> RLModuleSpec:
        if self.is_pixels:
            from smac_rllib.algorithms.smac import pixel_rl_module as home

            name = "SMACPixelTorchRLModule"
        else:
            from smac_rllib.algorithms.smac import smac_rl_module as home

            name = "SMACTorchRLModule"
        return RLModuleSpec(module_class=getattr(home, name))

    def get_default_learner_class(self):
        from smac_rllib.algorithms.smac import smac_learner

        name = "SMACPixelTorchLearner" if self.is_pixels else "SMACTorchLearner"
        return getattr(smac_learner, name)

    def build_env_to_module_connector(self, env=None, spaces=None, device=None):
        connector = super().build_env_to_module_connector(env=env, spaces=spaces, device=device)
        if self.is_pixels:  # the RSSM resets its belief where is_first (as RLlib's DreamerV3 does)
            from ray.rllib.connectors.common import AddStatesFromEpisodesToBatch
            from smac_rllib.algorithms.smac.connectors import AddIsFirstsToBatch

            connector.insert_before(AddStatesFromEpisodesToBatch, AddIsFirstsToBatch())
        return connector

    @property
    def _model_config_auto_includes(self) -> dict[str, Any]:
        module_fields = ("latent_dim", "hidden_dim", "critic_hidden_dim", "num_hidden_layers")
        return (
            super()._model_config_auto_includes
            | {name: getattr(self, name) for name in module_fields}
            | {
                "num_particles": self.resolved_num_particles,
                "initial_log_alpha": math.log(self.resolved_initial_alpha),
                "td_entropy": self.resolved_td_entropy,
                "torch_num_threads": self.torch_num_threads,
            }
            | ({name: getattr(self, name) for name in _PIXEL_MODULE_FIELDS} if self.is_pixels else {})
        )


class SMAC(OffPolicyLoop, SAC):
    """Stochastic Marginal Actor-Critic (Zhang et al., ICLR 2023): states (Alg. 1) or pixels (Alg. 2), by the config."""

    @classmethod
    def get_default_config(cls) -> SMACConfig:
        return SMACConfig()
