"""SMAC's field table: every SMAC hyperparameter as one row (``training/fields.py: Field``): its default and meaning,
the type, range or choices that ``validate()`` and the command line check, whether it applies to pixel or state runs
only, and its value per modality where the default is automatic (None). ``SMACConfig`` (smac.py) is built from it; the
world model's rows, shared with the Dreamer baseline, are in ``algorithms/pixel_fields.py``. Loads without ray:
``resolved_defaults(_FIELDS, pixels)`` gives a fresh config's settings where ray is absent."""

from __future__ import annotations

from smac_rllib.algorithms.pixel_fields import WORLD_MODEL_FIELDS
from smac_rllib.core import estimators
from smac_rllib.training.fields import (
    MAX_UPDATES_PER_ENV_STEP,
    MIN_UPDATES_PER_ENV_STEP,
    ASYNC_FIELDS,
    LEARNER_FIELDS,
    OFF_POLICY_RLLIB_FIELDS,
    SAC_RLLIB_FIELDS,
    Field,
    When,
    count,
    positive,
    seed_actions,
)

_SMAC = {  # name: Field(default, reference-code name / meaning, checks) -- one home per hyperparameter
    "num_particles": count(
        None,
        "K, fresh latent particles per entropy estimate (reference code: num_p); K+1 with s0; "
        "None = 16 for states, 32 for pixels (the reference's num_p, default.yaml:48)",
        low=0,
        hint="(try 16)",
        auto=(16, 32),
    ),
    "latent_dim": count(
        16,
        "dimension of s in q(s|x) (reference code: latent_dim)",
        hint="(paper: 8, 16 or 32)",
        pixels=False,
        instead="world_model_preset (the RSSM's stochastic state is the pixel policy's latent)",
    ),
    "estimator": Field(
        "mlmc",
        "'mlmc' (Eq. 7) | 'nested' (Eq. 6) | 'naive' | 'iwae' (upper bounds, ablation only)",
        choices=tuple(estimators.ESTIMATORS),
    ),
    "mlmc_average_level0": Field(
        True,
        "MLMC level 0 averaged over all K pairs (s0, s_k), reference code "
        "visual_control/network.py:375; False = Eq. (7) literally (particle 1 only)",
        hint="(true: the reference; false: Eq. 7 literally)",
        read_when=(When("estimator", "mlmc"), When("num_particles", 1, above=True)),  # K = 1: one pair either way
    ),
    "td_entropy": Field(
        None,
        "entropy term of the TD target: 'marginal' (the estimator at x', Eq. 10) | 'conditional' "
        "(-log pi(a'|s') of one latent, Eq. 12 and reference smac.py:153); None = marginal for states, "
        "conditional for pixels",
        choices=(None, "marginal", "conditional"),
        auto=("marginal", "conditional"),
    ),
    "beta": Field(
        0.0,
        "weight of the conditional-entropy regularizer, App. B.3 (0 = off; reference: pazent)",
        kind=float,
        low=0,
        hint="(App. B.3; 0 turns the regularizer off)",
    ),
    "beta_scale": Field(
        "alpha",
        "'alpha': the regularizer is scaled by alpha (reference smac.py:140) | 'none' (paper)",
        choices=("alpha", "none"),
        read_when=When("beta", 0, above=True),
    ),
    "hidden_dim": count(
        256,
        "width of the q(s|x) and pi(a|s) MLPs (SMAC 256; the SAC baseline uses 400)",
        hint="(paper: 256)",
        pixels=False,
        instead="pixel_hidden_dim",
    ),
    "critic_hidden_dim": count(
        256, "width of the twin Q MLPs", hint="(paper: 256)", pixels=False, instead="pixel_hidden_dim"
    ),
    "num_hidden_layers": count(
        2,
        "hidden layers of every MLP (paper: 2)",
        hint="(paper: 2)",
        pixels=False,
        instead="actor_layers / critic_layers",
    ),
    "critic_loss": Field("mse", "'mse' (paper, pytorch_sac) | 'huber' (RLlib SAC's default)", choices=("mse", "huber")),
    "updates_per_env_step": positive(
        None,
        "gradient updates per sampled env step; None = 1.0 for states (pytorch_sac), "
        "0.2 for pixels (reference: 100 updates of B x T every 1000 frames at action repeat 2)",
        hint="(per env step, not per iteration; pytorch_sac: 1, pixels: 0.2)",
        high=MAX_UPDATES_PER_ENV_STEP,
        low=MIN_UPDATES_PER_ENV_STEP,
        low_open=False,
        auto=(1.0, 0.2),
    ),
    "random_actions_before_learning": seed_actions("pytorch_sac seed steps; reference start_steps"),
    # --- pixels (Alg. 2): SMAC's own; the world model's rows are pixel_fields.WORLD_MODEL_FIELDS ---
    "critic_particles": Field(
        "all",
        "pixel critic trained on 'all' K+1 belief particles, each with its own a' "
        "(reference smac.py:149-158) | 's0' (the world model's posterior sample only)",
        choices=("all", "s0"),
        pixels=True,
    ),
    "particle_mode": Field(
        "history",
        "'history': K posterior trajectories re-filtered over the sequence (reference code) | "
        "'step': K samples of s_t around the shared deterministic state (cheap)",
        choices=("history", "step"),
        pixels=True,
    ),
    "critic_layers": count(3, "hidden layers of the pixel critics", pixels=True),
}

_RLLIB = SAC_RLLIB_FIELDS | {  # RLlib's fields: its training() takes them; these rows set SMAC's defaults and checks
    "initial_alpha": positive(
        None,
        "initial temperature; None = 0.1 for states (pytorch_sac init_temperature), 1.0 for pixels (reference "
        "init_alpha, default.yaml:31)",
        hint="(pytorch_sac: 0.1; pixel reference: 1.0; None = per modality)",
        auto=(0.1, 1.0),
        rllib=True,
    ),
    "grad_clip": positive(
        None,
        "global-norm gradient clip per optimizer; None: none for states, pixel_grad_clip for pixels",
        hint="(or null: no clipping)",
        rllib=True,
    ),
    "num_steps_sampled_before_learning_starts": count(
        5000,
        "uniform random agent steps before learning: pytorch_sac's num_seed_steps 5000 | the reference's start_steps "
        "10000 frames at action repeat 2",
        low=0,
        hint="(paper: 5000)",
        rllib=True,
    ),
    "train_batch_size_per_learner": count(
        256,
        "transitions per state update (SAC's original 256, not pytorch_sac's 1024: 4x cheaper on CPU learners)",
        hint="(paper: 256)",
        pixels=False,
        instead="batch_size_B x batch_length_T",
        rllib=True,
    ),
}

_FIELDS = _SMAC | WORLD_MODEL_FIELDS | _RLLIB | LEARNER_FIELDS | ASYNC_FIELDS | OFF_POLICY_RLLIB_FIELDS

# the module fields of pixel SMAC beyond the belief actor's (pixel_fields.BELIEF_ACTOR_MODULE_FIELDS)
PIXEL_MODULE_FIELDS = ("particle_mode", "critic_layers", "critic_particles")
STATE_MODULE_FIELDS = ("latent_dim", "hidden_dim", "critic_hidden_dim", "num_hidden_layers")
