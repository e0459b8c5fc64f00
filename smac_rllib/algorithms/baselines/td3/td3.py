"""TD3 (Fujimoto et al. 2018) on our plumbing: the paper's TD3 baseline from states (Fig. 3), ``run: TD3``.

RLlib 2.60's new API stack has no TD3/DDPG, so the module and learner are ours:
- a deterministic actor mu(x) = tanh(MLP(x)) (2 hidden ReLU layers of width ``hidden_dim``);
- twin critics Q_i = MLP(x || a) as the SAC baseline's (``models.critic.TwinQ``), MSE loss (sum of the two);
- target policy smoothing: a' = clip(mu_bar(x') + clip(eps, -c, c), -1, 1), eps ~ N(0, ``target_noise``^2),
  c = ``target_noise_clip`` (0.2 and 0.5); target y = r + gamma (1 - d) min_i Qbar_i(x', a');
- delayed updates: the actor (loss -Q_1(x, mu(x)), critics frozen) and the soft target updates (tau, of the
  target actor and both target critics) happen every ``policy_delay`` (2) critic updates;
- exploration: a = clip(mu(x) + N(0, ``exploration_noise``^2), -1, 1) with 0.1; evaluation (``explore=False``): mu(x).

Settings as the paper runs it: lr 3e-4 for actor and critic (TD3's own: 1e-3), width 400 (as its SAC baseline),
and otherwise the SAC baseline's schedule (batch 256, 1 update per env step, replay 1M, tau 0.005, gamma 0.99,
5000 uniform random steps first -- TD3's own: 25000 --, async loop). Adam with torch's default eps.
``TD3Config`` extends ``SACBaselineConfig`` for that shared schedule; its alpha fields are unused.

With several learners (DDP) the actor is unused on critic-only updates: give
``torch_ddp_kwargs={"find_unused_parameters": True}``.
"""

from __future__ import annotations

from typing import Any

from ray.rllib.algorithms.sac.sac import SAC
from ray.rllib.core.rl_module.rl_module import RLModuleSpec

from smac_rllib.algorithms.baselines.sac_baseline.sac_baseline import SACBaselineConfig
from smac_rllib.algorithms.baselines.td3 import td3_learner, td3_rl_module
from smac_rllib.training.fields import Field, When, count
from smac_rllib.training.off_policy import OffPolicyLoop


_FIELDS = {  # name: Field(default, meaning, checks) -- TD3's own fields (Fujimoto et al. 2018)
    "policy_delay": count(2, "critic updates per actor and target update", hint="(TD3: 2)"),
    "target_noise": Field(
        0.2,
        "std of the target policy smoothing noise",
        kind=float,
        low=0,
        hint="(TD3: 0.2)",
        read_when=When("target_noise_clip", 0, above=True),  # clipped to [-0, 0]: no noise
    ),
    "target_noise_clip": Field(
        0.5,
        "clip of the target policy smoothing noise",
        kind=float,
        low=0,
        hint="(TD3: 0.5)",
        read_when=When("target_noise", 0, above=True),
    ),
    "exploration_noise": Field(
        0.1,
        "std of the Gaussian exploration noise",
        kind=float,
        low=0,
        high=1.0,
        high_open=True,  # on actions in [-1, 1]: a std of 1 clips most noisy actions to the ends (bang-bang)
        hint="(TD3: 0.1; the actions span [-1, 1], so a std of 1 or more clips most of them to the ends)",
    ),
}


class TD3Config(SACBaselineConfig):
    FIELDS = _FIELDS  # one row per field (training/fields.py: FieldTableConfig)

    def __init__(self, algo_class=None):
        # the SAC baseline's rows: lr 3e-4 (the paper's; TD3's own 1e-3), width 400 (TD3's 2018 paper: 400-300)
        super().__init__(algo_class=algo_class or TD3)

    def get_default_rl_module_spec(self) -> RLModuleSpec:
        return RLModuleSpec(module_class=td3_rl_module.TD3TorchRLModule)

    def unused_keys(self, written) -> list[str]:
        """The SAC baseline's temperature settings, which TD3 (a deterministic policy, Gaussian exploration noise)
        never reads (cli/config_questions.py asks)."""
        return [
            f"{key}={written[key]!r} is a setting of SAC's entropy temperature, and TD3 has none (a deterministic "
            "policy with Gaussian exploration noise: exploration_noise); remove it, or use run: SACBaseline"
            for key in ("initial_alpha", "target_entropy", "alpha_lr")
            if key in written
        ]

    def get_default_learner_class(self):
        return td3_learner.TD3TorchLearner

    @property
    def _model_config_auto_includes(self) -> dict[str, Any]:
        return super()._model_config_auto_includes | {
            "hidden_dim": self.hidden_dim,
            "target_noise": self.target_noise,
            "target_noise_clip": self.target_noise_clip,
            "exploration_noise": self.exploration_noise,
        }


class TD3(OffPolicyLoop, SAC):
    """TD3 (Fujimoto et al. 2018) with the paper's settings, trained by the same loop as SMAC."""

    @classmethod
    def get_default_config(cls) -> TD3Config:
        return TD3Config()
