"""SMAC's field table: every SMAC hyperparameter with its default and meaning (one row each), the numeric ranges
the CLI checks before Ray starts, and which fields apply to pixel or state runs only. ``SMACConfig`` (smac.py) is
built from it (``FieldTableConfig``)."""

from __future__ import annotations

from smac_rllib.training.off_policy import ASYNC_FIELDS

_FIELDS = {  # name: (default, reference-code name / meaning) -- one home per hyperparameter
    "num_particles": (
        None,
        "K, fresh latent particles per entropy estimate (reference code: num_p); K+1 with s0; "
        "None = 16 for states, 32 for pixels (the reference's num_p, default.yaml:48)",
    ),
    "latent_dim": (16, "dimension of s in q(s|x) (reference code: latent_dim)"),
    "estimator": ("mlmc", "'mlmc' (Eq. 7) | 'nested' (Eq. 6) | 'naive' | 'iwae' (upper bounds, ablation only)"),
    "mlmc_average_level0": (
        True,
        "MLMC level 0 averaged over all K pairs (s0, s_k), reference code "
        "visual_control/network.py:375; False = Eq. (7) literally (particle 1 only)",
    ),
    "td_entropy": (
        None,
        "entropy term of the TD target: 'marginal' (the estimator at x', Eq. 10) | 'conditional' "
        "(-log pi(a'|s') of one latent, Eq. 12 and reference smac.py:153); None = marginal for states, "
        "conditional for pixels",
    ),
    "beta": (0.0, "weight of the conditional-entropy regularizer, App. B.3 (0 = off; reference: pazent)"),
    "beta_scale": ("alpha", "'alpha': the regularizer is scaled by alpha (reference smac.py:140) | 'none' (paper)"),
    "hidden_dim": (256, "width of the q(s|x) and pi(a|s) MLPs (SMAC 256; the SAC baseline uses 400)"),
    "critic_hidden_dim": (256, "width of the twin Q MLPs"),
    "num_hidden_layers": (2, "hidden layers of every MLP (paper: 2)"),
    "critic_loss": ("mse", "'mse' (paper, pytorch_sac) | 'huber' (RLlib SAC's default)"),
    "updates_per_env_step": (
        None,
        "gradient updates per sampled env step; None = 1.0 for states (pytorch_sac), "
        "0.2 for pixels (reference: 100 updates of B x T every 1000 frames at action repeat 2)",
    ),
    "random_actions_before_learning": (
        True,
        "uniform random actions for exactly the first "
        "num_steps_sampled_before_learning_starts agent steps (pytorch_sac seed steps; "
        "reference start_steps)",
    ),
    "max_consecutive_nonfinite_updates": (100, "stop the run after this many skipped non-finite updates in a row"),
    "torch_num_threads": (
        1,
        "torch threads per CPU learner / env runner process (docs/design.md §9); 0 = torch default",
    ),
    "fast_update": (
        True,
        "retired: every run takes the one update (docs/design.md §9); kept so that older "
        "checkpoints' configs restore, false is refused",
    ),
    # --- pixels (Alg. 2); used when env_config has from_pixels=True ---
    "world_model_preset": ("paper", "RSSM sizes: 'paper' (deter 200, stoch 30, depth 32) | 'small' | 'tiny'"),
    "critic_particles": (
        "all",
        "pixel critic trained on 'all' K+1 belief particles, each with its own a' "
        "(reference smac.py:149-158) | 's0' (the world model's posterior sample only)",
    ),
    "pixel_actor_head": (
        "dreamer",
        "'dreamer': the reference's ActionDecoder (mean 5 tanh(mu/5), std softplus(raw + 4) "
        "+ 1e-4; network.py:254) | 'sac': pytorch_sac's bounded log-std head",
    ),
    "particle_mode": (
        "history",
        "'history': K posterior trajectories re-filtered over the sequence (reference code) | "
        "'step': K samples of s_t around the shared deterministic state (cheap)",
    ),
    "batch_size_B": (50, "sequences per update (reference: 50)"),
    "batch_length_T": (50, "steps per sequence (reference: 50)"),
    "world_model_lr": (6e-4, "world-model Adam learning rate (reference: 6e-4)"),
    "action_noise": (0.3, "std of the additive Gaussian collection noise (reference: 0.3)"),
    "pixel_hidden_dim": (300, "width of the actor and critic MLPs on belief features (reference: 300, ELU)"),
    "actor_layers": (4, "hidden layers of the pixel actor (reference: 4)"),
    "critic_layers": (3, "hidden layers of the pixel critics"),
    "pixel_grad_clip": (100.0, "global-norm gradient clip per optimizer for pixels (reference: 100)"),
    "autocast": (
        "auto",
        "'auto' (bf16 on a GPU learner, fp32 on CPU) | 'bf16' | 'fp16' (with a grad scaler; the "
        "reference's choice, smac.py:104) | None: autocast of the world model and the particle re-filter",
    ),
    "learner_capture": (
        "auto",
        "how the pixel learner runs its one update: 'off' (eager) | 'graph' (the whole "
        "update captured in one CUDA graph, replayed per update; CUDA learner) | 'graph+compile' "
        "(the same with the RSSM step compiled by Inductor) | 'auto' (the fastest mode measured on "
        "a device for a CUDA learner, eager on the CPU; smac_rllib/training/fast_update/captured_update.py)",
    ),
} | ASYNC_FIELDS
# Numeric fields no check of ``smac_errors`` covers: key -> (low, high, low_open, high_open, hint), checked by the
# CLI before Ray starts (``config_questions.ranges``) as RLlib's common settings are.
RANGES = {
    "torch_num_threads": (0, None, False, False, "(0: torch's default)"),
    "max_consecutive_nonfinite_updates": (1, None, False, False, "(default 100)"),
    "num_hidden_layers": (1, None, False, False, "(paper: 2)"),
    "pixel_grad_clip": (0, None, True, False, "(reference: 100)"),
}

_PIXEL_MODULE_FIELDS = (
    "world_model_preset",
    "particle_mode",
    "action_noise",
    "pixel_hidden_dim",
    "actor_layers",
    "critic_layers",
    "autocast",
    "critic_particles",
    "pixel_actor_head",
)
# Settings of one modality that the other ignores (the check of the whole configuration refuses them when written):
# the pixel section of _FIELDS in a state run; in a pixel run the state networks' keys, each with the pixel key to use.
PIXEL_ONLY_FIELDS = tuple(
    list(_FIELDS)[list(_FIELDS).index("world_model_preset") : list(_FIELDS).index("learner_capture") + 1]
)
STATE_ONLY_FIELDS = {
    "latent_dim": "world_model_preset (the RSSM's stochastic state is the pixel policy's latent)",
    "hidden_dim": "pixel_hidden_dim",
    "critic_hidden_dim": "pixel_hidden_dim",
    "num_hidden_layers": "actor_layers / critic_layers",
    "train_batch_size_per_learner": "batch_size_B x batch_length_T",
}
_AUTOCAST = ("auto", "bf16", "fp16", None, "off")
