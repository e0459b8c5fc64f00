"""SLACConfig and SLAC: Stochastic Latent Actor-Critic (Lee et al., NeurIPS 2020) on our pixel plumbing, ``run: SLAC``.

Made like the SMAC pixel path: a SAC subclass on ``OffPolicyLoop`` (act, store, ``updates_per_env_step`` updates per
new env step, sync; async by default), RLlib's ``EpisodeReplayBuffer`` of uint8 frames sampled as rows of
``sequence_length + 1`` steps (``smac_rllib/training/replay.py``), the ``is_first`` connector of pixel SMAC. The
networks are in ``models/slac_model.py``, the module in ``slac_rl_module.py``, the losses in ``slac_learner.py``.

Model pretraining: once the ``num_steps_sampled_before_learning_starts`` uniform random steps are stored, the first
``initial_model_train_steps`` updates are owed at once and train the model only; the env runners wait for them (the
the loop's update rule, ``SLAC.make_update_rule``, in both loops), as ``train_eval`` runs them before it
collects again. Every difference from the original code: docs/slac.md.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from ray.rllib.algorithms.sac.sac import SAC, SACConfig
from ray.rllib.connectors.common import AddStatesFromEpisodesToBatch
from ray.rllib.core.rl_module.rl_module import RLModuleSpec

from smac_rllib.algorithms.baselines.slac import slac_learner, slac_rl_module
from smac_rllib.algorithms.pixel_run import sequence_batch
from smac_rllib.algorithms.connectors import AddIsFirstsToBatch
from smac_rllib.training.fields import (
    MAX_UPDATES_PER_ENV_STEP,
    MIN_UPDATES_PER_ENV_STEP,
    ASYNC_FIELDS,
    LEARNER_FIELDS,
    OFF_POLICY_RLLIB_FIELDS,
    Field,
    FieldTableConfig,
    count,
    positive,
    seed_actions,
)
from smac_rllib.training.off_policy import OffPolicyLoop
from smac_rllib.training.rate_limiter import SampleToInsertRatio

# name: Field(default, meaning; the original's name and file; checks) -- one home per hyperparameter.
# Original: alexlee-gk/slac, slac/agents/slac/configs/slac.gin (gin)
# and examples/v1/train_eval.py (train_eval defaults).
_FIELDS = (
    {
        "sequence_length": count(
            8,
            "L: the actor sees the last L frames and L-1 actions; rows of L+1 steps train model and "
            "critic (slac.gin: train_eval.sequence_length = 8)",
            low=2,
            hint="(the actor's history of L frames and L-1 actions, and a transition for the critic; original: 8)",
        ),
        "latent1_size": count(32, "z1 size (slac.gin: ModelDistributionNetwork.latent1_size)", hint="(original: 32)"),
        "latent2_size": count(256, "z2 size (slac.gin: latent2_size)", hint="(original: 256)"),
        "base_depth": count(
            32,
            "conv depth; conv features and latent-model MLPs are 8 x base_depth = 256 (slac.gin: base_depth)",
            hint="(original: 32)",
        ),
        "decoder_std": positive(
            math.sqrt(0.1),
            "std of the Gaussian image likelihood on [0, 1] pixels (ModelDistributionNetwork decoder_stddev)",
            hint="(original: sqrt(0.1))",
        ),
        "batch_size_B": count(
            256, "sequences per update for the critic and actor (train_eval.batch_size)", hint="(original: 256)"
        ),
        "model_batch_size": count(
            32,
            "the first sequences of each batch that train the model (train_eval.model_batch_size)",
            hint="(original: 32)",
        ),
        "model_lr": positive(
            1e-4, "latent-model Adam learning rate (train_eval.model_learning_rate)", hint="(original: 1e-4)"
        ),
        "initial_model_train_steps": count(
            100_000,
            "model-only updates after the random warm-up, before any RL update "
            "(slac.gin: train_eval.initial_model_train_steps)",
            low=0,
            hint="(original: 100000; 0 = no pretraining)",
        ),
        "hidden_dim": count(
            256,
            "width of the actor and critic MLPs (train_eval.actor_fc_layers / critic_joint_fc_layers)",
            hint="(original: 256)",
        ),
        "num_hidden_layers": count(
            2, "hidden layers of the actor and critic MLPs (train_eval: 2)", hint="(original: 2)"
        ),
        "updates_per_env_step": positive(
            1.0,
            "updates per agent step after the pretraining "
            "(train_steps_per_iteration / collect_steps_per_iteration = 1)",
            hint="(per env step, not per iteration; original: 1)",
            high=MAX_UPDATES_PER_ENV_STEP,
            low=MIN_UPDATES_PER_ENV_STEP,
            low_open=False,
        ),
        "random_actions_before_learning": seed_actions("train_eval: RandomTFPolicy, initial_collect_steps"),
        # --- RLlib's own fields: RLlib's training() takes them; these rows set SLAC's defaults and add the checks ---
        "actor_lr": positive(
            3e-4, "train_eval.actor_learning_rate (RLlib SAC: 3e-5)", hint="(original: 3e-4)", rllib=True
        ),
        "critic_lr": positive(3e-4, "train_eval.critic_learning_rate", hint="(original: 3e-4)", rllib=True),
        "alpha_lr": positive(3e-4, "train_eval.alpha_learning_rate", hint="(original: 3e-4)", rllib=True),
        "initial_alpha": positive(1.0, "SlacAgent initial_log_alpha = 0.0", hint="(original: 1)", rllib=True),
        "tau": Field(
            0.005, "target_update_tau, every update (target_update_period = 1)", kind=float, low=0, high=1, rllib=True
        ),
        "gamma": Field(0.99, "discount", kind=float, low=0, high=1, low_open=True, rllib=True),
        "num_steps_sampled_before_learning_starts": count(
            10_000, "train_eval.initial_collect_steps (agent steps)", low=0, hint="(original: 10000)", rllib=True
        ),
    }
    | LEARNER_FIELDS
    | ASYNC_FIELDS
    | OFF_POLICY_RLLIB_FIELDS
    | {
        "replay_buffer_config": dataclasses.replace(
            OFF_POLICY_RLLIB_FIELDS["replay_buffer_config"],
            default={"type": "EpisodeReplayBuffer", "capacity": 100_000},
            doc="replay of 100k agent steps (train_eval.replay_buffer_capacity)",
        )
    }
)
_MODULE_FIELDS = (
    "sequence_length",
    "latent1_size",
    "latent2_size",
    "base_depth",
    "decoder_std",
    "model_batch_size",
    "hidden_dim",
    "num_hidden_layers",
    "torch_num_threads",
)


class SLACConfig(FieldTableConfig, SACConfig):
    """Configuration of SLAC. Example::

        config = SLACConfig().environment("dmc/cheetah-run", env_config={"from_pixels": True, "action_repeat": 4})
        algo = config.build_algo()

    Defaults are the original's for DeepMind Control (slac.gin + train_eval.py): 64x64 frames, L = 8, z1 32, z2 256,
    batch 256 sequences for actor and critic and its first 32 for the model, lr 1e-4 (model) and 3e-4 (actor, critic,
    alpha), initial alpha 1, tau 0.005, gamma 0.99, MSE/2 critic loss, no gradient clipping, 10k random agent steps,
    100k model-only updates, then 1 update per agent step, replay 100k agent steps. See ``_FIELDS``.
    """

    FIELDS = _FIELDS  # one row per field (training/fields.py: FieldTableConfig)

    def __init__(self, algo_class=None):
        super().__init__(algo_class=algo_class or SLAC)  # every row of _FIELDS at its default (RLlib's too)

    @property
    def batch_length_T(self) -> int:
        """Steps per replayed row: L + 1 (TF: ``num_steps=sequence_length + 1``)."""
        return self.sequence_length + 1

    # what the command line asks of a config (algorithms/config_questions.py)
    COST_HINT = ("docs/slac.md", "smaller image_size, base_depth and batch_size_B (tests/data/slac_tiny.yaml)")

    def replay_batch(self) -> tuple[int | None, str]:
        return sequence_batch(self.batch_size_B, self.batch_length_T)

    def cpu_hours_per_10k_frames(self) -> float | None:
        """Learner hours per 10k frames on a CPU learner: 5.6 s per full update at the original's sizes (64x64
        frames, base_depth 32, 256 rows of 9 steps, the model on 32 of them) on this project's 2-core CPU, 1 torch
        thread, under load (docs/slac.md, "Measured"); scaled in rows, steps, pixels and depth^2."""
        if (self.num_gpus_per_learner or 0) > 0:
            return None
        env_config = self.env_config if isinstance(self.env_config, dict) else {}
        scale = (
            self.batch_size_B
            / 256
            * (self.sequence_length + 1)
            / 9
            * (env_config.get("image_size", 64) / 64) ** 2
            * (self.base_depth / 32) ** 2
        )
        updates = 10_000 / (env_config.get("action_repeat") or 2) * self.updates_per_env_step  # pixel default: 2
        return 5.6 * scale * updates / 3600 / max(1, self.num_learners)

    def cross_errors(self) -> list[str]:
        """The checks between SLAC's fields and the env (each field's own row is checked first)."""
        errors = []
        if not self.is_pixels:
            errors.append("SLAC learns from pixels: set env_config from_pixels: true (image_size: 64, the original's)")
        size = (self.env_config or {}).get("image_size", 64) if isinstance(self.env_config, dict) else 64
        if not (isinstance(size, int) and size >= 16 and size % 16 == 0):
            errors.append(
                f"image_size={size!r}: SLAC's conv encoder/decoder need a side divisible by 16 (original: 64)"
            )
        if self.n_step != 1:
            errors.append(f"n_step={self.n_step!r} is not supported; use n_step: 1 (SLAC's 1-step TD target)")
        return errors

    def get_default_rl_module_spec(self) -> RLModuleSpec:
        return RLModuleSpec(module_class=slac_rl_module.SLACTorchRLModule)

    def get_default_learner_class(self):
        return slac_learner.SLACTorchLearner

    def build_env_to_module_connector(self, env=None, spaces=None, device=None):
        """Pixel SMAC's connector: ``is_first`` marks episode starts, where the actor's history restarts."""
        connector = super().build_env_to_module_connector(env=env, spaces=spaces, device=device)
        connector.insert_before(AddStatesFromEpisodesToBatch, AddIsFirstsToBatch())
        return connector

    @property
    def _model_config_auto_includes(self) -> dict[str, Any]:
        return (
            super()._model_config_auto_includes
            | {name: getattr(self, name) for name in _MODULE_FIELDS}
            | {
                "initial_log_alpha": math.log(self.initial_alpha),
            }
        )


@dataclasses.dataclass(frozen=True)
class PretrainingRatio(SampleToInsertRatio):
    """The async loop's rate limiter plus ``pretrain_updates`` owed as soon as the warm-up is stored, so the runners
    wait while the learner pretrains the model (``rate_limiter.py``'s accounting otherwise unchanged)."""

    pretrain_updates: int = 0

    def granted_updates(self, env_steps_stored: int) -> int:
        owed = self.pretrain_updates if env_steps_stored >= max(self.learning_starts, 1) else 0
        return owed + super().granted_updates(env_steps_stored)

    def may_insert(
        self, *, env_steps_stored: int, env_steps_in_flight: int, request_env_steps: int, updates_done: int
    ) -> bool:
        if env_steps_stored + env_steps_in_flight == 0:
            return True  # no warm-up (learning_starts 0): the first data comes before the pretraining it grants
        return super().may_insert(
            env_steps_stored=env_steps_stored,
            env_steps_in_flight=env_steps_in_flight,
            request_env_steps=request_env_steps,
            updates_done=updates_done,
        )


class SLAC(OffPolicyLoop, SAC):
    """Stochastic Latent Actor-Critic (Lee et al. 2020) from pixels, trained by the same loop as SMAC."""

    @classmethod
    def get_default_config(cls) -> SLACConfig:
        return SLACConfig()

    def make_update_rule(self, max_lead_env_steps: int) -> PretrainingRatio:
        """The loop's rule plus ``initial_model_train_steps`` model updates owed once the warm-up is stored (both
        loops: the synchronous one runs them before the next env steps' updates, the async runners wait for them)."""
        rule = super().make_update_rule(max_lead_env_steps)
        return PretrainingRatio(**dataclasses.asdict(rule), pretrain_updates=self.config.initial_model_train_steps)
