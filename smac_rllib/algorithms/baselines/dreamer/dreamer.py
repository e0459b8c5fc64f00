"""DreamerConfig and Dreamer: the reference code's DreamerV1 (``visual_control/dreamer.py``, ``dreamer=0``) -- the
paper's Dreamer baseline (Fig. 4/5) -- on the world model, env runners, replay and asynchronous loop SMAC uses.

Made like SMAC (and RLlib's TQC): a config, an algorithm, an RLModule and a Learner, each small. What differs from
pixel SMAC: no critic, particles, temperature or target network; a value network, and the actor trained by the
lambda-returns of H imagined steps (``smac_rllib/objectives/imagination.py``). Acting (belief filter, a ~ pi + Gaussian
noise 0.3), the warm-up, replay and evaluation are pixel SMAC's. Every difference from the reference: docs/fidelity.md
("Dreamer").
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ray.rllib.algorithms.sac.sac import SAC, SACConfig
from ray.rllib.core.rl_module.rl_module import RLModuleSpec

from smac_rllib.algorithms.baselines.dreamer import dreamer_learner, dreamer_rl_module
from smac_rllib.algorithms.pixel_fields import WORLD_MODEL_FIELDS
from smac_rllib.algorithms.pixel_run import PixelRunConfig
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

_DREAMER = {  # name: Field(default, reference-code name / meaning, checks) -- one home per field (training/fields.py)
    "imagine_horizon": count(15, "imagined steps per start state (reference: horizon 15)", hint="(reference: 15)"),
    "return_lambda": Field(
        0.95,
        "lambda of the lambda-returns (reference: disclam 0.95)",
        kind=float,
        low=0,
        high=1,
        hint="(reference: 0.95)",
    ),
    "value_lr": positive(8e-5, "value Adam learning rate (reference Config.value_lr 8e-5)", hint="(reference: 8e-5)"),
    "updates_per_env_step": positive(
        0.2,
        "gradient updates per sampled agent step (reference: 100 updates of B x T every 1000 frames at action "
        "repeat 2)",
        hint="(per env step, not per iteration; reference: 0.2)",
        high=MAX_UPDATES_PER_ENV_STEP,
        low=MIN_UPDATES_PER_ENV_STEP,
        low_open=False,
    ),
    "random_actions_before_learning": seed_actions("reference start_steps"),
    "learner_capture": dataclasses.replace(
        WORLD_MODEL_FIELDS["learner_capture"],
        default="off",
        doc="Dreamer's update runs eagerly (the captured update is pixel SMAC's); 'off' | 'auto' (= off)",
        choices=("off", "auto"),
    ),
}

_RLLIB = {  # RLlib's own fields: RLlib's training() takes them; these rows set Dreamer's defaults and add the checks
    "actor_lr": positive(
        8e-5,
        "actor Adam learning rate (reference Config.actor_lr; not SMAC's 3e-4)",
        hint="(reference: 8e-5)",
        rllib=True,
    ),
    "tau": Field(0.005, "unused: Dreamer has no target network", kind=float, low=0, high=1, rllib=True),
    "gamma": Field(0.99, "discount of the lambda-returns", kind=float, low=0, high=1, low_open=True, rllib=True),
    "grad_clip": positive(None, "global-norm clip per optimizer; None: pixel_grad_clip (100)", rllib=True),
    "num_steps_sampled_before_learning_starts": count(
        5000,
        "uniform random agent steps before learning (reference start_steps 10000 frames / action repeat 2)",
        low=0,
        hint="(reference: 5000)",
        rllib=True,
    ),
}

_FIELDS = WORLD_MODEL_FIELDS | _DREAMER | _RLLIB | LEARNER_FIELDS | ASYNC_FIELDS | OFF_POLICY_RLLIB_FIELDS


class DreamerConfig(FieldTableConfig, PixelRunConfig, SACConfig):
    """Configuration of the paper's Dreamer baseline. Example::

        config = DreamerConfig().environment("dmc/cheetah-run", env_config={"from_pixels": True, "action_repeat": 2})
        algo = config.build_algo()

    The reference's values (``visual_control/main.py:34-75`` over ``configs/default/default.yaml``): world-model lr
    6e-4, actor and value lr 8e-5, gradient clip 100 per optimizer, horizon 15, lambda 0.95, gamma 0.99, B x T 50 x 50,
    0.2 updates per agent step, 5000 random agent steps, exploration noise 0.3. The world model's, replay's and loop's
    fields are pixel SMAC's (``algorithms/pixel_run.py``)."""

    FIELDS = _FIELDS  # one row per field (training/fields.py: FieldTableConfig)

    def __init__(self, algo_class=None):
        super().__init__(algo_class=algo_class or Dreamer)  # every row of _FIELDS at its default (RLlib's too)

    def cross_errors(self) -> list[str]:
        if not self.is_pixels:
            return ["Dreamer learns from pixels only: set env_config from_pixels: true (and image_size: 64)"]
        return self.image_size_errors()

    def critic_layer_count(self) -> int:
        return 3  # the value network v(s), 3 x 300 ELU

    def get_default_rl_module_spec(self) -> RLModuleSpec:
        return RLModuleSpec(module_class=dreamer_rl_module.DreamerPixelTorchRLModule)

    def get_default_learner_class(self):
        return dreamer_learner.DreamerTorchLearner

    @property
    def _model_config_auto_includes(self) -> dict[str, Any]:
        return (
            super()._model_config_auto_includes
            | self.belief_actor_model_config()
            | {
                "imagine_horizon": self.imagine_horizon,
                "return_lambda": self.return_lambda,
                "gamma": self.gamma,
            }
        )


class Dreamer(OffPolicyLoop, SAC):
    """DreamerV1 (Hafner et al., 2020) as in the SMAC reference code: the paper's model-based pixel baseline."""

    @classmethod
    def get_default_config(cls) -> DreamerConfig:
        return DreamerConfig()
