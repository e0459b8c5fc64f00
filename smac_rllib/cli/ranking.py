"""Checkpoints ranked by a nested result key, as ``checkpoint_score_attribute`` names it.

Tune 2.60's checkpoint manager (``ray.train._internal.checkpoint_manager._CheckpointManager.register_checkpoint``)
ranks a checkpoint by its score only when the attribute is a top-level key of the result it was saved with; RLlib's
results are nested (``evaluation/env_runners/episode_return_mean`` is ``result["evaluation"]["env_runners"]...``), so
every checkpoint was ranked by time alone and ``num_to_keep`` kept the newest, deleting the best. The wrapper below
hands the manager the result with the attribute's value also under its flat name. A result without the value (a
checkpoint before the first evaluation) gets the worst score of the order: Tune would log an error listing every
result key and score it -inf, which under ``checkpoint_score_order: min`` ranks it the *best*.
"""

from __future__ import annotations

from ray.train._internal.checkpoint_manager import _CheckpointManager
from ray.train._internal.session import _TrainingResult

from smac_rllib.cli.results import lookup


def install_nested_score_ranking() -> None:
    """Wrap ``_CheckpointManager.register_checkpoint`` once in this process (the driver, where Tune ranks)."""
    original = _CheckpointManager.register_checkpoint
    if getattr(original, "_ranks_nested_keys", False):
        return

    def register_checkpoint(self, checkpoint_result):
        attribute = self._checkpoint_config.checkpoint_score_attribute
        metrics = checkpoint_result.metrics or {}
        if attribute and attribute not in metrics:
            value = lookup(metrics, attribute)
            if value is None:  # the worst of the order (not Tune's -inf, the best under "min")
                value = float("-inf") if self._checkpoint_config.checkpoint_score_order == "max" else float("inf")
            checkpoint_result = _TrainingResult(checkpoint_result.checkpoint, {**metrics, attribute: value})
        return original(self, checkpoint_result)

    register_checkpoint._ranks_nested_keys = True
    _CheckpointManager.register_checkpoint = register_checkpoint
