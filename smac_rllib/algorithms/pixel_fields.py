"""The world model's and the pixel loop's fields, shared by pixel SMAC and the Dreamer baseline: one row each
(``training/fields.py``), importable without ray."""

from __future__ import annotations

from smac_rllib.models.world_model import WorldModelConfig
from smac_rllib.training.fast_update.captured_update import CAPTURE_MODES
from smac_rllib.training.fields import Field, count, positive

WORLD_MODEL_FIELDS = {  # pixels (Alg. 2): used when env_config has from_pixels=True
    "world_model_preset": Field(
        "paper",
        "RSSM sizes: 'paper' (deter 200, stoch 30, depth 32) | 'small' | 'tiny'",
        choices=tuple(WorldModelConfig.PRESETS),
        pixels=True,
    ),
    "pixel_actor_head": Field(
        "dreamer",
        "'dreamer': the reference's ActionDecoder (mean 5 tanh(mu/5), std softplus(raw + 4) + 1e-4; network.py:254) | "
        "'sac': pytorch_sac's bounded log-std head",
        choices=("dreamer", "sac"),
        pixels=True,
    ),
    "batch_size_B": count(50, "sequences per update (reference: 50)", hint="(reference: 50)", pixels=True),
    "batch_length_T": count(
        50, "steps per sequence (reference: 50)", low=2, hint="(TD targets need t+1; reference: 50)", pixels=True
    ),
    "world_model_lr": positive(6e-4, "world-model Adam learning rate", hint="(reference: 6e-4)", pixels=True),
    "action_noise": Field(
        0.3,
        "std of the additive Gaussian collection noise",
        kind=float,
        low=0,
        hint="(reference: 0.3)",
        pixels=True,
    ),
    "pixel_hidden_dim": count(
        300, "width of the actor and critic MLPs on belief features (reference: 300, ELU)", pixels=True
    ),
    "actor_layers": count(4, "hidden layers of the pixel actor (reference: 4)", pixels=True),
    "pixel_grad_clip": positive(
        100.0, "global-norm gradient clip per optimizer for pixels", hint="(reference: 100)", pixels=True
    ),
    "autocast": Field(
        "auto",
        "'auto' (bf16 on a GPU learner, fp32 on CPU) | 'bf16' | 'fp16' (with a grad scaler; the reference's choice, "
        "smac.py:104) | None: autocast of the world model and the particle re-filter",
        choices=("auto", "bf16", "fp16", None, "off"),
        pixels=True,
    ),
    "learner_capture": Field(
        "auto",
        "how the pixel learner runs its one update: 'off' (eager) | 'graph' (the whole update captured in one CUDA "
        "graph, replayed per update; CUDA learner) | 'graph+compile' (the same with the RSSM step compiled by "
        "Inductor) | 'auto' (the fastest mode measured on a device, 'graph', for a CUDA learner; eager on the CPU, "
        "with fp16, several learners, an lr schedule or target_network_update_freq; "
        "smac_rllib/training/fast_update/captured_update.py)",
        choices=CAPTURE_MODES,
        pixels=True,
    ),
}
# the module fields of the belief actor (world model, actor, acting), handed to the RLModule's model_config
BELIEF_ACTOR_MODULE_FIELDS = (
    "world_model_preset",
    "pixel_actor_head",
    "action_noise",
    "pixel_hidden_dim",
    "actor_layers",
)
