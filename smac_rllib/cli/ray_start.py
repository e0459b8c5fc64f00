"""Ray for ``rllib train``: an existing cluster (``--address``, which must answer as one within 5 s; the CLI's process
settings passed to its workers) or a local Ray listening on 127.0.0.1 only, each with every experiment fitted to it."""

from __future__ import annotations

import json
import logging
import os
import socket

import ray
import torch
from ray._private import ray_constants, services
from ray._private.runtime_env.constants import RAY_JOB_CONFIG_JSON_ENV_VAR

import smac_rllib
from smac_rllib.cli import gcs_probe, resources
from smac_rllib.cli.errors import UserError, one_line
from smac_rllib.cli.experiment_spec import ExperimentSpec
from smac_rllib.cli.storage import unwritable


def start_ray(args, specs: list[ExperimentSpec]) -> None:
    """Join the cluster at ``--address`` / ``$RAY_ADDRESS`` or start a local Ray on 127.0.0.1, fitting every
    experiment to the GPUs, CPUs and custom resources there (resources.py)."""
    torch.set_num_threads(1)
    check_tune_variables()
    if not args.verbose:
        os.environ["RAY_AIR_NEW_OUTPUT"] = "0"  # with verbose=0: no Tune tables, our progress lines only
        logging.getLogger("ray.rllib").setLevel(logging.ERROR)  # "You are running SAC on the new API stack!"
        # "The `callbacks.on_trial_result` operation took 0.797 s, which may be a performance bottleneck": Tune's
        # timing of its own loop, nothing a user can act on, printed whenever the machine is busy
        logging.getLogger("ray.tune.utils.util").setLevel(logging.ERROR)
    address = args.address or os.environ.get("RAY_ADDRESS")
    if address:
        check_address(address)
        try:
            ray.init(
                address=address,
                log_to_driver=args.verbose,
                logging_level="WARNING",
                runtime_env={"env_vars": worker_env_vars()},
            )
        except (ConnectionError, TimeoutError, ValueError) as e:
            raise UserError(
                f"cannot connect to the Ray cluster at {address} ({one_line(e, 200)}); "
                "check --address / $RAY_ADDRESS, or drop it to run a local Ray"
            ) from None
        resources.fit_experiments(specs, strict=args.strict_resources, gpus=ray.cluster_resources().get("GPU", 0))
        resources.check_cluster_cpus(specs, ray.cluster_resources().get("CPU", 0), strict=args.strict_resources)
        resources.check_cluster_custom_resources(specs, ray.cluster_resources(), strict=args.strict_resources)
    else:
        resources.fit_experiments(specs, strict=args.strict_resources, gpus=resources.local_gpus())
        resources.warn_impractical(specs)  # e.g. paper-size pixels on this CPU: hours per 10k frames
        num_cpus = resources.local_cpus_needed(specs, strict=args.strict_resources)
        bind_to_loopback()
        check_temp_dir()
        ray.init(
            num_cpus=num_cpus,
            resources=resources.local_custom_resources(specs),
            include_dashboard=False,
            log_to_driver=args.verbose,
            logging_level="WARNING",
        )
        smac_rllib.register()  # Tune's registry lives in the Ray job


ADDRESS_TIMEOUT_S = 5.0


def bind_to_loopback() -> None:
    """The local Ray listens on 127.0.0.1 only (GCS, raylet, object manager, workers), not on every interface.

    Ray 2.60 picks the node IP (and binds its gRPC servers to it) from ``ray_constants.ENABLE_RAY_CLUSTER``: on
    Linux the routable address and all interfaces; off (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``, its macOS /
    Windows default) 127.0.0.1. The constant is read when ``ray`` is imported, so it is set in this process too;
    the variable reaches the workers, which start from this environment. Token auth stays off for this Ray
    (main.py): only this machine's users can reach it.
    """
    os.environ[ray_constants.ENABLE_RAY_CLUSTERS_ENV_VAR] = "0"
    ray_constants.ENABLE_RAY_CLUSTER = False


def check_address(address: str, timeout: float = ADDRESS_TIMEOUT_S) -> None:
    """A cluster address must answer within ``timeout``, as a Ray cluster: Ray itself retries forever, whether nothing
    listens there or another server does (an HTTP server, an SSH daemon). A ``ray://`` address (Ray Client) must accept
    a TCP connection; any other must be a Ray GCS: a gRPC (HTTP/2) server, at the address ``ray.init`` connects to
    (Ray replaces 127.0.0.1 by this machine's IP), that Ray's own GCS client reaches."""
    if address in ("auto", "local"):
        return  # Ray looks up / starts the cluster itself, and fails fast
    host, sep, port = address.split("://", 1)[-1].rstrip("/").rpartition(":")
    if not sep or not host or not port.isdigit():
        raise UserError(
            f"--address {address!r} must be host:port, e.g. 10.0.0.5:6379 or ray://head-node:10001 (or auto)"
        )
    _connect(address, host.strip("[]"), int(port), timeout).close()
    if "://" in address:
        return  # a Ray Client server (ray://), not a GCS
    target = services.canonicalize_bootstrap_address(address.rstrip("/")) or address
    via = f" (Ray connects to {target} for it)" if target != address.rstrip("/") else ""
    t_host, _, t_port = target.rpartition(":")
    if not ray_constants.env_bool("RAY_USE_TLS", False):  # a TLS GCS answers no plain HTTP/2
        what = gcs_probe.http2_answer(t_host.strip("[]"), int(t_port), timeout)
        if what:
            raise UserError(
                f"nothing at {address}{via} answers as a Ray cluster ({what}); check --address / $RAY_ADDRESS (the "
                "head's GCS port, default 6379)"
            )
    problem = gcs_probe.gcs_problem(target, timeout)
    if problem:
        raise UserError(
            f"nothing at {address}{via} answers as a Ray cluster (an HTTP/2 server, but {problem}); check --address "
            "/ $RAY_ADDRESS (the head's GCS port, default 6379)"
        )


def _connect(address: str, host: str, port: int, timeout: float) -> socket.socket:
    try:
        return socket.create_connection((host, port), timeout=timeout)
    except OSError as e:
        reason = e.strerror or type(e).__name__
        raise UserError(
            f"no Ray cluster answers at {address} ({reason} within {timeout:g} s); start one there with "
            "`ray start --head`, fix --address / $RAY_ADDRESS, or drop it to run a local Ray"
        ) from None


def check_before_ray(args, specs: list[ExperimentSpec]) -> None:
    """``--dry-run``: what ``start_ray`` checks and warns about, without starting Ray: the cluster at ``--address``
    (it answers as one), or the local Ray's GPU fallback, CPU-learner cost, oversubscription and custom resources."""
    check_tune_variables()
    address = args.address or os.environ.get("RAY_ADDRESS")
    if address:
        check_address(address)
        return
    resources.fit_experiments(specs, strict=args.strict_resources, gpus=resources.local_gpus())
    resources.warn_impractical(specs)
    resources.local_cpus_needed(specs, strict=args.strict_resources)
    resources.local_custom_resources(specs)
    check_temp_dir()


# A local Ray's longest socket path below its temp dir (AF_UNIX paths hold at most 107 bytes on Linux)
SOCKET_TAIL = "session_2026-01-01_00-00-00_000000_4194304/sockets/plasma_store"
MAX_SOCKET_PATH = 107


def check_tune_variables() -> None:
    """Tune's environment variables that a value below 1 breaks inside Tune's loop (a traceback after the start)."""
    for name in ("TUNE_MAX_PENDING_TRIALS_PG",):
        value = os.environ.get(name)
        if value is not None and not (value.strip().isdigit() and int(value) >= 1):
            raise UserError(
                f"{name}={value}: Tune takes a whole number >= 1 here (trials it prepares at once; {value} starts "
                f"none, and Tune fails inside its loop); unset it (Tune picks one per CPU) or set {name}=1"
            )


def check_temp_dir() -> None:
    """A local Ray puts its sessions, logs and sockets under ``$RAY_TMPDIR/ray`` (else ``$TMPDIR/ray``, else
    /tmp/ray); a directory it cannot make or write, or a path too long for its sockets, fails inside ``ray.init``
    with a traceback."""
    from ray._common.utils import get_default_ray_temp_dir

    path = get_default_ray_temp_dir()
    var = next((v for v in ("RAY_TMPDIR", "TMPDIR") if v in os.environ), None)
    origin = f"{var}={os.environ[var]}" if var else "the default"
    fix = "export RAY_TMPDIR=DIR naming a writable directory with a short path (e.g. /tmp)"
    if why := unwritable(path):
        raise UserError(f"Ray's temp dir {path} ({origin}) cannot be made or written: {why}; {fix}")
    if len(os.path.join(path, SOCKET_TAIL).encode()) > MAX_SOCKET_PATH:
        raise UserError(
            f"Ray's temp dir {path} ({origin}) is too long for its sockets (a socket path holds at most "
            f"{MAX_SOCKET_PATH} bytes, {len(SOCKET_TAIL) + 1} of them below that dir); {fix}"
        )


def worker_env_vars() -> dict[str, str]:
    """The CLI's process settings for workers on other nodes (a local Ray's workers inherit them), minus the
    ones a submitted job's runtime_env already sets (Ray refuses to merge the same variable twice)."""
    keys = ("MUJOCO_GL", "PYOPENGL_PLATFORM", "WANDB_MODE", "TUNE_DISABLE_STRICT_METRIC_CHECKING", "PYTHONWARNINGS")
    try:
        job = json.loads(os.environ.get(RAY_JOB_CONFIG_JSON_ENV_VAR) or "{}")
    except json.JSONDecodeError:
        job = {}
    taken = ((job.get("runtime_env") or {}).get("env_vars") or {}) if isinstance(job, dict) else {}
    return {k: os.environ[k] for k in keys if k in os.environ and k not in taken}
