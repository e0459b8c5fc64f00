"""The belief actor of the pixel algorithms (SMAC's Alg. 2 and the Dreamer baseline): an RSSM world model filtering
a belief over the frames and an actor pi(a|s) acting on it -- the RLModule part they share. Each algorithm's module
adds what it trains beside them (SMAC: twin critics and temperature, ``smac/pixel_rl_module.py``; Dreamer: a value
network, ``baselines/dreamer/dreamer_rl_module.py``).

Legend: B = batch (envs), F = feature dim (stoch + deter), A = action dim. H, W, C = 64, 64, 3 (uint8).

Acting (env runners, inference-only copy = encoder + RSSM + actor): the module is stateful; it carries the
posterior (stoch, deter) and the previous action across steps (``STATE_IN``/``STATE_OUT``), resets at episode
start (``is_first``), samples a ~ pi(a|s_t) and adds Gaussian collection noise (reference: 0.3). One batched
pass serves all ``num_envs_per_env_runner`` envs; it runs under ``torch.inference_mode``, with the encoder's
conv weights channels-last (same numbers, 2-4x faster on CPU) and the module left in eval mode
(docs/design.md §4, "vectorized acting").
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import torch
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.apis import InferenceOnlyAPI
from ray.rllib.core.rl_module.torch.torch_rl_module import TorchRLModule

from smac_rllib.objectives.pixel_forward import build_nets
from smac_rllib.training.fast_update.train_mode import CachedTrainModeMixin


class BeliefActorRLModule(CachedTrainModeMixin, TorchRLModule, InferenceOnlyAPI):
    """World model + actor + acting. ``critic``: whether ``build_nets`` also makes SMAC's twin Q (``self.qf``)."""

    framework = "torch"
    critic = False

    def setup(self):
        cfg = self.model_config
        _check_pixel_spaces(self.observation_space, self.action_space)
        if cfg["torch_num_threads"] and not torch.cuda.is_available():
            torch.set_num_threads(int(cfg["torch_num_threads"]))
        self.action_noise = float(cfg["action_noise"])
        # world model (encoder, RSSM, decoder, reward head; no decoder/reward head on env runners), the actor pi(a|s)
        # ("dreamer" = the reference's ActionDecoder, visual_control/network.py:254) and, for SMAC, the twin Q(s, a)
        self.world_model, self.actor, qf = build_nets(
            int(self.action_space.shape[0]), cfg, critic=self.critic, inference_only=self.inference_only
        )
        if qf is not None:
            self.qf = qf
        # True only while the driver samples the uniform warm-up (OffPolicyLoop._sample_warm_up), on env runners.
        self.register_buffer("uniform_exploration", torch.tensor(False))
        if self.inference_only:
            _prepare_for_acting(self)

    def get_non_inference_attributes(self) -> list[str]:
        return ["world_model.decoder", "world_model.reward_head"]

    def get_initial_state(self) -> dict[str, torch.Tensor]:
        rssm = self.world_model.rssm
        return {
            "stoch": torch.zeros(rssm.stoch_size),
            "deter": torch.zeros(rssm.deter_size),
            "prev_action": torch.zeros(self.actor.action_dim),
        }

    # --- acting -----------------------------------------------------------------------------------------
    def _filter_step(self, batch: dict[str, Any]) -> tuple[torch.Tensor, dict, bool]:
        """One RSSM posterior step for all B envs of the runner at once: (posterior, had_time_dim)."""
        obs = batch[Columns.OBS]
        has_time = obs.dim() == 5  # (B, T=1, H, W, C) from RLlib's time-rank connector for stateful modules
        obs_B_H_W_C = obs[:, 0] if has_time else obs
        state_in = batch[Columns.STATE_IN]
        is_first = batch.get("is_first")
        is_first_B = None if is_first is None else (is_first[:, 0] if is_first.dim() == 2 else is_first)
        rssm = self.world_model.rssm
        prev = {"stoch": state_in["stoch"], "deter": state_in["deter"]}
        prev["mean"], prev["std"] = torch.zeros_like(prev["stoch"]), torch.zeros_like(prev["stoch"])
        embed_B_E = self.world_model.encoder(obs_B_H_W_C)  # uint8 in; the encoder normalizes (preprocess_image)
        post, _ = rssm.obs_step(prev, state_in["prev_action"], embed_B_E, is_first_B)  # resets where is_first
        return post, has_time

    def _act_output(self, post: dict, action_B_A: torch.Tensor, has_time: bool) -> dict[str, Any]:
        state_out = {"stoch": post["stoch"], "deter": post["deter"], "prev_action": action_B_A}
        return {Columns.ACTIONS: action_B_A.unsqueeze(1) if has_time else action_B_A, Columns.STATE_OUT: state_out}

    @torch.inference_mode()  # acting never backpropagates: no autograd graph (docs/design.md §4)
    def _forward_inference(self, batch: dict[str, Any], **kwargs) -> dict[str, Any]:
        """Deterministic evaluation: the posterior-mean belief (acted on AND carried to the next step), tanh(mean)."""
        post, has_time = self._filter_step(batch)
        post = dict(post, stoch=post["mean"])  # no sampled latent anywhere: the whole episode is deterministic
        feat_B_F = self.world_model.rssm.get_feat(post)
        return self._act_output(post, self.actor.mean_action(feat_B_F), has_time)

    @torch.inference_mode()
    def _forward_exploration(self, batch: dict[str, Any], **kwargs) -> dict[str, Any]:
        post, has_time = self._filter_step(batch)
        feat_B_F = self.world_model.rssm.get_feat(post)
        if bool(self.uniform_exploration):
            action_B_A = torch.rand(feat_B_F.shape[0], self.actor.action_dim, device=feat_B_F.device) * 2 - 1
        else:
            action_B_A = self.actor.sample_action(feat_B_F)  # a ~ pi(.|s_t); no log-weights needed to act
            action_B_A = (action_B_A + self.action_noise * torch.randn_like(action_B_A)).clamp(-1.0, 1.0)
        return self._act_output(post, action_B_A, has_time)


def _prepare_for_acting(module: BeliefActorRLModule) -> None:
    """Env-runner copies only act: eval mode once (RLlib then never toggles it back, see ``train``), and the conv
    encoder's weights channels-last. The encoder permutes channels-last frames to NCHW views, so oneDNN runs
    channels-last; with NCHW-contiguous weights it converts them on every call (measured 2-4x slower at 1-8
    frames, identical outputs). ``set_state`` copies synced weights in place and keeps the layout."""
    module.eval()
    module.world_model.encoder.to(memory_format=torch.channels_last)


def _check_pixel_spaces(observation_space: gym.Space, action_space: gym.Space) -> None:
    if not isinstance(action_space, gym.spaces.Box) or len(action_space.shape) != 1:
        raise ValueError(f"the pixel algorithms need a 1-D continuous (Box) action space; got {action_space}")
    shape = getattr(observation_space, "shape", None)
    if not isinstance(observation_space, gym.spaces.Box) or shape is None or tuple(shape) != (64, 64, 3):
        raise ValueError(
            f"the pixel algorithms need 64x64x3 uint8 image observations; got {observation_space} "
            "(use env_config={'from_pixels': True, 'image_size': 64})"
        )
