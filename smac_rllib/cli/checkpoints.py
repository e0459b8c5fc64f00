"""Checkpoints that are complete or absent, trials that fail once for a configuration mistake, pickles from others.

* **Atomic checkpoints.** Tune's ``Trainable.save`` writes a checkpoint into ``tempfile.mkdtemp()`` (the system
  temp dir, often another filesystem) and then *copies* it file by file into ``<trial>/checkpoint_NNNNNN``: a kill
  during the copy leaves a half-written checkpoint under its final name, and a kill during the save leaves a full
  copy in ``/tmp`` (GBs for pixel SMAC, whose checkpoints hold the replay buffer). ``rllib train`` runs every
  algorithm through ``trainable(run)``, whose ``save`` writes into ``<trial>/.checkpoint_tmp_NNNNNN_<pid>`` (the
  same filesystem), adds the completion marker ``checkpoint_complete.json`` (every file with its size), fsyncs
  and renames the directory to ``checkpoint_NNNNNN``. A checkpoint without a valid marker is incomplete.
  Cloud storage (s3://, gs://) cannot rename: the checkpoint is staged in the trial's local working directory,
  uploaded, and the marker is uploaded last. ``--resume`` removes staging leftovers; ``load_checkpoint`` and
  ``rllib evaluate`` take the newest complete checkpoint, never an incomplete one, and say so.
* **No retries for configuration mistakes.** An exception of a configuration kind (``CONFIG_ERRORS``) raised
  while the algorithm is built at trial start (``Algorithm.__init__``: config validation, env and module
  construction) fails the same way on every retry; it becomes a ``TrialConfigError`` and Tune's ``max_failures``
  does not retry it (``install_retry_policy``; Tune 2.60 has no per-exception retry setting).
* **Pickles.** A checkpoint holds pickles: loading one runs code chosen by whoever wrote it. ``check_owner``
  refuses a checkpoint (or experiment) directory that another user owns or that anyone may write, unless the
  user passes ``--trust``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
import warnings

from smac_rllib.cli.errors import UserError, one_line

MARKER = "checkpoint_complete.json"
STAGING_PREFIX = ".checkpoint_tmp_"
CHECKPOINT_RE = re.compile(r"^checkpoint_(\d+)$")

# Raised while an algorithm is built, these do not go away when the same config is tried again.
CONFIG_ERRORS = (ValueError, TypeError, LookupError, AttributeError, NotImplementedError, ImportError, AssertionError)


# --------------------------------------------------------------------------------------------- completeness


def manifest(directory: str) -> dict[str, int]:
    """{relative path: size} of every file under ``directory`` (the marker itself excluded)."""
    out = {}
    for root, _, files in os.walk(directory):
        for name in files:
            path = os.path.join(root, name)
            rel = os.path.relpath(path, directory)
            if rel != MARKER:
                out[rel] = os.path.getsize(path)
    return out


def write_marker(directory: str, iteration: int | None = None) -> dict:
    """fsync every file of ``directory``, then write the marker (last) and fsync it and the directory."""
    files = manifest(directory)
    for rel in files:
        _fsync(os.path.join(directory, rel))
    marker = {"complete": True, "training_iteration": iteration, "time": time.time(), "files": files}
    path = os.path.join(directory, MARKER)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(marker, f)
        f.flush()
        os.fsync(f.fileno())
    _fsync(directory)
    return marker


def _fsync(path: str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def incomplete_reason(directory: str) -> str | None:
    """None for a complete checkpoint; else why not (no marker, a missing or truncated file)."""
    try:
        with open(os.path.join(directory, MARKER), encoding="utf-8") as f:
            marker = json.load(f)
        files = marker["files"]
    except FileNotFoundError:
        return f"no {MARKER}: its writing was interrupted"
    except (OSError, ValueError, KeyError, TypeError):
        return f"unreadable {MARKER}"
    for rel, size in files.items():
        path = os.path.join(directory, rel)
        if not os.path.isfile(path):
            return f"{rel} is missing"
        if os.path.getsize(path) != size:
            return f"{rel} has {os.path.getsize(path)} bytes, {size} were written"
    return None


def is_complete(directory: str) -> bool:
    return incomplete_reason(directory) is None


def checkpoint_dirs(trial_dir: str) -> list[str]:
    """``checkpoint_NNNNNN`` directories of a trial, oldest first."""
    try:
        names = os.listdir(trial_dir)
    except OSError:
        return []
    found = [
        (int(m.group(1)), n)
        for n in names
        for m in [CHECKPOINT_RE.match(n)]
        if m and os.path.isdir(os.path.join(trial_dir, n))
    ]
    return [os.path.join(trial_dir, n) for _, n in sorted(found)]


def uses_markers(trial_dir: str) -> bool:
    """Whether this trial was checkpointed with markers (runs from before them have none anywhere)."""
    return any(os.path.exists(os.path.join(d, MARKER)) for d in checkpoint_dirs(trial_dir))


def restorable(checkpoint: str) -> tuple[str, str | None]:
    """(the checkpoint to load, why ``checkpoint`` was skipped or None): ``checkpoint`` itself when complete (or
    from a run without markers), else the trial's newest complete checkpoint (usually the one before it; a newer
    one when Tune's last experiment snapshot had not recorded it yet)."""
    checkpoint = os.path.abspath(checkpoint)
    trial_dir = os.path.dirname(checkpoint)
    reason = incomplete_reason(checkpoint)
    if reason is None or not uses_markers(trial_dir):
        return checkpoint, None
    complete = [d for d in checkpoint_dirs(trial_dir) if is_complete(d)]
    if not complete:
        raise ValueError(
            f"checkpoint {checkpoint} is incomplete ({reason}) and the trial has no complete checkpoint; "
            "start the trial again without --resume"
        )
    return complete[-1], f"{os.path.basename(checkpoint)} is incomplete ({reason})"


def remove_staging(exp_dir: str) -> list[str]:
    """Delete the ``.checkpoint_tmp_*`` directories that a killed run left in its trial dirs; their paths."""
    removed = []
    try:
        trials = [os.path.join(exp_dir, t) for t in os.listdir(exp_dir)]
    except OSError:
        return removed
    for trial_dir in trials:
        if not os.path.isdir(trial_dir):
            continue
        for name in os.listdir(trial_dir):
            if name.startswith(STAGING_PREFIX):
                shutil.rmtree(os.path.join(trial_dir, name), ignore_errors=True)
                removed.append(os.path.join(trial_dir, name))
    return removed


# --------------------------------------------------------------------------------------------- trust


def check_owner(path: str, trust: bool, what: str = "checkpoint", flag: str = "--trust") -> None:
    """A ``path`` (and every directory under it that holds pickles) that another user owns or anyone can write is
    refused unless ``trust``: loading a pickle runs the code its author chose."""
    if trust:
        return
    uid = os.getuid()
    for directory in _pickle_dirs(path):
        st = os.stat(directory)
        where = f"{what} {directory}" if directory == path else f"{directory} (in the {what} {path})"
        if st.st_uid != uid:
            owner = _user_name(st.st_uid)
            raise UserError(
                f"{where} belongs to {owner}, not to you; checkpoints are pickles and loading "
                f"one runs code its author chose: pass {flag} only if you trust {owner}"
            )
        if st.st_mode & 0o002:
            raise UserError(
                f"{where} is writable by every user, so anyone could have put a pickle there; "
                f"`chmod o-w {directory}` (or pass {flag} if you trust every user of this machine)"
            )


def _pickle_dirs(path: str) -> list[str]:
    """``path`` and the checkpoint directories below it (at most two levels: experiment > trial > checkpoint)."""
    out = [path]
    if os.path.isdir(path) and not os.path.exists(os.path.join(path, "rllib_checkpoint.json")):
        for entry in sorted(os.listdir(path)):
            child = os.path.join(path, entry)
            if os.path.isdir(child) and not entry.startswith("."):
                out.append(child)
                if not CHECKPOINT_RE.match(entry):
                    out += checkpoint_dirs(child)
    return out


def _user_name(uid: int) -> str:
    try:
        import pwd  # lazy: not on Windows (the ImportError below)

        return f"user {pwd.getpwuid(uid).pw_name!r} (uid {uid})"
    except (KeyError, ImportError):
        return f"uid {uid}"


# --------------------------------------------------------------------------------------------- the trainable


class TrialConfigError(Exception):
    """A configuration mistake found while the algorithm was built at trial start: every retry fails the same way."""


class AtomicCheckpoints:
    """Mixed into every algorithm that ``rllib train`` runs (see ``trainable``)."""

    def __init__(self, *args, **kwargs):
        try:
            super().__init__(*args, **kwargs)
        except CONFIG_ERRORS as e:
            raise TrialConfigError(
                f"{type(e).__name__}: {one_line(e, 300)} (a configuration error at trial start: "
                "not retried; fix the config)"
            ) from e

    def save(self, checkpoint_dir: str | None = None):
        storage = getattr(self, "_storage", None)
        if checkpoint_dir is not None or storage is None:
            return super().save(checkpoint_dir)
        return _save_atomically(self, storage)

    def load_checkpoint(self, checkpoint):
        if isinstance(checkpoint, str) and os.path.isdir(checkpoint):
            chosen, skipped = restorable(checkpoint)
            if skipped:
                print(f"rllib: {skipped}; restoring {chosen} instead", flush=True)
            checkpoint = chosen
        return super().load_checkpoint(checkpoint)


def _save_atomically(trainable, storage):
    # lazy: Ray (~2 s) stays out of `rllib evaluate`, which imports this module to pick a complete checkpoint
    import pyarrow.fs

    import ray.cloudpickle as ray_pickle
    from ray.train._internal.checkpoint_manager import _TrainingResult
    from ray.train._internal.storage import _pyarrow_fs_copy_files
    from ray.tune import Checkpoint
    from ray.tune.trainable.trainable import _DICT_CHECKPOINT_FILE_NAME

    metrics = trainable._last_result.copy() if trainable._last_result else {}
    storage._update_checkpoint_index(metrics)
    final = storage.checkpoint_fs_path
    local = isinstance(storage.storage_filesystem, pyarrow.fs.LocalFileSystem)
    parent = os.path.dirname(final) if local else storage.trial_working_directory
    staging = os.path.join(
        parent, f"{STAGING_PREFIX}{os.path.basename(final).removeprefix('checkpoint_')}_{os.getpid()}"
    )
    shutil.rmtree(staging, ignore_errors=True)
    os.makedirs(staging)
    try:
        out = trainable.save_checkpoint(staging)
        if isinstance(out, dict):
            with open(os.path.join(staging, _DICT_CHECKPOINT_FILE_NAME), "wb") as f:
                ray_pickle.dump(out, f)
        elif isinstance(out, str) and os.path.abspath(out) != os.path.abspath(staging):
            raise ValueError(f"save_checkpoint must return None or the directory it was given, got {out}")
        iteration = metrics.get("training_iteration")
        if local:
            write_marker(staging, iteration)
            if os.path.exists(final):  # an incomplete one of a killed run with the same index
                shutil.rmtree(final)
            os.rename(staging, final)
            _fsync(parent)
        else:
            fs = storage.storage_filesystem
            storage._check_validation_file()
            fs.create_dir(final)
            marker = {
                "complete": True,
                "training_iteration": iteration,
                "time": time.time(),
                "files": manifest(staging),
            }
            _pyarrow_fs_copy_files(source=staging, destination=final, destination_filesystem=fs)
            with fs.open_output_stream(f"{final}/{MARKER}") as f:  # last: the upload is complete
                f.write(json.dumps(marker).encode())
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    checkpoint = Checkpoint(filesystem=storage.storage_filesystem, path=final)
    storage.persist_artifacts(force=storage.sync_config.sync_artifacts_on_checkpoint)
    return _TrainingResult(checkpoint=checkpoint, metrics=metrics)


_TRAINABLES: dict[str, type] = {}


def trainable(run: str) -> type:
    """The algorithm class registered as ``run`` with ``AtomicCheckpoints`` mixed in, under the same name (trial
    directories stay ``<run>_<id>``; ``Tuner.restore`` accepts it for runs started before)."""
    from ray.tune.registry import get_trainable_cls  # lazy: as in _save_atomically

    with warnings.catch_warnings():  # an RLlib name registers all of RLlib's algorithms, one of which makes a gymnasium
        warnings.simplefilter(
            "ignore"
        )  # debug env at import (dreamerv3/utils/debugging.py): 4 warnings on no env of ours
        base = get_trainable_cls(run)
    if isinstance(base, type) and issubclass(base, AtomicCheckpoints):
        return base
    cached = _TRAINABLES.get(run)
    if cached is not None and cached.__mro__[2] is base:
        return cached
    cls = type(run, (AtomicCheckpoints, base), {"__module__": __name__, "__qualname__": run})
    _TRAINABLES[run] = cls
    return cls


# --------------------------------------------------------------------------------------------- retry policy


def config_error(exc) -> str | None:
    """The one-line message when ``exc`` (as Tune's controller gets it) comes from a ``TrialConfigError``."""
    seen = 0
    node = exc
    while node is not None and seen < 8:
        if isinstance(node, TrialConfigError):
            return str(node)
        nxt = getattr(node, "cause", None)
        if nxt is None or nxt is node:
            nxt = node.__cause__
        node, seen = nxt, seen + 1
    text = str(exc) if exc is not None else ""
    match = re.search(r"TrialConfigError: (.*)", text)
    return match.group(1).strip() if match else None


def install_retry_policy() -> None:
    """Trials whose failure is a ``TrialConfigError`` are not retried (the rest: ``max_failures`` as configured).

    Tune decides right after ``Trial.handle_error(exc)`` with ``Trial.should_recover()``, without a hook in
    between: both are wrapped (once, in this process); the flag lives in the trial's temporary state, which is
    not saved with the experiment, so a resumed trial gets its retries back.
    """
    from ray.tune.experiment import Trial  # lazy: as in _save_atomically

    if getattr(Trial.handle_error, "_smac_rllib", False):
        return
    handle_error, should_recover = Trial.handle_error, Trial.should_recover

    def _handle_error(self, exc=None):
        handle_error(self, exc)
        self.temporary_state.config_error = config_error(exc)

    def _should_recover(self):
        if getattr(self.temporary_state, "config_error", None):
            return False
        return should_recover(self)

    _handle_error._smac_rllib = True
    Trial.handle_error, Trial.should_recover = _handle_error, _should_recover
