"""Will the kept checkpoints fit on the disk? Every checkpoint of our algorithms holds the replay buffer
(``store_buffer_in_checkpoints``: RLlib 2.60 would otherwise drop it on restore), so checkpointing every iteration and
keeping them all (``num_to_keep: null``) writes the growing replay once per checkpoint. Checked before Ray for a local
storage path: the kept checkpoints' size by the stop (the replay as ``cli/memory.py`` counts it, at each checkpoint's
env step) against the free disk there; hundreds of checkpoints that write tens of GiB of replay are said. And does
the file's stop reach the checkpoint cadence?
"""

from __future__ import annotations

import os
import shutil

from smac_rllib.cli.errors import UserError, warn
from smac_rllib.cli.experiment_parts import DEFAULT_CHECKPOINT_CONFIG
from smac_rllib.cli.experiment_spec import ExperimentSpec
from smac_rllib.cli.horizon import iterations_at_stop, steps_per_iteration
from smac_rllib.cli.memory import GiB, estimate

MANY_CHECKPOINTS, MANY_BYTES = 100, 10 * 2**30  # more checkpoints of the replay than this, writing more than 10 GiB


def checkpoint_sizes(spec: ExperimentSpec) -> list[float]:
    """The bytes of each checkpoint the run writes by its stop (each holds the replay as it is then), in order; [] when
    they cannot be counted here (a stop not in iterations or steps, no replay in the checkpoints)."""
    ckpt = spec.checkpoint_config
    every = ckpt.get("checkpoint_frequency") or 0
    if not spec.configs or not (every or ckpt.get("checkpoint_at_end")):
        return []
    config = spec.configs[0]
    iterations, steps = iterations_at_stop(spec.stop, config), steps_per_iteration(config)
    if not (iterations and steps) or not getattr(config, "store_buffer_in_checkpoints", False):
        return []
    replay = [b for term, (b, _) in estimate(config, steps=iterations * steps).items() if term.startswith("the replay")]
    if not replay:
        return []
    capacity = (config.replay_buffer_config or {}).get("capacity") or iterations * steps
    per_step = replay[0] / max(1, min(capacity, iterations * steps))
    at = list(range(every, iterations + 1, every)) if every else []
    if ckpt.get("checkpoint_at_end") and iterations not in at:
        at.append(iterations)
    return [per_step * min(capacity, i * steps) for i in at]


def check_checkpoint_disk(spec: ExperimentSpec, storage: str) -> None:
    """One line when the checkpoints ``spec`` keeps by its stop exceed the free disk under ``storage`` (local)."""
    ckpt = spec.checkpoint_config
    every = ckpt.get("checkpoint_frequency") or 0
    sizes = checkpoint_sizes(spec) if every and "://" not in storage else []
    if not sizes:
        return
    iterations = iterations_at_stop(spec.stop, spec.configs[0])
    kept = ckpt.get("num_to_keep")
    total = sum(sizes if kept is None else sizes[-kept:])
    free = shutil.disk_usage(_existing(storage)).free
    if total <= free:
        if len(sizes) > MANY_CHECKPOINTS and sum(sizes) > MANY_BYTES:  # kept or not, each one was written
            warn(
                f"{spec.name}: checkpoint_frequency: {every} writes {len(sizes):,} checkpoints by the stop, each with "
                f"the replay buffer (up to ~{max(sizes) / GiB:,.2f} GiB): ~{sum(sizes) / GiB:,.0f} GiB written over "
                f"the run; the tuned examples checkpoint ~20 times a run (here checkpoint_frequency: "
                f"{max(1, iterations // 20)})"
            )
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


def warn_wandb_uploads(spec: ExperimentSpec) -> None:
    """``wandb: {upload_checkpoints: true}`` logs every checkpoint as a W&B artifact: with the replay in each, copies
    of it all are staged in W&B's cache and uploaded."""
    if not (spec.wandb or {}).get("upload_checkpoints"):
        return
    sizes = checkpoint_sizes(spec)
    each = (
        f"{len(sizes):,} checkpoints (each holds the replay buffer: up to ~{_size(max(sizes))}, ~{_size(sum(sizes))} "
        "in all)"
        if sizes
        else "checkpoints (each holds the replay buffer)"
    )
    warn(
        f"{spec.name}: wandb upload_checkpoints: true copies each of the {each} into W&B's cache and uploads it as an "
        "artifact; set it false to keep them in the trial directory only (W&B still gets every metric)"
    )


def warn_checkpoint_cadence(spec: ExperimentSpec) -> None:
    """A ``checkpoint_frequency`` (in iterations) past the file's own stop writes only the end checkpoint: said (a
    frequency meant in env steps?). Without an end checkpoint it is refused (``tune_horizon.check_checkpoints``)."""
    every = spec.checkpoint_config.get("checkpoint_frequency") or 0
    if not every and not spec.checkpoint_config["checkpoint_at_end"]:
        warn(
            f"{spec.name}: checkpoint_frequency: 0 and checkpoint_at_end: false save no checkpoint: the trained policy "
            "cannot be evaluated (rllib evaluate) or the run resumed; set checkpoint_at_end: true to keep the end"
        )
        return
    if every == DEFAULT_CHECKPOINT_CONFIG["checkpoint_frequency"]:
        return  # the default's cadence, not one the user chose
    last = [n for n in (iterations_at_stop(spec.stop, c) for c in spec.configs) if n is not None]
    if every and last and every > max(last) and spec.checkpoint_config["checkpoint_at_end"]:
        warn(
            f"{spec.name}: checkpoint_frequency: {every} counts iterations, and the stop ends the run by iteration "
            f"{max(last)}: only the end checkpoint is written; for checkpoints along the way write e.g. "
            f"checkpoint_frequency: {max(1, max(last) // 3)} (0 says end-only without this warning)"
        )


def _size(n: float) -> str:
    if n >= GiB:
        return f"{n / GiB:,.1f} GiB"
    return f"{n / 2**20:,.1f} MiB" if n >= 2**20 else f"{n / 2**10:,.0f} KiB"


def _existing(path: str) -> str:
    path = os.path.abspath(os.path.expanduser(path))
    while not os.path.exists(path):
        path = os.path.dirname(path)
    return path
