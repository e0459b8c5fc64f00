"""RLModule of pixel SMAC (Alg. 2): the belief actor (RSSM world model + actor pi(a|s) + acting,
``algorithms/belief_actor_module.py``) plus twin Q(s, a) on belief features, their target copy and the temperature.

Legend: B = batch (sequences), T = time, N = B*T flattened, K1 = K + 1 belief latents (s0 first),
T2 = twin critics, F = feature dim (stoch + deter), A = action dim.

Training (``_forward_train``, one pass so DDP sees everything) is ``smac_rllib.objectives.pixel_forward.forward_train``
(pure torch): the world-model ELBO (Eq. 13); the belief particles of every (b, t) -- s0 = the world model's own
posterior sample, s1..sK fresh -- detached, so actor and critic never train the world model (Alg. 2); the
actor's marginal Q over particles (Eq. 9) and the log-weights of its entropy estimate (Eqs. 6-7); the critic
on all K+1 particles (or s0) and the TD target at t+1 (Eq. 12).
"""

from __future__ import annotations

from typing import Any

import torch
from ray.rllib.core.columns import Columns
from ray.rllib.core.learner.utils import make_target_network
from ray.rllib.core.rl_module.apis import QNetAPI, TargetNetworkAPI
from torch import nn

from smac_rllib.algorithms.belief_actor_module import BeliefActorRLModule
from smac_rllib.objectives.losses import Q_NEXT_TARGET, Q_PRED
from smac_rllib.objectives.pixel_forward import PixelSettings, forward_train
from smac_rllib.training.checkpoint_names import retired_twins


class SMACPixelTorchRLModule(BeliefActorRLModule, TargetNetworkAPI, QNetAPI):
    critic = True

    def setup(self):
        super().setup()
        cfg = self.model_config
        self.settings = PixelSettings.from_model_config(cfg)
        if not self.inference_only:
            self.log_alpha = nn.Parameter(torch.tensor(float(cfg["initial_log_alpha"])))

    # --- RLlib APIs -------------------------------------------------------------------------------------
    def get_non_inference_attributes(self) -> list[str]:
        return super().get_non_inference_attributes() + ["qf", "target_qf", "log_alpha"]

    def make_target_networks(self) -> None:
        self.target_qf = make_target_network(self.qf)

    def get_target_network_pairs(self):
        return [(self.qf, self.target_qf)]

    def forward_target(self, batch: dict[str, Any]) -> dict[str, Any]:
        return {Q_NEXT_TARGET: self.target_qf(batch["feat"], batch[Columns.ACTIONS])}

    def compute_q_values(self, batch: dict[str, Any]) -> dict[str, Any]:
        return {Q_PRED: self.qf(batch["feat"], batch[Columns.ACTIONS])}

    # --- training ---------------------------------------------------------------------------------------
    def _forward_train(self, batch: dict[str, Any], **kwargs) -> dict[str, Any]:
        """World-model ELBO, belief particles, actor/critic inputs: ``objectives/pixel_forward.py: forward_train``."""
        return forward_train(
            batch,
            world_model=self.world_model,
            actor=self.actor,
            qf=self.qf,
            target_qf=self.target_qf,
            settings=self.settings,
            device=self.log_alpha.device,
        )


__getattr__ = retired_twins(globals())  # checkpoints written with fast_update: false name "...RLlibPath" classes
