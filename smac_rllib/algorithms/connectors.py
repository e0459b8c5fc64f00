"""Env-to-module connector of the pixel algorithms (SMAC, Dreamer, SLAC): marks episode starts so the RSSM resets
its belief there.

Same logic as RLlib's DreamerV3 ``AddIsFirstsToBatch``; kept here because importing it from
``ray.rllib.algorithms.dreamerv3`` loads the whole DreamerV3 package (and its debug envs) on every env runner.
"""

from __future__ import annotations

from typing import Any

from ray.rllib.connectors.connector_v2 import ConnectorV2


class AddIsFirstsToBatch(ConnectorV2):
    """Adds ``is_first`` (1.0 on the first step of an episode, else 0.0) to the batch."""

    def __call__(self, *, rl_module, batch: dict[str, Any], episodes, explore=None, shared_data=None, **kwargs):
        if "is_first" in batch:
            return batch
        for episode in self.single_agent_episode_iterator(episodes):
            is_first = 1.0 if episode.t_started == 0 and len(episode) == 0 else 0.0
            self.add_batch_item(batch, "is_first", item_to_add=is_first, single_agent_episode=episode)
        return batch
