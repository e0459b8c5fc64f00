"""RLModule of SLAC: the latent model (``models/slac_model.py``), the actor on the history, twin Q on latents.

Legend: B = sequences, T = L + 1 replayed steps, L = ``sequence_length``, F = conv features, Z = z1 + z2,
X = actor input (L*F + (L-1)*A), T2 = twin critics, H, W, C = image (uint8, channels last).

Acting (env runners; inference-only copy = encoder + actor): stateful. ``STATE_IN/OUT`` holds the previous L - 1
frames and the L - 1 actions taken at them; at an episode start (``is_first``) both are reset to copies of the first
frame and zeros (what the TF policy's ``filter_before_first_step`` does to its zero-initialized history). Every step
encodes the L frames with the current encoder, as ``ActorSequencePolicy`` does; exploration samples the actor,
evaluation (``explore=False``) takes tanh of its mean (TF's ``GreedyPolicy``).

Training (``_forward_train``, one pass): the model's ELBO on the first ``model_batch_size`` rows (with gradient);
then, without gradient, the features and posterior latents of every row; the critic on (z_L-1, a_L-1), its TD
target at z_L with a' ~ pi(.|h_L), and the actor's a ~ pi(.|h_L-1) scored by the frozen critic at z_L-1
(``SlacAgent._train``: the last transition of each row; critic and actor inputs stop-gradient, slac.gin).
During the first ``initial_model_train_steps`` updates (``rl_step`` False, set by the learner) only the model part runs.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import torch
from ray.rllib.core.columns import Columns
from ray.rllib.core.learner.utils import make_target_network
from ray.rllib.core.rl_module.apis import InferenceOnlyAPI, QNetAPI, TargetNetworkAPI
from ray.rllib.core.rl_module.torch.torch_rl_module import TorchRLModule
from torch import nn

from smac_rllib.training.fast_update.train_mode import CachedTrainModeMixin
from smac_rllib.objectives.losses import Q_NEXT_TARGET, Q_PI, Q_PRED
from smac_rllib.models.critic import TwinQ, frozen
from smac_rllib.models.slac_model import SequenceActor, SLACModel, SLACModelConfig, actor_input_dim, history_inputs
from smac_rllib.training.checkpoint_names import retired_twins

MODEL_LOSS, MODEL_METRICS = "model_loss", "model_metrics"
LOGP, LOGP_NEXT = "logp_B", "logp_next_B"
REWARD, TERMINATED, VALID = "reward_B", "terminated_B", "valid_B"


class SLACTorchRLModule(CachedTrainModeMixin, TorchRLModule, InferenceOnlyAPI, TargetNetworkAPI, QNetAPI):
    framework = "torch"

    def setup(self):
        cfg = self.model_config
        image_size = _check_spaces(self.observation_space, self.action_space)
        if cfg["torch_num_threads"] and not torch.cuda.is_available():
            torch.set_num_threads(int(cfg["torch_num_threads"]))
        action_dim = int(self.action_space.shape[0])
        self.sequence_length = int(cfg["sequence_length"])
        self.model_batch_size = int(cfg["model_batch_size"])
        self.model = SLACModel(
            action_dim,
            SLACModelConfig(
                base_depth=int(cfg["base_depth"]),
                latent1_size=int(cfg["latent1_size"]),
                latent2_size=int(cfg["latent2_size"]),
                decoder_std=float(cfg["decoder_std"]),
                image_size=image_size,
            ),
        )
        hidden, layers = int(cfg["hidden_dim"]), int(cfg["num_hidden_layers"])
        # pi(a | x_t-L+1:t, a_t-L+1:t-1) on conv features (TF attribute: actor_network); named `policy` for counts.py
        self.policy = SequenceActor(
            actor_input_dim(self.sequence_length, self.model.feature_dim, action_dim), action_dim, hidden, layers
        )
        self.register_buffer("uniform_exploration", torch.tensor(False))  # OffPolicyLoop's uniform warm-up
        self.register_buffer(
            "model_updates_done", torch.tensor(0, dtype=torch.long)
        )  # pretraining progress (checkpointed)
        self.rl_step = True  # set by the learner before each update: False during the model pretraining
        if self.inference_only:
            for name in SLACModel.NON_ACTING:  # runners only encode frames for the actor
                delattr(self.model, name)
        else:
            latent_dim = self.model.latent1_size + self.model.latent2_size
            self.qf = TwinQ(
                latent_dim, action_dim, hidden, layers, nn.ReLU
            )  # Q(z, a), critic_joint_fc_layers (256, 256)
            self.qf.apply(_glorot)
            self.log_alpha = nn.Parameter(torch.tensor(float(cfg["initial_log_alpha"])))

    # --- RLlib APIs -------------------------------------------------------------------------------------
    def get_non_inference_attributes(self) -> list[str]:
        return [f"model.{name}" for name in SLACModel.NON_ACTING] + ["qf", "target_qf", "log_alpha"]

    def make_target_networks(self) -> None:
        self.target_qf = make_target_network(self.qf)

    def get_target_network_pairs(self):
        return [(self.qf, self.target_qf)]

    def forward_target(self, batch: dict[str, Any]) -> dict[str, Any]:
        return {Q_NEXT_TARGET: self.target_qf(batch["z"], batch[Columns.ACTIONS])}

    def compute_q_values(self, batch: dict[str, Any]) -> dict[str, Any]:
        return {Q_PRED: self.qf(batch["z"], batch[Columns.ACTIONS])}

    def get_initial_state(self) -> dict[str, torch.Tensor]:
        L, shape = self.sequence_length, tuple(self.observation_space.shape)
        return {
            "frames": torch.zeros((L - 1, *shape), dtype=torch.uint8),
            "actions": torch.zeros(L - 1, self.policy.action_dim),
        }

    # --- acting -----------------------------------------------------------------------------------------
    def _history(self, batch: dict[str, Any]):
        """(actor input (B, X), the L frames (B, L, H, W, C), the L - 1 previous actions, had a time dim)."""
        obs = batch[Columns.OBS]
        has_time = obs.dim() == 5  # (B, 1, H, W, C) from RLlib's time-rank connector for stateful modules
        obs_B_H_W_C = obs[:, 0] if has_time else obs
        state_in = batch[Columns.STATE_IN]
        frames_B_Lm1 = state_in["frames"].to(obs_B_H_W_C.dtype)
        actions_B_Lm1_A = state_in["actions"].float()
        is_first = batch.get("is_first")
        if is_first is not None:  # a new episode: the history is its first frame repeated, zero actions
            first_B = (is_first[:, 0] if is_first.dim() == 2 else is_first).bool()
            frames_B_Lm1 = torch.where(
                first_B[:, None, None, None, None], obs_B_H_W_C[:, None].expand_as(frames_B_Lm1), frames_B_Lm1
            )
            actions_B_Lm1_A = torch.where(first_B[:, None, None], torch.zeros_like(actions_B_Lm1_A), actions_B_Lm1_A)
        frames_B_L = torch.cat([frames_B_Lm1, obs_B_H_W_C[:, None]], dim=1)
        feat_B_L_F = self.model.encoder(frames_B_L)  # every frame with the current weights, as the TF policy
        input_B_X = torch.cat([feat_B_L_F.flatten(1), actions_B_Lm1_A.flatten(1)], dim=-1)
        return input_B_X, frames_B_L, actions_B_Lm1_A, has_time

    @staticmethod
    def _act_output(action_B_A, frames_B_L, actions_B_Lm1_A, has_time) -> dict[str, Any]:
        state_out = {
            "frames": frames_B_L[:, 1:],
            "actions": torch.cat([actions_B_Lm1_A[:, 1:], action_B_A[:, None]], dim=1),
        }
        return {Columns.ACTIONS: action_B_A.unsqueeze(1) if has_time else action_B_A, Columns.STATE_OUT: state_out}

    @torch.inference_mode()
    def _forward_inference(self, batch: dict[str, Any], **kwargs) -> dict[str, Any]:
        input_B_X, frames, actions, has_time = self._history(batch)
        return self._act_output(self.policy.mean_action(input_B_X), frames, actions, has_time)

    @torch.inference_mode()
    def _forward_exploration(self, batch: dict[str, Any], **kwargs) -> dict[str, Any]:
        input_B_X, frames, actions, has_time = self._history(batch)
        if bool(self.uniform_exploration):
            action_B_A = torch.rand(input_B_X.shape[0], self.policy.action_dim, device=input_B_X.device) * 2 - 1
        else:
            action_B_A = self.policy.sample(input_B_X)[0]  # the TF collect policy samples pi (no extra noise)
        return self._act_output(action_B_A, frames, actions, has_time)

    # --- training ---------------------------------------------------------------------------------------
    def _forward_train(self, batch: dict[str, Any], **kwargs) -> dict[str, Any]:
        device = self.log_alpha.device
        obs_B_T = batch["obs"].to(device)
        action_B_T_A = batch["actions"].to(device=device, dtype=torch.float32)
        reward_B_T = batch["rewards"].to(device=device, dtype=torch.float32)
        is_first_B_T = batch["is_first"].to(device).bool()
        B, T = action_B_T_A.shape[:2]
        Bm = min(self.model_batch_size, B)
        # Model (ELBO) on the first model_batch_size rows (SlacAgent.model_loss: x[:model_batch_size]).
        feat_m = self.model.encoder(obs_B_T[:Bm])
        post_m = self.model.posterior(feat_m, action_B_T_A[:Bm], is_first_B_T[:Bm])
        model_loss, metrics, _ = self.model.loss(
            obs_B_T[:Bm], action_B_T_A[:Bm], reward_B_T[:Bm], is_first_B_T[:Bm], feat_B_T_F=feat_m, post=post_m
        )
        out = {MODEL_LOSS: model_loss, MODEL_METRICS: metrics}
        if not self.rl_step:
            return out
        # Critic and actor inputs of every row, no gradient into the model (slac.gin: *_input_stop_gradient = True).
        feat_B_T_F, z_B_T_Z = feat_m.detach(), post_m.z.detach()
        if Bm < B:
            with torch.no_grad():
                feat_r = self.model.encoder(obs_B_T[Bm:])
                post_r = self.model.posterior(feat_r, action_B_T_A[Bm:], is_first_B_T[Bm:])
            feat_B_T_F, z_B_T_Z = torch.cat([feat_B_T_F, feat_r]), torch.cat([z_B_T_Z, post_r.z])
        L = T - 1
        h_B_X = history_inputs(feat_B_T_F[:, :L], action_B_T_A[:, :L], is_first_B_T[:, :L])  # (x_0:L-1, a_0:L-2)
        h_next_B_X = history_inputs(feat_B_T_F[:, 1:], action_B_T_A[:, 1:], is_first_B_T[:, 1:])  # (x_1:L, a_1:L-1)
        z_B_Z, z_next_B_Z, action_B_A = z_B_T_Z[:, -2], z_B_T_Z[:, -1], action_B_T_A[:, -2]
        out[Q_PRED] = self.qf(z_B_Z, action_B_A)  # (T2, B)
        with torch.no_grad():  # TD target pieces (critic_loss: next actions from the actor, target critics)
            next_action_B_A, out[LOGP_NEXT] = self.policy.sample(h_next_B_X)
            out[Q_NEXT_TARGET] = self.target_qf(z_next_B_Z, next_action_B_A)
        pi_action_B_A, out[LOGP] = self.policy.sample(h_B_X)
        with frozen(self.qf):  # actor_loss: gradients to the actor only
            out[Q_PI] = self.qf(z_B_Z, pi_action_B_A).min(dim=0).values
        out[REWARD] = reward_B_T[:, -1]  # reward of (x_L-1, a_L-1) -> x_L in our replay's convention
        out[TERMINATED] = batch["is_terminated"].to(device)[:, -1].float()
        out[VALID] = (~is_first_B_T[:, -1]).float()  # the TF dataset drops rows whose last transition crosses episodes
        return out


def _glorot(module: nn.Module) -> None:
    if isinstance(module, nn.Linear):
        nn.init.xavier_uniform_(module.weight)
        nn.init.zeros_(module.bias)


def _check_spaces(observation_space: gym.Space, action_space: gym.Space) -> int:
    if not isinstance(action_space, gym.spaces.Box) or len(action_space.shape) != 1:
        raise ValueError(f"SLAC needs a 1-D continuous (Box) action space; got {action_space}")
    shape = tuple(getattr(observation_space, "shape", None) or ())
    if len(shape) != 3 or shape[0] != shape[1] or shape[2] != 3 or shape[0] % 16 or shape[0] < 16:
        raise ValueError(
            f"SLAC needs square RGB image observations with a side divisible by 16; got {observation_space} "
            "(use env_config={'from_pixels': True, 'image_size': 64})"
        )
    return shape[0]


__getattr__ = retired_twins(globals())  # checkpoints written with fast_update: false name "...RLlibPath" classes
