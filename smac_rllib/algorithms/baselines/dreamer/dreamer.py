"""DreamerConfig and Dreamer: the reference code's DreamerV1 (``visual_control/dreamer.py``, ``dreamer=0``) -- the
paper's Dreamer baseline (Fig. 4/5) -- on the world model, env runners, replay and asynchronous loop SMAC uses.

Made like SMAC (and RLlib's TQC): a config, an algorithm, an RLModule and a Learner, each small. What differs from
pixel SMAC: no critic, particles, temperature or target network; a value network, and the actor trained by the
lambda-returns of H imagined steps (``smac_rllib/objectives/imagination.py``). Acting (belief filter, a ~ pi + Gaussian
noise 0.3), the warm-up, replay and evaluation are pixel SMAC's. Every difference from the reference: docs/fidelity.md
("Dreamer").
"""

from __future__ import annotations

from typing import Any

from ray.rllib.core.rl_module.rl_module import RLModuleSpec

from smac_rllib.training.off_policy import set_defaults
from smac_rllib.algorithms.smac.smac import SMAC, SMACConfig

_FIELDS = {  # name: (default, reference-code name / meaning)
    "imagine_horizon": (15, "imagined steps per start state (reference: horizon 15)"),
    "return_lambda": (0.95, "lambda of the lambda-returns (reference: disclam 0.95)"),
    "value_lr": (8e-5, "value Adam learning rate (reference Config.value_lr 8e-5)"),
}


class DreamerConfig(SMACConfig):
    """Configuration of the paper's Dreamer baseline. Example::

        config = DreamerConfig().environment("dmc/cheetah-run", env_config={"from_pixels": True, "action_repeat": 2})
        algo = config.build_algo()

    The reference's values (``visual_control/main.py:34-75`` over ``configs/default/default.yaml``): world-model lr
    6e-4, actor and value lr 8e-5, gradient clip 100 per optimizer, horizon 15, lambda 0.95, gamma 0.99, B x T 50 x 50,
    0.2 updates per agent step, 5000 random agent steps, exploration noise 0.3. SMAC's world-model, replay, loop and
    evaluation fields apply; its particle, critic and temperature fields do nothing here."""

    FIELDS = _FIELDS  # the fields training() takes (training/off_policy.py: FieldTableConfig)

    def __init__(self, algo_class=None):
        super().__init__(algo_class=algo_class or Dreamer)
        set_defaults(self, _FIELDS)
        self.actor_lr = 8e-5  # reference Config.actor_lr (Dreamer's), not SMAC's 3e-4
        self.num_particles = 0
        self.learner_capture = (
            "off"  # the captured update is pixel SMAC's (smac_rllib/training/fast_update/captured_update.py)
        )

    def smac_errors(self) -> list[str]:
        errors = [e for e in super().smac_errors() if not e.startswith("learner_capture")]
        if not self.is_pixels:
            errors.append("Dreamer learns from pixels only: set env_config from_pixels: true (and image_size: 64)")
        h = self.imagine_horizon
        if not isinstance(h, int) or isinstance(h, bool) or h < 1:
            errors.append(f"imagine_horizon={h!r} must be an integer >= 1 (reference: 15)")
        lam = self.return_lambda
        if not (isinstance(lam, (int, float)) and 0.0 <= lam <= 1.0):
            errors.append(f"return_lambda={lam!r} must be in [0, 1] (reference: 0.95)")
        if not (isinstance(self.value_lr, (int, float)) and self.value_lr > 0):
            errors.append(f"value_lr={self.value_lr!r} must be a positive number (reference: 8e-5)")
        if self.learner_capture not in ("auto", "off"):
            errors.append(f"learner_capture={self.learner_capture!r}: Dreamer's update runs eagerly; use 'off'")
        return errors

    def get_default_rl_module_spec(self) -> RLModuleSpec:
        from smac_rllib.algorithms.baselines.dreamer import dreamer_rl_module

        return RLModuleSpec(module_class=dreamer_rl_module.DreamerPixelTorchRLModule)

    def get_default_learner_class(self):
        from smac_rllib.algorithms.baselines.dreamer import dreamer_learner

        return dreamer_learner.DreamerTorchLearner

    @property
    def _model_config_auto_includes(self) -> dict[str, Any]:
        return super()._model_config_auto_includes | {
            "imagine_horizon": self.imagine_horizon,
            "return_lambda": self.return_lambda,
            "gamma": self.gamma,
        }


class Dreamer(SMAC):
    """DreamerV1 (Hafner et al., 2020) as in the SMAC reference code: the paper's model-based pixel baseline."""

    @classmethod
    def get_default_config(cls) -> DreamerConfig:
        return DreamerConfig()
