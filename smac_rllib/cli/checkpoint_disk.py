"""Will the kept checkpoints fit on the disk? Every checkpoint of our algorithms holds the replay buffer
(``store_buffer_in_checkpoints``: RLlib 2.60 would otherwise drop it on restore), so checkpointing every iteration and
keeping them all (``num_to_keep: null``) writes the growing replay once per checkpoint. Checked before Ray for a local
storage path: the kept checkpoints' size by the stop (the replay as ``cli/memory.py`` counts it, at each checkpoint's
env step) against the free disk there.
"""

from __future__ import annotations

import os
import shutil

from smac_rllib.cli.errors import UserError
from smac_rllib.cli.experiment_spec import ExperimentSpec
from smac_rllib.cli.horizon import iterations_at_stop, steps_per_iteration
from smac_rllib.cli.memory import GiB, estimate


def check_checkpoint_disk(spec: ExperimentSpec, storage: str) -> None:
    """One line when the checkpoints ``spec`` keeps by its stop exceed the free disk under ``storage`` (local)."""
    ckpt = spec.checkpoint_config
    every = ckpt.get("checkpoint_frequency") or 0
    if not every or "://" in storage or not spec.configs:
        return
    config = spec.configs[0]
    iterations, steps = iterations_at_stop(spec.stop, config), steps_per_iteration(config)
    if not (iterations and steps) or not getattr(config, "store_buffer_in_checkpoints", False):
        return
    replay = [b for term, (b, _) in estimate(config, steps=iterations * steps).items() if term.startswith("the replay")]
    if not replay:
        return
    capacity = (config.replay_buffer_config or {}).get("capacity") or iterations * steps
    per_step = replay[0] / max(1, min(capacity, iterations * steps))
    sizes = [per_step * min(capacity, i * steps) for i in range(every, iterations + 1, every)]
    kept = ckpt.get("num_to_keep")
    total = sum(sizes if kept is None else sizes[-kept:])
    free = shutil.disk_usage(_existing(storage)).free
    if total <= free:
        return
    how_many = f"all {len(sizes):,}" if kept is None else f"{min(kept, len(sizes))}"
    raise UserError(
        f"checkpoint_config keeps {how_many} checkpoints of up to ~{max(sizes) / GiB:,.2f} GiB (each holds the replay "
        f"buffer): ~{total / GiB:,.0f} GiB by the stop, more than the {free / GiB:,.0f} GiB free under {storage}; "
        + (
            "set num_to_keep: 2, or checkpoint less often (checkpoint_frequency)"
            if kept is None
            else "lower replay_buffer_config.capacity, or write to a disk with more room (--storage-path)"
        ),
        spec.source,
    )


def _existing(path: str) -> str:
    path = os.path.abspath(os.path.expanduser(path))
    while not os.path.exists(path):
        path = os.path.dirname(path)
    return path
