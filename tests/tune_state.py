"""What Tune's newest experiment snapshot records: the checkpoint each trial resumes from (shared by the tests that
kill a run and ``--resume`` it). A checkpoint on disk is not yet one the snapshot knows; waiting for the file's
mtime is not enough under load (the snapshot can be written after the checkpoint's line was printed but from
state taken before it), so these helpers read the snapshot's content."""

from __future__ import annotations

import glob
import json
import os
import pickle
import time
from pathlib import Path


def snapshot_checkpoints(exp_dir: Path | str) -> list[str]:
    """The latest checkpoint path of every trial in the newest ``experiment_state-*.json`` ([] before one exists)."""
    snapshots = glob.glob(os.path.join(str(exp_dir), "experiment_state-*.json"))
    if not snapshots:
        return []
    try:
        with open(max(snapshots, key=os.path.getmtime)) as f:
            trial_data = json.load(f)["trial_data"]
    except (OSError, ValueError, KeyError):  # being rewritten
        return []
    paths = []
    for _, metadata_json in trial_data:
        manager = json.loads(metadata_json).get("checkpoint_manager")
        if not manager:
            continue
        latest = pickle.loads(bytes.fromhex(manager["value"])).latest_checkpoint_result  # Tune's own pickle
        if latest is not None:
            paths.append(os.path.normpath(latest.checkpoint.path))
    return paths


def wait_until_snapshot_has(exp_dir: Path | str, checkpoint: str, timeout_s: float = 60.0) -> bool:
    """Polls until the newest snapshot records ``checkpoint`` as some trial's latest (or a newer one of that trial)."""
    checkpoint = os.path.normpath(checkpoint)
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        for path in snapshot_checkpoints(exp_dir):
            if os.path.dirname(path) == os.path.dirname(checkpoint) and path >= checkpoint:
                return True
        time.sleep(0.2)
    return False
