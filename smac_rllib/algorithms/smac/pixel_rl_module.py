"""RLModule of pixel SMAC (Alg. 2): RSSM world model + actor pi(a|s) + twin Q(s, a) on belief features.

Legend: B = batch (sequences), T = time, N = B*T flattened, K1 = K + 1 belief latents (s0 first),
T2 = twin critics, F = feature dim (stoch + deter), A = action dim. H, W, C = 64, 64, 3 (uint8).

Acting (env runners, inference-only copy = encoder + RSSM + actor): the module is stateful; it carries the
posterior (stoch, deter) and the previous action across steps (``STATE_IN``/``STATE_OUT``), resets at episode
start (``is_first``), samples a ~ pi(a|s_t) and adds Gaussian collection noise (reference: 0.3).

Training (``_forward_train``, one pass so DDP sees everything): the world-model ELBO (Eq. 13); the belief
particles of every (b, t) -- s0 = the world model's own posterior sample, s1..sK fresh -- detached, so actor
and critic never train the world model (Alg. 2); the actor's marginal Q over particles (Eq. 9) and the
log-weights of its entropy estimate (Eqs. 6-7); the critic on s0 features; the TD target at t+1 (Eq. 12).
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

from smac_rllib import estimators
from smac_rllib.algorithms.smac.smac_rl_module import (
    ACTION_LOG_STD,
    LOG_W,
    LOG_W_NEXT,
    Q_NEXT_TARGET,
    Q_PI,
    Q_PRED,
    _frozen,
)
from smac_rllib.models.conv import preprocess_image
from smac_rllib.models.critic import TwinQ
from smac_rllib.models.distributions import gaussian_log_prob, tanh_log_det_jacobian
from smac_rllib.models.latent_policy import TanhGaussianHead, own_first_log_w, sample_given_params
from smac_rllib.models.world_model import WorldModel, WorldModelConfig

WM_LOSS = "world_model_loss"
WM_METRICS = "world_model_metrics"
REWARD_NEXT = "reward_next_N"
TERMINATED_NEXT = "terminated_next_N"
PARTICLE_SPREAD = "particle_feat_std"


class SMACPixelTorchRLModule(TorchRLModule, InferenceOnlyAPI, TargetNetworkAPI, QNetAPI):
    framework = "torch"

    def setup(self):
        cfg = self.model_config
        _check_pixel_spaces(self.observation_space, self.action_space)
        if cfg.get("torch_num_threads") and not torch.cuda.is_available():
            torch.set_num_threads(int(cfg["torch_num_threads"]))
        action_dim = int(self.action_space.shape[0])
        self.num_particles = int(cfg.get("num_particles", 32))
        self.particle_mode = cfg.get("particle_mode", "history")
        self.action_noise = float(cfg.get("action_noise", 0.3))
        self.critic_particles = cfg.get("critic_particles", "all")
        self.td_entropy = cfg.get("td_entropy", "conditional")
        self.autocast_dtype = resolve_autocast(cfg.get("autocast", "auto"))
        self.world_model = WorldModel(action_dim, WorldModelConfig.preset(cfg.get("world_model_preset", "paper")))
        if self.inference_only:  # env runners filter beliefs and act: no decoder, no reward head
            del self.world_model.decoder, self.world_model.reward_head  # (RLlib cannot delete nested attributes)
        feat_dim, hidden = self.world_model.feat_dim, int(cfg.get("pixel_hidden_dim", 300))
        self.actor = TanhGaussianHead(
            feat_dim, action_dim, hidden, int(cfg.get("actor_layers", 4)), nn.ELU, head=cfg.get("pixel_actor_head", "dreamer")
        )  # pi(a|s); "dreamer" = the reference's ActionDecoder (visual_control/network.py:254)
        # True only while the driver samples the uniform warm-up (OffPolicyLoop._sample_warm_up), on env runners.
        self.register_buffer("uniform_exploration", torch.tensor(False))
        if not self.inference_only:
            self.qf = TwinQ(feat_dim, action_dim, hidden, int(cfg.get("critic_layers", 3)), nn.ELU)  # Q(s, a), Eq. (12)
            self.log_alpha = nn.Parameter(torch.tensor(float(cfg.get("initial_log_alpha", 0.0))))

    # --- RLlib APIs -------------------------------------------------------------------------------------
    def get_non_inference_attributes(self) -> list[str]:
        return ["world_model.decoder", "world_model.reward_head", "qf", "target_qf", "log_alpha"]

    def make_target_networks(self) -> None:
        self.target_qf = make_target_network(self.qf)

    def get_target_network_pairs(self):
        return [(self.qf, self.target_qf)]

    def forward_target(self, batch: dict[str, Any]) -> dict[str, Any]:
        return {Q_NEXT_TARGET: self.target_qf(batch["feat"], batch[Columns.ACTIONS])}

    def compute_q_values(self, batch: dict[str, Any]) -> dict[str, Any]:
        return {Q_PRED: self.qf(batch["feat"], batch[Columns.ACTIONS])}

    def get_initial_state(self) -> dict[str, torch.Tensor]:
        rssm = self.world_model.rssm
        return {
            "stoch": torch.zeros(rssm.stoch_size),
            "deter": torch.zeros(rssm.deter_size),
            "prev_action": torch.zeros(self.actor.action_dim),
        }

    # --- acting -----------------------------------------------------------------------------------------
    def _filter_step(self, batch: dict[str, Any]) -> tuple[torch.Tensor, dict, bool]:
        """One RSSM posterior step per env: (posterior, had_time_dim)."""
        obs = batch[Columns.OBS]
        has_time = obs.dim() == 5  # (B, T=1, H, W, C) from RLlib's time-rank connector for stateful modules
        obs_B_H_W_C = obs[:, 0] if has_time else obs
        state_in = batch[Columns.STATE_IN]
        is_first = batch.get("is_first")
        is_first_B = None if is_first is None else (is_first[:, 0] if is_first.dim() == 2 else is_first)
        rssm = self.world_model.rssm
        prev = {"stoch": state_in["stoch"], "deter": state_in["deter"]}
        prev["mean"], prev["std"] = torch.zeros_like(prev["stoch"]), torch.zeros_like(prev["stoch"])
        embed_B_E = self.world_model.encoder(preprocess_image(obs_B_H_W_C, prev["deter"].device))
        post, _ = rssm.obs_step(prev, state_in["prev_action"], embed_B_E, is_first_B)  # resets where is_first
        return post, has_time

    def _act_output(self, post: dict, action_B_A: torch.Tensor, has_time: bool) -> dict[str, Any]:
        state_out = {"stoch": post["stoch"], "deter": post["deter"], "prev_action": action_B_A}
        return {Columns.ACTIONS: action_B_A.unsqueeze(1) if has_time else action_B_A, Columns.STATE_OUT: state_out}

    def _forward_inference(self, batch: dict[str, Any], **kwargs) -> dict[str, Any]:
        """Deterministic evaluation: the posterior-mean belief (acted on AND carried to the next step), tanh(mean)."""
        post, has_time = self._filter_step(batch)
        post = dict(post, stoch=post["mean"])  # no sampled latent anywhere: the whole episode is deterministic
        feat_B_F = self.world_model.rssm.get_feat(post)
        return self._act_output(post, self.actor.mean_action(feat_B_F), has_time)

    def _forward_exploration(self, batch: dict[str, Any], **kwargs) -> dict[str, Any]:
        post, has_time = self._filter_step(batch)
        feat_B_F = self.world_model.rssm.get_feat(post)
        if bool(self.uniform_exploration):
            action_B_A = torch.rand(feat_B_F.shape[0], self.actor.action_dim, device=feat_B_F.device) * 2 - 1
        else:
            action_B_A = self.actor.sample_given_latents(feat_B_F.unsqueeze(0)).action_B_A
            action_B_A = (action_B_A + self.action_noise * torch.randn_like(action_B_A)).clamp(-1.0, 1.0)
        return self._act_output(post, action_B_A, has_time)

    # --- training ---------------------------------------------------------------------------------------
    def _forward_train(self, batch: dict[str, Any], **kwargs) -> dict[str, Any]:
        device = self.log_alpha.device
        action_B_T_A = batch[Columns.ACTIONS].to(device=device, dtype=torch.float32)  # a_t, taken at x_t
        is_first_B_T = batch["is_first"].to(device)
        prev_action_B_T_A = torch.cat([torch.zeros_like(action_B_T_A[:, :1]), action_B_T_A[:, :-1]], dim=1)
        with self._autocast(device):  # the world model and the particle re-filter (reference smac.py:104, 213)
            wm_loss, wm_metrics, wm = self.world_model.loss(
                batch[Columns.OBS], prev_action_B_T_A, batch[Columns.REWARDS].to(device, torch.float32), is_first_B_T
            )  # Eq. (13)
            latent_K1_B_T_F = self._belief_particles(wm, prev_action_B_T_A, is_first_B_T)  # detached (Alg. 2)
        out = {WM_LOSS: wm_loss.float(), WM_METRICS: wm_metrics}
        K1, B, T = latent_K1_B_T_F.shape[0], *action_B_T_A.shape[:2]
        latent_K1_B_T_F = latent_K1_B_T_F.float()
        latent_K1_N_F = latent_K1_B_T_F.reshape(K1, B * T, -1)
        out[PARTICLE_SPREAD] = latent_K1_N_F.std(dim=0).mean() if K1 > 1 else torch.zeros((), device=device)

        # Actor (trains pi only): a ~ pi(.|s0); log pi(a|s_k) for the entropy; marginal Q over the particles.
        mean_K1_N_A, log_std_K1_N_A = self.actor.params(latent_K1_N_F)  # every latent, one pass
        sample = sample_given_params(mean_K1_N_A, log_std_K1_N_A)
        out[LOG_W], out[ACTION_LOG_STD] = sample.log_w_K1_B, sample.action_log_std_B_A
        with _frozen(self.qf):
            action_K1_N_A = sample.action_B_A.unsqueeze(0).expand(K1, -1, -1)
            q_K1_N = self.qf(latent_K1_N_F, action_K1_N_A).min(dim=0).values
            out[Q_PI] = estimators.marginal_q(q_K1_N)  # Eq. (9), min then logsumexp (reference qagg=lse, aggfirst=False)

        # Critic on the replayed (x_t, a_t) at R latents: all K+1 particles (reference smac.py:156) or s0 only.
        R = K1 if self.critic_particles == "all" else 1
        valid_B_Tm1 = ~is_first_B_T[:, 1:].bool()  # x_{t+1} continues x_t's episode (rows concatenate episodes)
        q_pred_T2_R_B_T = self.qf(latent_K1_B_T_F[:R], action_B_T_A.expand(R, -1, -1, -1))
        out[Q_PRED] = q_pred_T2_R_B_T[..., :-1][:, :, valid_B_Tm1]  # (T2, R, M)
        # TD target at t+1 (Eq. 12): each latent row r acts a' ~ pi(.|s_r,t+1) (reference smac.py:149-153).
        with torch.no_grad():
            mean_R_B_T_A = mean_K1_N_A[:R].detach().reshape(R, B, T, -1)
            log_std_R_B_T_A = log_std_K1_N_A[:R].detach().reshape(R, B, T, -1)
            if R == 1:  # s0: reuse the actor's a ~ pi(.|s0) at t+1 and its K+1 log-weights
                next_action_R_B_T_A = sample.action_B_A.detach().reshape(1, B, T, -1)
                log_w_K1_R_B_T = sample.log_w_K1_B.detach().reshape(K1, 1, B, T)
            elif self.td_entropy == "conditional":  # only -log pi(a'_r | s_r) is needed
                next_action_R_B_T_A, log_w_K1_R_B_T = _own_action_log_w(mean_R_B_T_A, log_std_R_B_T_A)
            else:  # every particle's own marginal estimate: K+1 log-weights per particle, own latent first
                next_action_R_B_T_A, log_w_K1_R_B_T = own_first_log_w(mean_R_B_T_A, log_std_R_B_T_A)
            if self.td_entropy == "conditional":
                log_w_K1_R_B_T = log_w_K1_R_B_T[:1]
            q_next_T2_R_B_T = self.target_qf(latent_K1_B_T_F[:R], next_action_R_B_T_A)
            out[Q_NEXT_TARGET] = q_next_T2_R_B_T[..., 1:][:, :, valid_B_Tm1]  # (T2, R, M)
            out[LOG_W_NEXT] = log_w_K1_R_B_T[..., 1:][:, :, valid_B_Tm1]  # (K+1 or 1, R, M)
            out[REWARD_NEXT] = batch[Columns.REWARDS].to(device, torch.float32)[:, 1:][valid_B_Tm1]
            out[TERMINATED_NEXT] = batch["is_terminated"].to(device)[:, 1:][valid_B_Tm1]
        return out

    def _autocast(self, device: torch.device):
        return torch.autocast(device.type, dtype=self.autocast_dtype or torch.bfloat16, enabled=self.autocast_dtype is not None)

    def _belief_particles(self, wm, prev_action_B_T_A, is_first_B_T) -> torch.Tensor:
        """(K+1, B, T, F) detached belief features: s0 = the world model's posterior sample, then K particles.

        "history": K independent posterior trajectories filtered over the whole sequence (reference code);
        "step": K samples of s_t ~ q(s_t | h_t) around the shared deterministic path (cheap).
        """
        feat0_1_B_T_F = wm.feat_B_T_F.detach().unsqueeze(0)
        K = self.num_particles
        if K == 0:
            return feat0_1_B_T_F  # Latent-SAC: one belief sample, no particle cost
        rssm = self.world_model.rssm
        with torch.no_grad():
            if self.particle_mode == "history":
                post_K = rssm.observe_particles(wm.embed_B_T_E.detach(), prev_action_B_T_A, is_first_B_T, K)
                feat_K_B_T_F = rssm.get_feat(post_K)
            else:
                post = {k: v.detach() for k, v in wm.post.items()}
                stoch_K_B_T_S = rssm.sample_stoch_particles(post, K)
                feat_K_B_T_F = rssm.get_feat({"stoch": stoch_K_B_T_S, "deter": post["deter"]})
        return torch.cat([feat0_1_B_T_F, feat_K_B_T_F.to(feat0_1_B_T_F.dtype)], dim=0)


def resolve_autocast(setting: str | None) -> torch.dtype | None:
    """``autocast`` setting -> dtype: "auto" = bf16 on a CUDA learner, fp32 (None) on CPU; "bf16"/"fp16"; None/"off"."""
    if setting == "auto":
        return torch.bfloat16 if torch.cuda.is_available() else None
    return {"bf16": torch.bfloat16, "fp16": torch.float16}.get(setting or "", None)


def _own_action_log_w(mean_R_B_T_A: torch.Tensor, log_std_R_B_T_A: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """a'_r ~ pi(.|s_r) for every latent row r, and log pi(a'_r | s_r): (R, B, T, A), (1, R, B, T)."""
    u_R_B_T_A = mean_R_B_T_A + log_std_R_B_T_A.exp() * torch.randn_like(mean_R_B_T_A)
    log_w_R_B_T = gaussian_log_prob(u_R_B_T_A, mean_R_B_T_A, log_std_R_B_T_A) - tanh_log_det_jacobian(u_R_B_T_A)
    return torch.tanh(u_R_B_T_A), log_w_R_B_T.unsqueeze(0)


def _check_pixel_spaces(observation_space: gym.Space, action_space: gym.Space) -> None:
    if not isinstance(action_space, gym.spaces.Box) or len(action_space.shape) != 1:
        raise ValueError(f"SMAC needs a 1-D continuous (Box) action space; got {action_space}")
    shape = getattr(observation_space, "shape", None)
    if not isinstance(observation_space, gym.spaces.Box) or shape is None or tuple(shape) != (64, 64, 3):
        raise ValueError(
            f"pixel SMAC needs 64x64x3 uint8 image observations; got {observation_space} "
            "(use env_config={'from_pixels': True, 'image_size': 64})"
        )
