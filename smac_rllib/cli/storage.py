"""Where an experiment's results go and what ``--resume`` continues: ``<storage>/<name>`` for a new run (``<name>-2``,
``<name>-3``, ... next to older ones), the latest restorable one with ``--resume``; checked before Ray starts (a
storage path that cannot be written, nothing to resume, another algorithm's experiment, directories owned by someone
else).

Every form of storage path is checked alike (``resolve_storage_path``): ``--storage-path``, the file's
``storage_path``, the default ``~/ray_results`` (a missing or read-only home is a mistake before Ray, not a
traceback after it), ``file:///abs/path`` (read as the local path, so it is checked and resumed like one) and
cloud URIs (a scheme Tune writes to, a bucket, this pyarrow's support for it, and an answer from the bucket
within seconds: bucket_probe.py). ``TUNE_RESULT_DIR`` / ``RAY_AIR_LOCAL_CACHE_DIR`` in the environment, which Tune 2.x
refuses once Ray started, are refused with the ``--storage-path`` that does what they meant;
``TUNE_DISABLE_AUTO_CALLBACK_LOGGERS=1``, which leaves a run without the result files it is read from, is refused."""

from __future__ import annotations

import os
import re
import tempfile
import urllib.parse

import pyarrow.fs as pafs
from ray import tune

from smac_rllib.cli import bucket_probe
from smac_rllib.cli.checkpoints import check_owner
from smac_rllib.cli.errors import UserError, warn
from smac_rllib.cli.experiment_spec import ExperimentSpec
from smac_rllib.cli.resume_stop import all_finished, changed_settings, effective_stop, stop_text, trials_to_continue

DEFAULT_STORAGE_PATH = "~/ray_results"
STORAGE_URI_SCHEMES = ("s3", "gs", "gcs", "hdfs", "viewfs", "abfs", "abfss", "file")  # pyarrow filesystems Tune uses


_TUNE_ENV_VARS = ("TUNE_RESULT_DIR", "RAY_AIR_LOCAL_CACHE_DIR")  # Ray < 2.7's; tune.run raises on them now
# pyarrow's filesystem class behind each cloud scheme (missing from a pyarrow built without it)
_URI_FILESYSTEMS = {"s3": "S3FileSystem", "gs": "GcsFileSystem", "gcs": "GcsFileSystem", "abfs": "AzureFileSystem"}
_URI_FILESYSTEMS.update(abfss="AzureFileSystem", hdfs="HadoopFileSystem", viewfs="HadoopFileSystem")


def resolve_storage_path(value, where: str | None) -> str | None:
    """The storage path to run with (None: the default), checked as ``--storage-path`` is: ``value`` from the
    command line or the file (``where`` says which), or None for the default ``~/ray_results``."""
    for var in _TUNE_ENV_VARS:
        if os.environ.get(var):
            raise UserError(
                f"{var}={os.environ[var]} is set, which Ray Tune 2.x refuses (it raises once the run started); "
                f"unset it and pass --storage-path {os.environ[var]}"
            )
    if os.environ.get("TUNE_DISABLE_AUTO_CALLBACK_LOGGERS") == "1":  # read by Tune as exactly "1"
        raise UserError(
            "TUNE_DISABLE_AUTO_CALLBACK_LOGGERS=1 is set: Tune would write no result.json, progress.csv or TensorBoard "
            "files, which the summary, rllib plot and --resume read; unset it"
        )
    if value is None:
        default = os.path.abspath(os.path.expanduser(DEFAULT_STORAGE_PATH))
        check_storage_path(default, f"the default storage path {DEFAULT_STORAGE_PATH} (--storage-path DIR for another)")
        return None
    if not isinstance(value, str) or not value.strip():
        raise UserError(f"storage_path must be a directory path, got {value!r}", where)
    value = expand_variables(value, where)
    _check_scheme_typo(value, where)
    if value.lower().startswith("file:"):
        value = local_path_of(value, where)
    path = value if "://" in value else os.path.abspath(os.path.expanduser(value))
    check_storage_path(path, where)
    return path


def _check_scheme_typo(value: str, where: str | None) -> None:
    """``s3:/bucket/x`` or ``gs:bucket`` (a URI short of its ``//``) would be a relative local directory named
    ``s3:``: the run would write beside the current directory and the bucket stay empty."""
    scheme, colon, rest = value.partition(":")
    if colon and scheme.lower() in STORAGE_URI_SCHEMES and scheme.lower() != "file" and not rest.startswith("//"):
        fixed = f"{scheme}://{rest.lstrip('/')}"
        raise UserError(
            f"storage path {value} is not a URI (a local directory named '{scheme}:'); write {fixed}", where
        )


_UNSET_VARIABLE = re.compile(r"\$(\w+|\{[^}]*\})")


def expand_variables(value: str, where: str | None) -> str:
    """``$HOME/runs`` or ``${SCRATCH}/runs`` as a shell expands it (Tune would create a directory named ``$HOME``);
    a variable that is not set is refused by name."""
    expanded = os.path.expandvars(value)
    left = _UNSET_VARIABLE.search(expanded)
    if left:
        name = left.group(1).strip("{}")
        raise UserError(
            f"storage path {value}: the environment variable {name} is not set (the path is expanded as a shell "
            f"does); set {name} or write the directory itself",
            where,
        )
    return expanded


def local_path_of(uri: str, where: str | None) -> str:
    """``file:///abs/path`` (or ``file://localhost/abs/path``, percent-escapes decoded) -> ``/abs/path``."""
    parts = urllib.parse.urlsplit(uri)
    if not uri.lower().startswith("file://") or parts.netloc not in ("", "localhost") or not parts.path.startswith("/"):
        raise UserError(
            f"storage path {uri}: a file URI is file:///absolute/path (three slashes; relative paths, '~' and other "
            "hosts do not work); or pass the directory itself",
            where,
        )
    return os.path.normpath(urllib.parse.unquote(parts.path))


def unwritable(path: str) -> str | None:
    """Why a directory cannot be made at ``path`` or written in, else None. A directory is made and removed there:
    ``os.access`` says yes to root even on a read-only filesystem."""
    try:
        os.makedirs(path, exist_ok=True)
        os.rmdir(tempfile.mkdtemp(prefix=".rllib-write-test-", dir=path))
    except OSError as e:
        return e.strerror or type(e).__name__
    return None


def check_storage_path(storage_path: str, where: str | None) -> None:
    """A local storage path must be (or be creatable as) a writable directory, before Ray or Tune start."""
    if "://" in storage_path:
        _check_uri(storage_path, where)
        return
    if re.match(r"^[A-Za-z]:[\\/]", storage_path) or "\\" in storage_path:  # C:\Users\me: a directory named so here
        raise UserError(
            f"storage path {storage_path} is a Windows path; this machine's paths are POSIX (/home/me/ray_results, "
            "~/ray_results): a backslash would be part of one directory's name",
            where,
        )
    existing = storage_path
    while not os.path.exists(existing):
        if os.path.islink(existing):  # a link whose target is gone: makedirs would fail after Ray started
            raise UserError(
                f"storage path {storage_path}: {existing} is a link to {os.readlink(existing)}, which does "
                "not exist; create its target or pass another storage path",
                where,
            )
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise UserError(f"storage path {storage_path} cannot be created: {existing} is a file; pass a directory", where)
    try:  # os.access is True for root even on a read-only filesystem: make (and remove) a directory there
        os.rmdir(tempfile.mkdtemp(prefix=".rllib-write-test-", dir=existing))
    except OSError as e:
        raise UserError(
            f"cannot write to {existing} (making a directory there failed: {e.strerror}); pass a storage path you can "
            "write to",
            where,
        ) from None


def _check_uri(uri: str, where: str | None) -> None:
    """A cloud URI: a scheme Tune writes to, a bucket, a pyarrow built with that filesystem, and the bucket answering
    (an unreachable one would make the run wait in silence, or fail only after Ray started)."""
    scheme, _, rest = uri.partition("://")
    scheme = scheme.lower()
    if scheme not in STORAGE_URI_SCHEMES or scheme == "file":
        raise UserError(
            f"storage path {uri}: Tune cannot write to {scheme}:// (it writes to "
            f"{', '.join(s + '://' for s in STORAGE_URI_SCHEMES)} or a local directory)",
            where,
        )
    if not rest.split("/", 1)[0] and scheme not in ("hdfs", "viewfs"):  # hdfs:///path: the configured namenode
        raise UserError(f"storage path {uri} names no bucket; write {scheme}://<bucket>/<path>", where)
    filesystem = _URI_FILESYSTEMS.get(scheme)
    if filesystem and not hasattr(pafs, filesystem):
        raise UserError(
            f"storage path {uri}: this pyarrow has no {filesystem} ({scheme}:// support); install a pyarrow built "
            "with it, or write to a local directory",
            where,
        )
    why = bucket_probe.unreachable(uri, bucket_probe.PROBE_TIMEOUT_S)
    if why:
        hint = " (Google Cloud Storage is gs://)" if scheme == "gcs" else ""
        name = "the namenode and path" if scheme in ("hdfs", "viewfs") else "the bucket name"
        raise UserError(
            f"storage path {uri} cannot be reached: {why}{hint}; check {name} and this machine's access to "
            "it, or write to a local directory",
            where,
        )


def storage_of(spec: ExperimentSpec) -> str:
    return spec.storage_path or os.path.abspath(os.path.expanduser(DEFAULT_STORAGE_PATH))


def check_resume(specs: list[ExperimentSpec], trust: bool) -> list[ExperimentSpec]:
    """Before Ray starts: every local experiment directory that ``--resume`` would load (its checkpoints and
    ``tuner.pkl`` are pickles) belongs to this user and is not writable by everyone, unless ``--trust``. Returns the
    experiments with nothing left to do (every trial ended and the stop not raised), each said in one line: the run
    skips them, and starts no Ray when none is left."""
    looked, any_restorable, done = [], False, []
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
            changed = changed_settings(exp_dir, spec.param_space)
            if changed:
                raise UserError(
                    f"--resume continues {exp_dir} with the config it ran with, and Tune would ignore what changed: "
                    f"{'; '.join(changed)}; resume with the settings it ran with (the printed Resume: command), or "
                    "drop --resume to start a new run with them",
                    spec.source,
                )
            stop = effective_stop(exp_dir, spec.stop)[0]
            continued = trials_to_continue(exp_dir, stop, spec.scheduler, spec.source)  # (a raise it cannot honour)
            if not continued and all_finished(exp_dir):
                print(
                    f"== {spec.name}: every trial of {exp_dir} already ended (stop {stop_text(stop)}); nothing to "
                    "resume: raise the stop in the file (or pass --stop) to train further",
                    flush=True,
                )
                done.append(spec)
    if not any_restorable:  # several experiments: those with nothing to resume start (the others resume)
        inside = [
            storage_of(spec)
            for spec in specs
            if re.fullmatch(re.escape(spec.name) + r"(-\d+)?", os.path.basename(storage_of(spec).rstrip("/")))
            and tune.Tuner.can_restore(storage_of(spec))
        ]
        if inside:  # the experiment's own directory given as the storage path (the "Results:" line)
            raise UserError(
                f"--resume: {inside[0]} is the experiment's own directory; the storage path is the one above it: "
                f"--storage-path {os.path.dirname(inside[0].rstrip('/'))}"
            )
        raise UserError(
            f"--resume: nothing to resume, no Tune experiment state in {', '.join(looked)}; drop --resume to "
            "start the run (or pass the --storage-path it ran with)"
        )
    return done


def check_not_in_experiment(specs: list[ExperimentSpec]) -> None:
    """A new run whose storage path is an experiment's own directory (the "Results:" line) would nest its experiment
    inside that one (``<exp>/<name>``), where ``rllib plot`` and ``--resume`` of either mix them."""
    for spec in specs:
        storage = storage_of(spec)
        if "://" not in storage and os.path.isdir(storage) and tune.Tuner.can_restore(storage):
            raise UserError(
                f"storage path {storage} is an experiment's own directory (its trials and tuner.pkl): a new run "
                f"would go into {os.path.join(storage, spec.name)}, inside it; pass the directory above it, "
                f"--storage-path {os.path.dirname(storage.rstrip('/'))} (the new run is named beside the old one; "
                "with --resume, it continues that run)",
                spec.source,
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
    entries = _list_storage(storage)
    existing = [name] if name in entries else []
    pattern = re.compile(re.escape(name) + r"-(\d+)$")
    numbered = [(int(match.group(1)), d) for d in entries for match in [pattern.match(d)] if match]
    existing += [d for _, d in sorted(numbered)]
    if resume:
        for candidate in reversed(existing):
            if tune.Tuner.can_restore(_join(storage, candidate)):
                return candidate, True
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
    fs, path = pafs.FileSystem.from_uri(storage)
    infos = fs.get_file_info(pafs.FileSelector(path, allow_not_found=True))
    return [os.path.basename(i.path.rstrip("/")) for i in infos if i.type == pafs.FileType.Directory]
