"""Where an experiment's results go and what ``--resume`` continues: ``<storage>/<name>`` for a new run (``<name>-2``,
``<name>-3``, ... next to older ones), the latest restorable one with ``--resume``; checked before Ray starts (nothing
to resume, another algorithm's experiment, directories owned by someone else)."""

from __future__ import annotations

import os
import re

from smac_rllib.cli.errors import UserError
from smac_rllib.cli.yaml_loader import ExperimentSpec

DEFAULT_STORAGE_PATH = "~/ray_results"


def storage_of(spec: ExperimentSpec) -> str:
    return spec.storage_path or os.path.abspath(os.path.expanduser(DEFAULT_STORAGE_PATH))


def check_resume(specs: list[ExperimentSpec], trust: bool) -> None:
    """Before Ray starts: every local experiment directory that ``--resume`` would load (its checkpoints and
    ``tuner.pkl`` are pickles) belongs to this user and is not writable by everyone, unless ``--trust``."""
    from smac_rllib.cli.checkpoints import check_owner

    looked, any_restorable = [], False
    for spec in specs:
        storage = storage_of(spec)
        if "://" in storage:
            any_restorable = True  # remote storage: Tune says what it finds there
            continue
        name, restore = experiment_name(storage, spec.name, True, quiet=True)
        looked.append(os.path.join(storage, spec.name) + "[-N]")
        if restore:
            any_restorable = True
            exp_dir = os.path.join(storage, name)
            check_owner(exp_dir, trust, what="experiment directory")
            ran = _trainables_in(exp_dir)
            if ran and spec.run not in ran:
                raise UserError(
                    f"--resume: {exp_dir} was run with run: {', '.join(sorted(ran))}, the file now says run: "
                    f"{spec.run}; resume with the file it started with, or drop --resume to start a new run",
                    spec.source,
                )
    if not any_restorable:  # several experiments: those with nothing to resume start (the others resume)
        raise UserError(
            f"--resume: nothing to resume, no Tune experiment state in {', '.join(looked)}; drop --resume to "
            "start the run (or pass the --storage-path it ran with)"
        )


def _trainables_in(exp_dir: str) -> set[str]:
    """The trainables of an experiment's trial directories (``<Trainable>_<trial id>...``, ``trial_dirname``)."""
    names = set()
    for entry in os.listdir(exp_dir):
        match = re.match(r"([A-Za-z][A-Za-z0-9]*)_[0-9a-f]{5}_\d{5}", entry)
        if match and os.path.isdir(os.path.join(exp_dir, entry)):
            names.add(match.group(1))
    return names


def experiment_name(storage: str, name: str, resume: bool, quiet: bool = False) -> tuple[str, bool]:
    """(directory name, restore?) -- the latest restorable ``name[-N]`` with --resume, else the first free one."""
    from ray import tune

    entries = _list_storage(storage)
    existing = [name] if name in entries else []
    pattern = re.compile(re.escape(name) + r"-(\d+)$")
    numbered = [(int(match.group(1)), d) for d in entries for match in [pattern.match(d)] if match]
    existing += [d for _, d in sorted(numbered)]
    if resume:
        for candidate in reversed(existing):
            if tune.Tuner.can_restore(_join(storage, candidate)):
                return candidate, True
        from smac_rllib.cli.resources import warn

        if not quiet:
            warn(f"nothing to resume for {name!r} under {storage}; starting a new run")
    if not existing:
        return name, False
    taken = set(existing)
    n = 2
    while f"{name}-{n}" in taken:
        n += 1
    return f"{name}-{n}", False


def _join(storage: str, name: str) -> str:
    return f"{storage.rstrip('/')}/{name}" if "://" in storage else os.path.join(storage, name)


def _list_storage(storage: str) -> list[str]:
    """Directory names under a local path or a cloud URI (s3://, gs://, file://), as Tune stores experiments."""
    if "://" not in storage:
        return os.listdir(storage) if os.path.isdir(storage) else []
    import pyarrow.fs as pafs

    fs, path = pafs.FileSystem.from_uri(storage)
    infos = fs.get_file_info(pafs.FileSelector(path, allow_not_found=True))
    return [os.path.basename(i.path.rstrip("/")) for i in infos if i.type == pafs.FileType.Directory]
