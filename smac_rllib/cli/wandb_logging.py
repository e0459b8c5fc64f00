"""W&B logging of a run: Ray's ``WandbLoggerCallback`` with a short config, offline without an API key or when the W&B
server cannot be reached, runs inside the trial directories, and the API key kept out of Ray's logs on a local Ray
(docs/design.md §5)."""

from __future__ import annotations

import functools
import os
import socket
import threading

import ray
from ray.air.integrations.wandb import WandbLoggerCallback, _clean_log, _force_on_current_node, _QueueItem

from smac_rllib.cli.errors import UserError, did_you_mean, one_line, warn
from smac_rllib.cli.experiment_spec import ExperimentSpec
from smac_rllib.cli.storage import unwritable
from smac_rllib.cli.wandb_key import WANDB_KEY_VAR, has_key, requested_mode, runs_dir, user_dir, wandb_server

WANDB_UPLOAD_TIMEOUT_S = 30  # WandbLoggerCallback's default (1800 s) hangs a failed run (docs/design.md §5)


# Config keys W&B always gets (besides those the YAML sets): the paper's knobs, not RLlib's ~280 settings.
WANDB_CONFIG_KEYS = (
    "env", "env_config", "seed", "num_particles", "latent_dim", "estimator", "beta", "hidden_dim", "critic_hidden_dim",
    "updates_per_env_step", "world_model_preset", "particle_mode", "batch_size_B", "batch_length_T", "actor_lr",
    "critic_lr", "alpha_lr", "world_model_lr", "gamma", "tau", "train_batch_size_per_learner", "num_env_runners",
    "num_learners", "num_gpus_per_learner",
)  # fmt: skip


def wandb_callback(spec: ExperimentSpec, local_ray: bool = True):
    """W&B logging of every result and the config; offline without an API key; runs land in the trial dirs."""
    kwargs = dict(spec.wandb)
    kwargs.setdefault("group", spec.name)
    kwargs.setdefault("log_config", False)  # True would repeat the config in every logged result
    kwargs.setdefault("upload_timeout", WANDB_UPLOAD_TIMEOUT_S)
    kwargs["mode"] = requested_mode(kwargs)
    if kwargs["mode"] == "online":
        host, port = wandb_server()
        why = unreachable(host, port)
        if why:  # W&B would retry for the whole run and log nothing: log offline, to be synced later
            warn(
                f"W&B: cannot reach {host}:{port} ({why}); logging offline into {runs_dir('<trial dir>')}: upload "
                f"later with `wandb sync {runs_dir('<trial dir>')}/offline-run-*`"
            )
            kwargs["mode"] = "offline"
    return _WandbCallback(
        config_keys=sorted(set(spec.param_space) | set(WANDB_CONFIG_KEYS)), inherit_key=local_ray, **kwargs
    )


def check_api_key(spec: ExperimentSpec) -> None:
    """Before Ray: online W&B without an API key fails in Tune's setup with a traceback (Ray's callback); so does a
    ``WANDB_DIR`` that cannot be written (in every trial's logging actor)."""
    mode = os.environ.get("WANDB_MODE")
    if spec.wandb is not None and mode and not spec.wandb.get("mode") and mode not in WANDB_MODES:
        raise UserError(  # else W&B's settings raise a traceback in every trial's logging actor
            f"WANDB_MODE={mode} is not a W&B mode{did_you_mean(mode, WANDB_MODES[:3])} (W&B's: online, offline, "
            "disabled)"
        )
    if spec.wandb and requested_mode(spec.wandb) != "disabled" and user_dir():
        _check_dir(user_dir())
    if spec.wandb is not None and requested_mode(spec.wandb) != "disabled":
        _warn_unread_variables(spec)
    if not spec.wandb or requested_mode(spec.wandb) != "online":
        return
    if has_key() or spec.wandb.get("api_key_file") or os.environ.get("WANDB_SETUP_API_KEY_HOOK"):
        return
    raise UserError(
        f"{spec.name}: W&B logs online (WANDB_MODE=online) but has no API key (no {WANDB_KEY_VAR}, no `wandb login` "
        "in ~/.netrc): run `wandb login` or set WANDB_API_KEY, or log offline (unset WANDB_MODE; `wandb sync` later)"
    )


WANDB_MODES = ("online", "offline", "disabled", "dryrun", "run", "shared")  # wandb.Settings.mode

# W&B's variables that Tune's callback overrides with its own wandb.init arguments (name, id, group)
_OVERRIDDEN = {
    "WANDB_NAME": "names each trial's run after the trial (<Algorithm>_<id>_00000...)",
    "WANDB_RUN_ID": "gives each trial's run the trial's id",
    "WANDB_RUN_GROUP": "groups the runs by the file's wandb: {{group: NAME}} (default: the experiment's name, {name})",
}


def _warn_unread_variables(spec: ExperimentSpec) -> None:
    for var, does in _OVERRIDDEN.items():
        if value := os.environ.get(var):
            warn(
                f"{var}={value} is not read: Tune's W&B callback {does.format(name=spec.name)}; a label common to the "
                f"runs is the file's wandb: {{group: {value}}}"
            )


def _check_dir(path: str) -> None:
    if why := unwritable(path):
        raise UserError(
            f"WANDB_DIR={os.environ['WANDB_DIR']} cannot be made or written ({why}); set WANDB_DIR to a directory you "
            "can write, or unset it (W&B then writes into each trial's dir)"
        )


WANDB_PROBE_S = 3.0  # name lookup + TCP connect to the W&B server, before the run


@functools.lru_cache(maxsize=8)
def unreachable(host: str, port: int, timeout_s: float = WANDB_PROBE_S) -> str | None:
    """None when a TCP connection to ``host:port`` opens within ``timeout_s`` (nothing is sent); else why not. The
    name lookup has no timeout of its own, so the probe runs in a thread that is given up on."""
    outcome: list[str | None] = []

    def probe() -> None:
        try:
            with socket.create_connection((host, port), timeout=timeout_s):
                outcome.append(None)
        except OSError as e:
            outcome.append(one_line(e) or type(e).__name__)

    thread = threading.Thread(target=probe, daemon=True)
    thread.start()
    thread.join(timeout_s)
    return outcome[0] if outcome else f"no answer in {timeout_s:g} s"


class _WandbCallback(WandbLoggerCallback):
    """Ray's WandbLoggerCallback logging a short config: the YAML's keys plus ``WANDB_CONFIG_KEYS``.

    RLlib's full config (~280 keys) would be big enough to go through the object store as the logging actor's
    constructor argument, which Ray reports as an error line. The actor chdirs into the trial directory before
    ``wandb.init``, so runs land in ``<trial dir>/wandb/``.

    The API key: Ray's callback gives the logging actor ``runtime_env={"env_vars": {"WANDB_API_KEY": key}}``,
    and Ray writes runtime envs into its session logs (raylet, GCS, runtime-env agent: world-readable files) and
    into worker command lines. With the local Ray that ``rllib train`` starts (``inherit_key``), every worker
    already has the variable from this process's environment, so the actor is declared without it. On a cluster
    (``--address``) the actor runs on the driver's node, whose workers have the key only when the job's
    runtime env carries it (cluster/README.md): there Ray's behaviour is kept.
    """

    def __init__(self, *args, config_keys=(), inherit_key: bool = True, **kwargs):
        super().__init__(*args, **kwargs)
        self.config_keys = list(config_keys)
        self.inherit_key = inherit_key

    def setup(self, *args, **kwargs):
        """Ray's, which asks for an API key unless the *environment's* WANDB_MODE is offline: this run's own mode
        (the YAML's, or offline after an unreachable server) decides."""
        mode, before = self.kwargs.get("mode"), os.environ.get("WANDB_MODE")
        if mode in ("offline", "disabled"):
            os.environ["WANDB_MODE"] = mode
        try:
            super().setup(*args, **kwargs)
        finally:
            if before is None:
                os.environ.pop("WANDB_MODE", None)
            else:
                os.environ["WANDB_MODE"] = before

    def log_trial_result(self, iteration, trial, result):
        """Ray's, but the result is handed to the queue actor without waiting for it: ``Queue.put`` blocks until the
        queue actor runs, which cost ~3 s at the first result on the 2-core CPU (Tune's "on_trial_result took
        4.9 s" warning). One caller's calls reach an actor in order, so results still precede the END item."""
        if trial not in self._trial_logging_actors:
            self.log_trial_start(trial)
        result = _clean_log(result, video_kwargs=self.video_kwargs, image_kwargs=self.image_kwargs)
        self._trial_queues[trial].actor.put.remote((_QueueItem.RESULT, result), None)

    def _start_logging_actor(self, trial, exclude_results, **wandb_init_kwargs):
        config = wandb_init_kwargs.get("config") or {}
        wandb_init_kwargs["config"] = {k: config[k] for k in self.config_keys if k in config}
        trial_dir = getattr(trial, "path", None)
        if trial_dir and "://" not in trial_dir:
            # W&B writes straight into the trial dir under --storage-path. By default it writes into Tune's driver
            # staging dir (under Ray's session dir), whose copy to the trial dir is taken before W&B finishes: the
            # trial dir then held a 7-byte offline run (measured), and `wandb sync` on it synced nothing.
            # A WANDB_DIR the user set is where they asked W&B to write (checked before Ray: check_api_key).
            os.makedirs(trial_dir, exist_ok=True)
            wandb_init_kwargs.setdefault("dir", user_dir() or trial_dir)
        key = os.environ.pop(WANDB_KEY_VAR, None) if getattr(self, "inherit_key", True) else None
        if not self._remote_logger_class:
            # Ray declares the logging actor with max_restarts=-1, and its core worker then prints an error-level
            # line ("... has constructor arguments in the object store and max_restarts > 0") at every run. A
            # restarted logging actor would start a second W&B run anyway: declare it without restarts.
            env_vars = {WANDB_KEY_VAR: os.environ[WANDB_KEY_VAR]} if WANDB_KEY_VAR in os.environ else {}
            self._remote_logger_class = ray.remote(
                num_cpus=0,
                **_force_on_current_node(),
                runtime_env={"env_vars": env_vars},
                max_restarts=0,
                max_task_retries=0,
            )(self._logger_actor_cls)
        try:
            super()._start_logging_actor(trial, exclude_results, **wandb_init_kwargs)
        finally:
            if key is not None:
                os.environ[WANDB_KEY_VAR] = key
