"""One pixel SMAC update (Alg. 2) as pure torch, no ray import: ``PixelUpdate.step`` is what the pixel learner runs
(eagerly, or captured in one CUDA graph): the training forward (``pixel_forward.py``), the losses (Eqs. 7, 9-13),
and the shared tail (``update_step.backward_and_step``). The forward pass's names are re-exported here.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import torch
from torch import nn

from smac_rllib.core.optim import adam
from smac_rllib.objectives import losses
from smac_rllib.objectives.pixel_forward import (
    WM_LOSS,
    WM_METRICS,
    REWARD_NEXT,
    TERMINATED_NEXT,
    PARTICLE_SPREAD,
    BATCH_KEYS,
    PixelSettings,
    resolve_autocast,
    build_nets,
    _CACHE_OFF,
    autocast_cache_off,
    autocast,
    UpdateNoise,
    forward_train,
    belief_particles,
    _history_particles,
    _particle_stream,
    _own_action_log_w,
)
from smac_rllib.objectives.update_step import TOTAL_LOSS, backward_and_step

__all__ = [
    "WM_LOSS",
    "WM_METRICS",
    "REWARD_NEXT",
    "TERMINATED_NEXT",
    "PARTICLE_SPREAD",
    "BATCH_KEYS",
    "PixelSettings",
    "resolve_autocast",
    "build_nets",
    "_CACHE_OFF",
    "autocast_cache_off",
    "autocast",
    "UpdateNoise",
    "forward_train",
    "belief_particles",
    "_history_particles",
    "_particle_stream",
    "_own_action_log_w",
    "OptimSettings",
    "PixelUpdate",
]


# --------------------------------------------------------------------------------- a whole update, no RLlib
@dataclass(frozen=True)
class OptimSettings:
    """The optimizers' config fields (defaults and meanings: the config's field table; built by ``from_config``)."""

    world_model_lr: float
    actor_lr: float
    critic_lr: float
    alpha_lr: float
    grad_clip: float  # global norm per optimizer, alpha excluded (reference smac.py:166-168)
    tau: float
    gamma: float

    @classmethod
    def from_fields(cls, fields) -> "OptimSettings":
        """From a config's fields (a mapping): its ``grad_clip`` where set (RLlib's field), else ``pixel_grad_clip``
        (the reference's 100)."""
        clip = fields["grad_clip"] if fields.get("grad_clip") is not None else fields["pixel_grad_clip"]
        names = ("world_model_lr", "actor_lr", "critic_lr", "alpha_lr", "tau", "gamma")
        return cls(**{name: fields[name] for name in names}, grad_clip=clip or 0.0)

    @classmethod
    def from_config(cls, config) -> "OptimSettings":
        names = ("world_model_lr", "actor_lr", "critic_lr", "alpha_lr", "tau", "gamma", "grad_clip", "pixel_grad_clip")
        return cls.from_fields({name: getattr(config, name) for name in names})


class PixelUpdate(nn.Module):
    """Pixel SMAC's one update (Alg. 2), pure torch: forward (Eq. 13 + particles), losses (Eqs. 7, 9, 10-12), one
    backward, per-optimizer clipping, Adam steps, Polyak target update. ``SMACPixelTorchLearner`` runs it over its own
    module and optimizers (``sharing``), eagerly or captured in one CUDA graph.

    ``step`` returns the metrics as 0-d tensors on the device (no host synchronisation per update).
    """

    def __init__(
        self,
        world_model,
        actor,
        qf,
        log_alpha: float | torch.Tensor,
        *,
        settings: PixelSettings,
        objective: losses.ObjectiveSettings,
        optim: OptimSettings,
        target_entropy: float | None = None,
    ):
        super().__init__()
        self.world_model, self.actor, self.qf = world_model, actor, qf
        self.target_qf = copy.deepcopy(qf).requires_grad_(False)
        self.log_alpha = nn.Parameter(torch.as_tensor(log_alpha, dtype=torch.float32).clone().detach())
        self.settings, self.objective, self.optim = settings, objective, optim
        self.target_entropy = -float(actor.action_dim) if target_entropy is None else target_entropy  # -|A|
        groups = {
            "world_model": (world_model, optim.world_model_lr),
            "critic": (qf, optim.critic_lr),
            "actor": (actor, optim.actor_lr),
        }
        self.optimizers = {name: adam(module.parameters(), lr=lr) for name, (module, lr) in groups.items()}
        self.optimizers["alpha"] = adam(
            [self.log_alpha], lr=optim.alpha_lr
        )  # the learner's Adam (smac_rllib/core/optim.py)
        self.scaler = None  # fp16: a GradScaler, made on the first step's device

    @classmethod
    def from_fields(cls, fields, action_dim: int, **settings) -> "PixelUpdate":
        """A fresh update at a pixel SMAC config's settings: ``fields`` is its ``resolved_fields()`` or, where ray is
        absent, ``training/fields.py: resolved_defaults(smac_fields._FIELDS, pixels=True, ...)``; ``settings`` override
        ``PixelSettings`` fields (e.g. ``particle_stream``). For tests and benchmarks."""
        world_model, actor, qf = build_nets(action_dim, fields)
        return cls(
            world_model,
            actor,
            qf,
            math.log(fields["initial_alpha"]),
            settings=PixelSettings.from_model_config(fields, **settings),
            objective=losses.ObjectiveSettings.from_fields(fields),
            optim=OptimSettings.from_fields(fields),
        )

    @classmethod
    def like(cls, module, config, target_entropy: float) -> "PixelUpdate":
        """The same update as the RLlib learner of ``module`` (a pixel SMAC RLModule): copies of its nets, target
        critics and alpha, ``config``'s objective and optimizer settings (tests and benchmarks compare the two)."""
        update = cls(
            copy.deepcopy(module.world_model),
            copy.deepcopy(module.actor),
            copy.deepcopy(module.qf),
            module.log_alpha.detach(),
            settings=module.settings,
            objective=losses.ObjectiveSettings.from_config(config),
            optim=OptimSettings.from_config(config),
            target_entropy=target_entropy,
        )
        update.target_qf.load_state_dict(module.target_qf.state_dict())
        return update.to(module.log_alpha.device)

    @classmethod
    def sharing(
        cls,
        module,
        optimizers: dict[str, torch.optim.Optimizer],
        *,
        objective: losses.ObjectiveSettings,
        optim: OptimSettings,
        target_entropy: float,
    ) -> "PixelUpdate":
        """An update of ``module``'s own nets (world model, actor, critics, target critics, log alpha) stepping the
        given optimizers (named ``world_model``, ``critic``, ``actor``, ``alpha``): nothing is copied. What the RLlib
        pixel learner captures in a CUDA graph (``SMACPixelTorchLearner``,
        smac_rllib/training/fast_update/captured_update.py)."""
        update = cls.__new__(cls)
        nn.Module.__init__(update)
        update.world_model, update.actor, update.qf, update.target_qf = (
            module.world_model,
            module.actor,
            module.qf,
            module.target_qf,
        )
        update.log_alpha = module.log_alpha
        update.settings, update.objective, update.optim, update.target_entropy = (
            module.settings,
            objective,
            optim,
            target_entropy,
        )
        update.optimizers = dict(optimizers)
        update.scaler = None
        return update

    def step(self, batch: dict, noise: UpdateNoise | None = None, average_targets: bool = True) -> dict:
        """One update (Alg. 2); ``noise`` as ``forward_train``'s. Sync-free in fp32/bf16 with fused Adam: a non-finite
        loss or gradient skips every optimizer's step on the device (``nonfinite_update`` = 1 in the metrics; the target
        critics are still averaged toward the unchanged critics). ``average_targets`` False: no Polyak this update
        (``target_network_update_freq``)."""
        device = self.log_alpha.device
        if self.settings.autocast == "fp16" and self.scaler is None:
            self.scaler = torch.amp.GradScaler(device.type)
        fwd_out = forward_train(
            batch,
            world_model=self.world_model,
            actor=self.actor,
            qf=self.qf,
            target_qf=self.target_qf,
            settings=self.settings,
            device=device,
            noise=noise,
        )
        out = losses.soft_actor_critic_losses(  # Eqs. (7), (9)-(12)
            fwd_out,
            fwd_out[REWARD_NEXT],
            fwd_out[TERMINATED_NEXT],
            log_alpha=self.log_alpha,
            target_entropy=self.target_entropy,
            discount_B=self.optim.gamma,
            settings=self.objective,
        )
        total = fwd_out[WM_LOSS] + out.critic + out.actor + out.alpha  # Eq. (13) trains the world model only
        clip = {name: self.optim.grad_clip for name in self.optimizers if name != "alpha"}  # reference smac.py:166-168
        tail = backward_and_step(
            total,
            [fwd_out[WM_LOSS], out.critic, out.actor, out.alpha],
            self.optimizers,
            clip=clip,
            scaler=self.scaler,
            polyak=(self._target_params, self._main_params, self.optim.tau) if average_targets else None,
        )
        metrics = losses.loss_metrics(
            fwd_out,
            out,
            target_entropy=self.target_entropy,
            num_particles=self.settings.num_particles,
            settings=self.objective,
        )
        extra = {"estimator/particle_feat_std": fwd_out[PARTICLE_SPREAD], TOTAL_LOSS: total.detach()}
        return metrics | fwd_out[WM_METRICS] | tail | extra

    @property
    def _target_params(self) -> list[torch.Tensor]:
        return list(self.target_qf.parameters())

    @property
    def _main_params(self) -> list[torch.Tensor]:
        return list(self.qf.parameters())

    def state_tensors(self) -> list[torch.Tensor]:
        """Every tensor ``step`` writes besides the optimizers' state (what a graph capture's warm-up restores)."""
        return list(self.parameters()) + list(self.buffers())
