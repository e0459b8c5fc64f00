"""The training forward pass of pixel SMAC (Alg. 2) as pure torch, no ray import: what ``PixelUpdate.step``
(pixel_update.py) and the pixel RLModule run.

Legend: B = batch (sequences), T = time, N = B*T flattened, K1 = K + 1 belief latents (s0 first), R = latent rows
the critic is trained on (K1 or 1), Tm1 = T-1 transitions (t, t+1) per row (masked where t+1 starts an episode), T2 =
twin critics, F = feature dim (stoch + deter), A = action dim. Frames are uint8 (B, T, 64, 64, 3).

``forward_train``: the world-model ELBO (Eq. 13) and the belief particles -- s0 = the world model's posterior
sample, K more posterior trajectories re-filtered over the sequence (reference ``visual_control/smac.py:205-249``)
-- under autocast; then, on the detached particles, the actor's a ~ pi(.|s0) with its K+1 log-weights and the
marginal Q (Eq. 9); the critic on R latent rows and, per row, a' ~ pi(.|s_{r,t+1}) for the TD target (Eq. 12;
reference ``smac.py:147-158``). The losses from these outputs:
``smac_rllib.objectives.losses.soft_actor_critic_losses``.
"""

from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass

import torch
from torch import nn

from smac_rllib.core import estimators
from smac_rllib.core.distributions import gaussian_log_prob, tanh_log_det_jacobian
from smac_rllib.models.critic import TwinQ, frozen
from smac_rllib.models.latent_policy import TanhGaussianHead, own_first_log_w, sample_given_params
from smac_rllib.models.world_model import WorldModel, WorldModelConfig
from smac_rllib.objectives.losses import ACTION_LOG_STD, LOG_W, LOG_W_NEXT, Q_NEXT_TARGET, Q_PI, Q_PRED, VALID_NEXT

WM_LOSS = "world_model_loss"
WM_METRICS = "world_model_metrics"
REWARD_NEXT = "reward_next_N"
TERMINATED_NEXT = "terminated_next_N"
PARTICLE_SPREAD = "particle_feat_std"
BATCH_KEYS = ("obs", "actions", "rewards", "is_first", "is_terminated")  # RLlib's Columns values, B x T each


@dataclass(frozen=True)
class PixelSettings:
    """What the training forward pass needs to know: the config fields of the same names, read from the module's
    ``model_config`` (their defaults and meanings are the config's field table, ``algorithms/smac/smac_fields.py``)."""

    num_particles: int
    particle_mode: str  # "history" (reference) | "step"
    critic_particles: str  # "all" (reference) | "s0"
    td_entropy: str  # "conditional" (Eq. 12, reference) | "marginal"
    autocast: str | None  # "auto" (bf16 on a CUDA learner, fp32 on CPU) | "bf16" | "fp16" | None/"off"
    particle_stream: bool = True  # CUDA, "history": the particle re-filter on a side stream, overlapping the ELBO pass

    @classmethod
    def from_model_config(cls, cfg, **overrides) -> "PixelSettings":
        """From a pixel SMAC module's ``model_config`` (``SMACConfig.model_config``), with ``overrides``."""
        return cls(
            **{
                "num_particles": int(cfg["num_particles"]),
                "particle_mode": cfg["particle_mode"],
                "critic_particles": cfg["critic_particles"],
                "td_entropy": cfg["td_entropy"],
                "autocast": cfg["autocast"],
            }
            | overrides
        )


def resolve_autocast(setting: str | None, device: torch.device) -> torch.dtype | None:
    """``autocast`` setting -> dtype on ``device``: "auto" = bf16 on a CUDA device, fp32 (None) on CPU."""
    if setting == "auto":
        return torch.bfloat16 if device.type == "cuda" else None
    return {"bf16": torch.bfloat16, "fp16": torch.float16}.get(setting or "", None)


def build_nets(action_dim: int, cfg, *, critic: bool = True, inference_only: bool = False):
    """(world_model, actor, qf or None) of a module's ``model_config`` (its ``world_model_preset``,
    ``pixel_hidden_dim``, ``actor_layers``, ``pixel_actor_head`` and, with ``critic``, ``critic_layers``): the
    reference's sizes at the defaults (visual_control/smac.py:36-53). No critic on env runners (``inference_only``)."""
    world_model = WorldModel(action_dim, WorldModelConfig.preset(cfg["world_model_preset"]))
    if inference_only:  # env runners filter beliefs and act: no decoder, no reward head
        del world_model.decoder, world_model.reward_head
    else:  # frames arrive channels-last (B, T, 64, 64, 3): conv weights in the same layout spare oneDNN / cuDNN a
        # conversion per call (identical outputs; CPU, small preset, 512 frames: encoder + decoder forward and backward
        # 0.40 -> 0.35 s, benchmarks/results/pixel_update_speed/); env runners do the same (belief_actor_module.py)
        world_model.encoder.to(memory_format=torch.channels_last)
        world_model.decoder.to(memory_format=torch.channels_last)
    feat_dim, width = world_model.feat_dim, int(cfg["pixel_hidden_dim"])
    actor = TanhGaussianHead(
        feat_dim, action_dim, width, int(cfg["actor_layers"]), nn.ELU, head=cfg["pixel_actor_head"]
    )  # pi(a|s)
    qf = None
    if critic and not inference_only:
        qf = TwinQ(feat_dim, action_dim, width, int(cfg["critic_layers"]), nn.ELU)  # Q(s, a), Eq. (12)
    return world_model, actor, qf


_CACHE_OFF = contextvars.ContextVar("smac_autocast_cache_off", default=False)


@contextlib.contextmanager
def autocast_cache_off():
    """Within: ``autocast`` keeps no weight-cast cache. ``GraphedUpdate`` wraps its warm-up and its capture in it, so
    both run the same (a capture must not keep cached casts beyond itself, and a compiled region guarded on the
    cache flag must not recompile inside the capture)."""
    token = _CACHE_OFF.set(True)
    try:
        yield
    finally:
        _CACHE_OFF.reset(token)


def autocast(device: torch.device, dtype: torch.dtype | None, *, cache: bool = True):
    """torch.autocast; its weight-cast cache off when ``cache`` is False (the particle side stream: the cache is per
    thread, not per stream, so a cast made on one stream would be read unsynchronised on the other), inside
    ``autocast_cache_off`` and while a CUDA graph is being captured."""
    capturing = device.type == "cuda" and torch.cuda.is_current_stream_capturing()
    cache = cache and not capturing and not _CACHE_OFF.get()
    return torch.autocast(device.type, dtype=dtype or torch.bfloat16, enabled=dtype is not None, cache_enabled=cache)


@dataclass
class UpdateNoise:
    """Every standard normal draw of one training forward pass, drawn up front (one ``randn`` per buffer, instead of one
    per RSSM step): the eager, captured and compiled updates can then be compared on identical inputs, and a CUDA graph
    captures five launches that draw fresh numbers at each replay. Legend as in the module doc; KB = K*B,
    particle-major.
    """

    posterior_B_T_S: torch.Tensor  # the world model's posterior samples s_t ~ q(s_t | h_t)
    particles: torch.Tensor | None  # "history": (KB, T, S) re-filter draws; "step": (K, B, T, S); None for K = 0
    actor_N_A: torch.Tensor  # u ~ pi(.|s0) for every (b, t)
    next_action_R_B_T_A: (
        torch.Tensor | None
    )  # a' ~ pi(.|s_r,t+1) per latent row (critic_particles="all"); None for R = 1

    @classmethod
    def draw(
        cls, settings: PixelSettings, batch_B: int, length_T: int, stoch_S: int, action_A: int, device: torch.device
    ) -> "UpdateNoise":
        K, B, T = settings.num_particles, batch_B, length_T
        randn = lambda *shape: torch.randn(*shape, device=device)  # noqa: E731
        particles = (
            None
            if K == 0
            else randn(K * B, T, stoch_S)
            if settings.particle_mode == "history"
            else randn(K, B, T, stoch_S)
        )
        R = K + 1 if settings.critic_particles == "all" else 1
        return cls(randn(B, T, stoch_S), particles, randn(B * T, action_A), randn(R, B, T, action_A) if R > 1 else None)

    def tensors(self) -> list[torch.Tensor]:
        return [
            t for t in (self.posterior_B_T_S, self.particles, self.actor_N_A, self.next_action_R_B_T_A) if t is not None
        ]


def forward_train(
    batch: dict,
    *,
    world_model: WorldModel,
    actor: TanhGaussianHead,
    qf: TwinQ,
    target_qf: TwinQ,
    settings: PixelSettings,
    device: torch.device,
    noise: UpdateNoise | None = None,
) -> dict:
    """The training forward pass of pixel SMAC: every loss input, one pass (DDP sees everything). See the module doc.

    Sync-free (no host read of a device value, no data-dependent shape): the transitions (t, t+1) that cross an episode
    seam stay in the (B, T-1) grids and are masked out by ``VALID_NEXT`` in the losses
    (``smac_rllib.objectives.losses``). ``noise``: the draws (default: ``UpdateNoise.draw``)."""
    action_B_T_A = batch["actions"].to(device=device, dtype=torch.float32)  # a_t, taken at x_t
    is_first_B_T = batch["is_first"].to(device)
    B, T, A = action_B_T_A.shape
    if noise is None:
        noise = UpdateNoise.draw(settings, B, T, world_model.rssm.stoch_size, A, device)
    prev_action_B_T_A = torch.cat([torch.zeros_like(action_B_T_A[:, :1]), action_B_T_A[:, :-1]], dim=1)
    side = _particle_stream(settings, device)
    # the world model and the particle re-filter under autocast (reference smac.py:104, 213);
    # no cast cache across streams
    with autocast(device, resolve_autocast(settings.autocast, device), cache=side is None):
        image_and_embed = world_model.embed(batch["obs"])
        if side is not None:  # docs/design.md §10: the K*B re-filter needs only the detached embeddings, so it runs
            # beside the world model's own observe loop and decoder (two chains of ~T launches each; inside a CUDA
            # graph the fork / join is captured as two parallel branches)
            side.wait_stream(torch.cuda.current_stream(device))
            with torch.cuda.stream(side):
                particles_K_B_T_F = _history_particles(
                    world_model, image_and_embed[1], prev_action_B_T_A, is_first_B_T, settings, noise.particles
                )
        wm_loss, wm_metrics, wm = world_model.loss(
            batch["obs"],
            prev_action_B_T_A,
            batch["rewards"].to(device, torch.float32),
            is_first_B_T,
            noise_B_T_S=noise.posterior_B_T_S,
            image_and_embed=image_and_embed,
        )  # Eq. (13)
        if side is not None:
            torch.cuda.current_stream(device).wait_stream(side)
            particles_K_B_T_F.record_stream(torch.cuda.current_stream(device))  # made on the side stream, used here
            latent_K1_B_T_F = torch.cat(
                [wm.feat_B_T_F.detach().unsqueeze(0), particles_K_B_T_F.to(wm.feat_B_T_F.dtype)]
            )
        else:
            latent_K1_B_T_F = belief_particles(
                world_model, wm, prev_action_B_T_A, is_first_B_T, settings, noise.particles
            )  # detached (Alg. 2)
    out = {WM_LOSS: wm_loss.float(), WM_METRICS: wm_metrics}
    K1 = latent_K1_B_T_F.shape[0]
    latent_K1_B_T_F = latent_K1_B_T_F.float()
    latent_K1_N_F = latent_K1_B_T_F.reshape(K1, B * T, -1)
    out[PARTICLE_SPREAD] = latent_K1_N_F.std(dim=0).mean() if K1 > 1 else torch.zeros((), device=device)

    # Actor (trains pi only): a ~ pi(.|s0); log pi(a|s_k) for the entropy; marginal Q over the particles.
    mean_K1_N_A, log_std_K1_N_A = actor.params(latent_K1_N_F)  # every latent, one pass
    sample = sample_given_params(mean_K1_N_A, log_std_K1_N_A, noise_B_A=noise.actor_N_A)
    out[LOG_W], out[ACTION_LOG_STD] = sample.log_w_K1_B, sample.action_log_std_B_A
    with frozen(qf):
        action_K1_N_A = sample.action_B_A.unsqueeze(0).expand(K1, -1, -1)
        q_K1_N = qf(latent_K1_N_F, action_K1_N_A).min(dim=0).values
        out[Q_PI] = estimators.marginal_q(q_K1_N)  # Eq. (9), min then logsumexp (reference qagg=lse, aggfirst=False)

    # Critic on the replayed (x_t, a_t) at R latents: all K+1 particles (reference smac.py:156) or s0 only.
    R = K1 if settings.critic_particles == "all" else 1
    out[VALID_NEXT] = ~is_first_B_T[
        :, 1:
    ].bool()  # (B, T-1): x_{t+1} continues x_t's episode (rows concatenate episodes)
    q_pred_T2_R_B_T = qf(latent_K1_B_T_F[:R], action_B_T_A.expand(R, -1, -1, -1))
    out[Q_PRED] = q_pred_T2_R_B_T[..., :-1]  # (T2, R, B, T-1)
    # TD target at t+1 (Eq. 12): each latent row r acts a' ~ pi(.|s_r,t+1) (reference smac.py:149-153).
    with torch.no_grad():
        mean_R_B_T_A = mean_K1_N_A[:R].detach().reshape(R, B, T, -1)
        log_std_R_B_T_A = log_std_K1_N_A[:R].detach().reshape(R, B, T, -1)
        if R == 1:  # s0: reuse the actor's a ~ pi(.|s0) at t+1 and its K+1 log-weights
            next_action_R_B_T_A = sample.action_B_A.detach().reshape(1, B, T, -1)
            log_w_K1_R_B_T = sample.log_w_K1_B.detach().reshape(K1, 1, B, T)
        elif settings.td_entropy == "conditional":  # only -log pi(a'_r | s_r) is needed
            next_action_R_B_T_A, log_w_K1_R_B_T = _own_action_log_w(
                mean_R_B_T_A, log_std_R_B_T_A, noise.next_action_R_B_T_A
            )
        else:  # every particle's own marginal estimate: K+1 log-weights per particle, own latent first
            next_action_R_B_T_A, log_w_K1_R_B_T = own_first_log_w(
                mean_R_B_T_A, log_std_R_B_T_A, noise.next_action_R_B_T_A
            )
        if settings.td_entropy == "conditional":
            log_w_K1_R_B_T = log_w_K1_R_B_T[:1]
        q_next_T2_R_B_T = target_qf(latent_K1_B_T_F[:R], next_action_R_B_T_A)
        out[Q_NEXT_TARGET] = q_next_T2_R_B_T[..., 1:]  # (T2, R, B, T-1)
        out[LOG_W_NEXT] = log_w_K1_R_B_T[..., 1:]  # (K+1 or 1, R, B, T-1)
        out[REWARD_NEXT] = batch["rewards"].to(device, torch.float32)[:, 1:]  # (B, T-1)
        out[TERMINATED_NEXT] = batch["is_terminated"].to(device)[:, 1:]
    return out


def belief_particles(
    world_model: WorldModel,
    wm,
    prev_action_B_T_A,
    is_first_B_T,
    settings: PixelSettings,
    noise: torch.Tensor | None = None,
) -> torch.Tensor:
    """(K+1, B, T, F) detached belief features: s0 = the world model's posterior sample, then K particles.

    "history": K independent posterior trajectories filtered over the whole sequence (reference code);
    "step": K samples of s_t ~ q(s_t | h_t) around the shared deterministic path (cheap).
    ``noise``: ``UpdateNoise.particles`` (default: drawn here).
    """
    feat0_1_B_T_F = wm.feat_B_T_F.detach().unsqueeze(0)
    K = settings.num_particles
    if K == 0:
        return feat0_1_B_T_F  # Latent-SAC: one belief sample, no particle cost
    rssm = world_model.rssm
    with torch.no_grad():
        if settings.particle_mode == "history":
            feat_K_B_T_F = _history_particles(
                world_model, wm.embed_B_T_E, prev_action_B_T_A, is_first_B_T, settings, noise
            )
        else:
            post = {k: v.detach() for k, v in wm.post.items()}
            stoch_K_B_T_S = rssm.sample_stoch_particles(post, K, noise_K_B_T_S=noise)
            feat_K_B_T_F = rssm.get_feat({"stoch": stoch_K_B_T_S, "deter": post["deter"]})
    return torch.cat([feat0_1_B_T_F, feat_K_B_T_F.to(feat0_1_B_T_F.dtype)], dim=0)


def _history_particles(
    world_model: WorldModel,
    embed_B_T_E,
    prev_action_B_T_A,
    is_first_B_T,
    settings: PixelSettings,
    noise: torch.Tensor | None,
) -> torch.Tensor:
    """(K, B, T, F) detached features of K posterior trajectories re-filtered over the sequence (reference
    smac.py:205-249)."""
    rssm = world_model.rssm
    with torch.no_grad():
        post_K = rssm.observe_particles(
            embed_B_T_E.detach(), prev_action_B_T_A, is_first_B_T, settings.num_particles, noise_KB_T_S=noise
        )
        return rssm.get_feat(post_K)


_SIDE_STREAMS: dict = {}


def _particle_stream(settings: PixelSettings, device: torch.device):
    """The side CUDA stream of the particle re-filter (one per device), or None (CPU, K = 0, "step", switched off)."""
    if (
        device.type != "cuda"
        or not settings.particle_stream
        or settings.num_particles == 0
        or settings.particle_mode != "history"
    ):
        return None
    if device not in _SIDE_STREAMS:
        _SIDE_STREAMS[device] = torch.cuda.Stream(device)
    return _SIDE_STREAMS[device]


def _own_action_log_w(
    mean_R_B_T_A: torch.Tensor, log_std_R_B_T_A: torch.Tensor, noise_R_B_T_A: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """a'_r ~ pi(.|s_r) for every latent row r, and log pi(a'_r | s_r): (R, B, T, A), (1, R, B, T)."""
    if noise_R_B_T_A is None:
        noise_R_B_T_A = torch.randn_like(mean_R_B_T_A)
    u_R_B_T_A = mean_R_B_T_A + log_std_R_B_T_A.exp() * noise_R_B_T_A
    log_w_R_B_T = gaussian_log_prob(u_R_B_T_A, mean_R_B_T_A, log_std_R_B_T_A) - tanh_log_det_jacobian(u_R_B_T_A)
    return torch.tanh(u_R_B_T_A), log_w_R_B_T.unsqueeze(0)
