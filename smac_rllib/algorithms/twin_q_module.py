"""RLlib's module APIs for a module with twin critics ``qf`` (``models.critic.TwinQ``), their target copy
``target_qf`` and a temperature ``log_alpha``: shared by SMAC's state module, the flow / mixture SAC modules and
TD3 (which adds a target actor); and the check of the flat spaces these state modules need."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
from ray.rllib.core.columns import Columns
from ray.rllib.core.learner.utils import make_target_network
from ray.rllib.core.rl_module.apis import InferenceOnlyAPI, QNetAPI, TargetNetworkAPI

from smac_rllib.objectives.losses import Q_NEXT_TARGET, Q_PRED


class TwinQModuleAPI(InferenceOnlyAPI, TargetNetworkAPI, QNetAPI):
    """Put after ``TorchRLModule``: ``class M(TorchRLModule, TwinQModuleAPI)``; env runners hold no critic."""

    def get_non_inference_attributes(self) -> list[str]:
        return ["qf", "target_qf", "log_alpha"]

    def make_target_networks(self) -> None:
        self.target_qf = make_target_network(self.qf)

    def get_target_network_pairs(self):
        return [(self.qf, self.target_qf)]

    def forward_target(self, batch: dict[str, Any]) -> dict[str, Any]:
        return {Q_NEXT_TARGET: self.target_qf(batch[Columns.OBS], batch[Columns.ACTIONS])}  # (T2, B)

    def compute_q_values(self, batch: dict[str, Any]) -> dict[str, Any]:
        return {Q_PRED: self.qf(batch[Columns.OBS], batch[Columns.ACTIONS])}  # (T2, B)

    def get_initial_state(self) -> dict:
        return {}  # stateless (the pixel module carries a belief instead)


def check_flat_spaces(observation_space: gym.Space, action_space: gym.Space, name: str) -> None:
    """A 1-D Box action space and a flat (1-D Box) observation space, else a ValueError naming the algorithm."""
    if not isinstance(action_space, gym.spaces.Box) or len(action_space.shape) != 1:
        raise ValueError(f"{name} needs a 1-D continuous (Box) action space; got {action_space}")
    if not isinstance(observation_space, gym.spaces.Box) or len(observation_space.shape) != 1:
        raise ValueError(
            f"{name} needs flat state observations (a 1-D Box); got {observation_space} (no pixel variant)"
        )
