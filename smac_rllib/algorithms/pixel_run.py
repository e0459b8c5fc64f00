"""What pixel SMAC and the Dreamer baseline share as configs (their fields: ``pixel_fields.py``): ``PixelRunConfig``,
the questions the command line asks of a pixel run (the steps one update replays, its memory and CPU cost, the keys
the run ignores), the ``is_first`` connector and the module fields of the belief actor
(``algorithms/belief_actor_module.py``)."""

from __future__ import annotations

from typing import Any

from ray.rllib.connectors.common import AddStatesFromEpisodesToBatch

from smac_rllib.algorithms.connectors import AddIsFirstsToBatch
from smac_rllib.algorithms.pixel_fields import BELIEF_ACTOR_MODULE_FIELDS


def sequence_batch(b, t) -> tuple[int | None, str]:
    """Env steps one update of B x T sequences replays (SMAC's pixels, Dreamer, SLAC, RLlib's DreamerV3)."""
    if isinstance(b, int) and isinstance(t, int):
        return b * t, f"batch_size_B x batch_length_T = {b} x {t}"
    return None, ""


class PixelRunConfig:
    """Mixed into a config whose pixel runs filter an RSSM belief and act on it (SMAC, Dreamer)."""

    # what the command line asks of a config (algorithms/config_questions.py)
    COST_HINT = ("benchmarks/results/pixel_learner_cost_cpu/", "tuned_examples/smac_pixels_quick.yaml")

    def cost_particles(self) -> int:
        """K of the memory and CPU cost estimates (0: no particles)."""
        return 0

    def critic_layer_count(self) -> int:
        """Hidden layers of the networks trained on the B x T belief rows besides the actor (memory estimate)."""
        return 0

    def unused_keys(self, written) -> list[str]:
        """One message per written key this run ignores: pixel settings in a state run, state settings in a pixel
        run (the rows' ``pixels`` flag, ``training/fields.py``)."""
        if self.is_pixels:
            return [
                f"{key}={written[key]!r} does nothing in a pixel run (env_config from_pixels: true); use "
                f"{field.instead} instead, or remove it"
                for key, field in self.modality_fields(pixels=False).items()
                if key in written
            ]
        return [
            f"{key}={written[key]!r} is a pixel setting (Alg. 2) and this run learns from states; set env_config "
            "from_pixels: true or remove it"
            for key in self.modality_fields(pixels=True)
            if key in written
        ]

    def replay_batch(self) -> tuple[int | None, str]:
        """(env steps one update replays, their name): B x T sequences for pixels, transitions for states."""
        if not self.is_pixels:
            batch = self.train_batch_size_per_learner
            return (batch if isinstance(batch, int) else None), "train_batch_size_per_learner"
        return sequence_batch(self.batch_size_B, self.batch_length_T)

    def update_memory_terms(self) -> dict[str, tuple[float, str]]:
        """One pixel update's activations on a CPU learner (cli/memory.py): the actor and the networks trained beside
        it over (K+1) x B x T latent rows, forward and backward, and the world model over B x T uint8 64x64x3
        frames."""
        if not self.is_pixels:
            return {}
        B, T, K = self.batch_size_B, self.batch_length_T, self.cost_particles()
        rows = (K + 1) * B * T
        layers = self.actor_layers + self.critic_layer_count()
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
        rows = self.batch_size_B * self.batch_length_T / (16 * 32)
        s_per_update = (k0 + (k32 - k0) * min(self.cost_particles(), 32) / 32) * rows
        action_repeat = (self.env_config or {}).get("action_repeat") or 2
        updates = 10_000 / action_repeat * self.resolved("updates_per_env_step")  # an auto row (SMAC) or not (Dreamer)
        return s_per_update * updates / 3600 / max(1, self.num_learners)

    def image_size_errors(self) -> list[str]:
        if self.is_pixels and self.env_config.get("image_size", 64) != 64:
            return [
                f"image_size={self.env_config.get('image_size')!r}: the RSSM's conv stack needs 64x64 frames; set "
                "image_size: 64"
            ]
        return []

    def build_env_to_module_connector(self, env=None, spaces=None, device=None):
        connector = super().build_env_to_module_connector(env=env, spaces=spaces, device=device)
        if self.is_pixels:  # the RSSM resets its belief where is_first (as RLlib's DreamerV3 does)
            connector.insert_before(AddStatesFromEpisodesToBatch, AddIsFirstsToBatch())
        return connector

    def belief_actor_model_config(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in BELIEF_ACTOR_MODULE_FIELDS} | {
            "autocast": self.autocast,
            "torch_num_threads": self.torch_num_threads,
        }
