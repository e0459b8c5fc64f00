"""SMACConfig and SMAC: Stochastic Marginal Actor-Critic from states (Alg. 1) and pixels (Alg. 2, ``env_config:
{from_pixels: true}``) on RLlib's new API stack.

Made like RLlib's TQC, by subclassing SAC's Config / Algorithm; the RLModule and Learner live next door.
The outer loop (act, store, ``updates_per_env_step`` updates per new env step, sync) is ``OffPolicyLoop``
in ``smac_rllib/training/off_policy.py``; the field table in ``smac_fields.py``; the update each learner runs in
``objectives/state_update.py`` / ``objectives/pixel_update.py`` (run by ``smac_learner.py``).
"""

from __future__ import annotations

import math
from typing import Any

import torch

from ray.rllib.algorithms.sac.sac import SAC, SACConfig
from ray.rllib.core.rl_module.rl_module import RLModuleSpec

from smac_rllib.algorithms.pixel_run import PixelRunConfig
from smac_rllib.algorithms.smac import pixel_rl_module, smac_learner, smac_rl_module
from smac_rllib.algorithms.smac.smac_fields import _FIELDS, PIXEL_MODULE_FIELDS, STATE_MODULE_FIELDS
from smac_rllib.core import estimators
from smac_rllib.training.fast_update.captured_update import CaptureUnavailable, resolve_capture
from smac_rllib.training.fields import FieldTableConfig
from smac_rllib.training.off_policy import OffPolicyLoop


class SMACConfig(FieldTableConfig, PixelRunConfig, SACConfig):
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

    FIELDS = _FIELDS  # one row per field (smac_fields.py; training/fields.py: FieldTableConfig)
    LEARNER_ONLY = (  # the acting policy samples one latent (states) or takes the belief (pixels): K is the updates'
        "num_particles", "estimator", "mlmc_average_level0", "td_entropy", "beta", "beta_scale", "critic_loss",
        "critic_particles",
    )  # fmt: skip

    def __init__(self, algo_class=None):
        super().__init__(algo_class=algo_class or SMAC)  # every row of _FIELDS at its default (RLlib's too)

    def cost_particles(self) -> int:
        return self.resolved_num_particles

    def critic_layer_count(self) -> int:
        return 2 * 3 * self.critic_layers  # twin critics for Q_pi, Q_pred and the targets

    def cross_errors(self) -> list[str]:
        """The checks between SMAC's fields (each field's own row is checked first: ``training/fields.py``)."""
        errors = []
        K = self.resolved_num_particles
        if self.estimator == "mlmc":
            try:
                estimators.mlmc_levels(K)
            except ValueError as e:
                errors.append(str(e))
        elif self.estimator in ("naive", "iwae") and K < 1:
            errors.append(f"estimator={self.estimator!r} needs num_particles >= 1 (try 16)")
        if not self.is_pixels:
            if self.learner_capture not in ("auto", "off"):
                errors.append(
                    f"learner_capture={self.learner_capture!r} applies to pixel runs (env_config from_pixels: true); "
                    "remove it for a state run"
                )
            return errors
        return errors + self.image_size_errors() + self._capture_errors()

    def run_warnings(self) -> list[str]:
        """What this run will do that a user may not mean (said before Ray starts; the run goes on)."""
        if not self.is_pixels and self.resolved("num_particles") == 0:
            return [
                "num_particles: 0 from states trains SMAC's latent-variable policy with the entropy of one latent "
                "(-log pi(a|s), Latent-SAC's objective), not SAC; plain SAC from states is `run: SACBaseline`"
            ]
        return []

    def values_as_run(self) -> dict[str, tuple]:
        """{setting: (the estimator it runs, why)} where K makes estimators coincide (core/estimators.py): at K = 0
        nested, mlmc and conditional are all -log pi(a|s0); at K = 1 mlmc is nested (one level) and iwae is naive."""
        k, estimator = self.resolved("num_particles"), self.estimator
        same = {0: {"mlmc": "nested", "conditional": "nested"}, 1: {"mlmc": "nested", "iwae": "naive"}}
        runs = same.get(k, {}).get(estimator, estimator)
        return {"estimator": (runs, f"the {runs} estimator at num_particles={k}")} if runs != estimator else {}

    def _capture_errors(self) -> list[str]:
        mode = self.learner_capture
        if mode in ("auto", "off"):
            return []
        gpu = (
            self.num_gpus_per_learner
            if self.num_learners
            else (self.num_gpus_per_learner or getattr(self, "num_gpus", 0))
        )
        device = "cuda" if gpu else "cpu"
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
            return RLModuleSpec(module_class=pixel_rl_module.SMACPixelTorchRLModule)
        return RLModuleSpec(module_class=smac_rl_module.SMACTorchRLModule)

    def get_default_learner_class(self):
        return smac_learner.SMACPixelTorchLearner if self.is_pixels else smac_learner.SMACTorchLearner

    @property
    def _model_config_auto_includes(self) -> dict[str, Any]:
        included = super()._model_config_auto_includes | {
            "num_particles": self.resolved_num_particles,
            "initial_log_alpha": math.log(self.resolved_initial_alpha),
            "td_entropy": self.resolved_td_entropy,
            "torch_num_threads": self.torch_num_threads,
        }
        if self.is_pixels:
            return included | self.belief_actor_model_config() | {n: getattr(self, n) for n in PIXEL_MODULE_FIELDS}
        return included | {name: getattr(self, name) for name in STATE_MODULE_FIELDS}


class SMAC(OffPolicyLoop, SAC):
    """Stochastic Marginal Actor-Critic (Zhang et al., ICLR 2023): states (Alg. 1) or pixels (Alg. 2), by the config."""

    @classmethod
    def get_default_config(cls) -> SMACConfig:
        return SMACConfig()
