"""``rllib train file X.yaml``: check every experiment, start Ray, run each experiment with Tune, in order.

Results of experiment ``name`` go to ``<storage_path>/<name>``; a new run next to an old one goes to
``<name>-2``, ``<name>-3``, ...; ``--resume`` continues the latest of them from each trial's last checkpoint
(SMAC's checkpoints hold the replay buffer, so training continues with it).

Ctrl-C keeps the work: the first one lets every running trial finish its current iteration, checkpoints it
(replay buffer included) and ends the run with Tune's experiment state saved; the summary says "interrupted",
prints the exact ``--resume`` command and ``rllib`` exits with 130. A second Ctrl-C stops at once (exit 130,
without those checkpoints). Tune's own SIGINT handler (which ends the run without checkpointing the trials)
is off: ``TUNE_DISABLE_SIGINT_HANDLER=1``.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time

from ray.tune.stopper import Stopper

from smac_rllib.cli.errors import EXIT_TRIAL_ERROR, UserError, one_line
from smac_rllib.cli.interrupt import INTERRUPT, CheckpointOnInterrupt, _add_interrupt_callback, catch_ctrl_c
from smac_rllib.cli.main import EXIT_INTERRUPTED, resume_command
from smac_rllib.cli.ray_output import ConfigErrorFilter, StaleCheckpointFilter, quiet_ray_notices
from smac_rllib.cli.storage import check_resume, experiment_name, storage_of
from smac_rllib.cli.wandb_logging import _WandbCallback, wandb_callback  # noqa: F401 - runs started before the

# split pickled their callbacks as smac_rllib.cli.train.<name>: the names stay importable here for --resume
from smac_rllib.cli.yaml_loader import ExperimentSpec, Overrides, load_experiments


def run_train(args) -> int:
    overrides = Overrides(
        stop=_json_args(args.stop, "--stop"),
        config=_json_args(args.config, "--config"),
        num_samples=args.num_samples,
        storage_path=args.storage_path,
        seed=args.seed,
        wandb=args.wandb,
    )
    if args.num_samples is not None and args.num_samples < 1:
        raise UserError(f"--num-samples {args.num_samples} must be >= 1")
    if not os.path.isfile(args.path):  # before the slow imports
        from smac_rllib.cli.yaml_reader import read_yaml

        read_yaml(args.path)

    import smac_rllib

    smac_rllib.register()
    specs = load_experiments(args.path, overrides)
    for spec in specs:
        check_rungs(spec)
        warn_algorithm(spec)
    if args.resume:
        check_resume(specs, trust=getattr(args, "trust", False))
    if not (args.address or os.environ.get("RAY_ADDRESS")):  # a cluster's nodes have their own memory
        from smac_rllib.cli.resources import check_local_cpus, check_memory, local_gpus

        check_memory(specs, gpus=local_gpus())
        check_local_cpus(specs)
    if args.dry_run:
        from smac_rllib.cli.resources import trial_request

        for spec in specs:
            need = trial_request(spec)
            print(
                f"{spec.name}: {spec.run} on {_describe_env(spec.param_space['env'])}, {spec.num_trials} trial(s), "
                f"{need['CPU']:g} CPU + {need['GPU']:g} GPU per trial, stop {spec.stop}"
            )
            if spec.configs:
                print(f"  {describe_evaluation(spec.configs[0])}")
        return 0

    import ray
    import torch

    from smac_rllib.cli import resources

    torch.set_num_threads(1)
    if not args.verbose:
        os.environ["RAY_AIR_NEW_OUTPUT"] = "0"  # with verbose=0: no Tune tables, our progress lines only
        logging.getLogger("ray.rllib").setLevel(logging.ERROR)  # "You are running SAC on the new API stack!"
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
        ray.init(
            num_cpus=num_cpus,
            resources=resources.local_custom_resources(specs),
            include_dashboard=False,
            log_to_driver=args.verbose,
            logging_level="WARNING",
        )
        smac_rllib.register()  # Tune's registry lives in the Ray job
    from smac_rllib.cli.checkpoints import install_retry_policy

    install_retry_policy()
    ConfigErrorFilter.install()
    if not args.verbose:
        quiet_ray_notices()

    worst = 0
    with catch_ctrl_c():
        for spec in specs:
            code = run_experiment(spec, args)
            if code == EXIT_INTERRUPTED:
                return code  # Ctrl-C: do not start the next experiment
            worst = max(worst, code)
    return worst


ADDRESS_TIMEOUT_S = 5.0


def bind_to_loopback() -> None:
    """The local Ray listens on 127.0.0.1 only (GCS, raylet, object manager, workers), not on every interface.

    Ray 2.60 picks the node IP (and binds its gRPC servers to it) from ``ray_constants.ENABLE_RAY_CLUSTER``: on
    Linux the routable address and all interfaces; off (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``, its macOS /
    Windows default) 127.0.0.1. The constant is read when ``ray`` is imported, so it is set in this process too;
    the variable reaches the workers, which start from this environment. Token auth stays off for this Ray
    (main.py): only this machine's users can reach it.
    """
    from ray._private import ray_constants

    os.environ[ray_constants.ENABLE_RAY_CLUSTERS_ENV_VAR] = "0"
    ray_constants.ENABLE_RAY_CLUSTER = False


def check_address(address: str, timeout: float = ADDRESS_TIMEOUT_S) -> None:
    """A cluster address must answer a TCP connect within ``timeout`` (Ray itself retries forever)."""
    if address in ("auto", "local"):
        return  # Ray looks up / starts the cluster itself, and fails fast
    import socket

    host, sep, port = address.split("://", 1)[-1].rstrip("/").rpartition(":")
    if not sep or not host or not port.isdigit():
        raise UserError(
            f"--address {address!r} must be host:port, e.g. 10.0.0.5:6379 or ray://head-node:10001 (or auto)"
        )
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as e:
        reason = e.strerror or type(e).__name__
        raise UserError(
            f"no Ray cluster answers at {address} ({reason} within {timeout:g} s); start one there with "
            "`ray start --head`, fix --address / $RAY_ADDRESS, or drop it to run a local Ray"
        ) from None


def worker_env_vars() -> dict[str, str]:
    """The CLI's process settings for workers on other nodes (a local Ray's workers inherit them), minus the
    ones a submitted job's runtime_env already sets (Ray refuses to merge the same variable twice)."""
    from ray._private.runtime_env.constants import RAY_JOB_CONFIG_JSON_ENV_VAR

    keys = ("MUJOCO_GL", "PYOPENGL_PLATFORM", "WANDB_MODE", "TUNE_DISABLE_STRICT_METRIC_CHECKING", "PYTHONWARNINGS")
    try:
        job = json.loads(os.environ.get(RAY_JOB_CONFIG_JSON_ENV_VAR) or "{}")
    except json.JSONDecodeError:
        job = {}
    taken = ((job.get("runtime_env") or {}).get("env_vars") or {}) if isinstance(job, dict) else {}
    return {k: os.environ[k] for k in keys if k in os.environ and k not in taken}


def describe_evaluation(config) -> str:
    """``evaluation every 5 iterations (~5,000 agent steps = 10,000 frames): 5 episodes, deterministic policy, ...``"""
    interval = config.evaluation_interval
    if not interval:
        return "no evaluation (add evaluation_interval, evaluation_duration, evaluation_config: {explore: false})"
    from smac_rllib.cli.plot import EVAL_RETURN, action_repeat

    eval_config = config.get_evaluation_config_object()
    steps = interval * config.min_sample_timesteps_per_iteration
    repeat = action_repeat({"env_config": config.env_config if isinstance(config.env_config, dict) else {}})
    every = f"~{steps:,} agent steps = {steps * repeat:,} frames" if repeat != 1 else f"~{steps:,} env steps"
    policy = "exploring policy" if eval_config.explore else "deterministic policy"
    runners = config.evaluation_num_env_runners
    where = f"{runners} eval env runner(s)" if runners else "a local eval env runner in the trial process"
    return (
        f"evaluation every {interval} iteration(s) ({every}): {config.evaluation_duration} "
        f"{config.evaluation_duration_unit}, {policy}, on {where} -> {EVAL_RETURN}"
    )


def asha_rungs(options: dict) -> list[float]:
    """ASHA's rung milestones (in ``time_attr`` units), as ``ray.tune.schedulers.AsyncHyperBandScheduler`` computes
    them for its first bracket: ``grace_period * reduction_factor**k`` up to ``max_t``."""
    import math

    grace, factor, max_t = options.get("grace_period", 1), options.get("reduction_factor", 4), options.get("max_t", 100)
    count = int(math.log(max_t / grace) / math.log(factor) + 1)
    return [grace * factor**k for k in range(count)]


def check_rungs(spec: ExperimentSpec) -> None:
    """A warning when ASHA compares trials on an evaluation metric at iterations that do not evaluate: between two
    evaluations RLlib repeats the last one, so a rung at iteration 15 with ``evaluation_interval: 10`` judges every
    trial by its iteration-10 evaluation (and a rung before the first evaluation has nothing to compare)."""
    block = spec.scheduler or {}
    if block.get("type") != "ASHA" or not str(block.get("metric", "")).startswith("evaluation/"):
        return
    if block.get("time_attr", "training_iteration") != "training_iteration":
        return
    intervals = {c.evaluation_interval for c in spec.configs if c.evaluation_interval}
    rungs = asha_rungs(block)
    for interval in sorted(intervals):
        off = [r for r in rungs if r % interval]
        if off:
            from smac_rllib.cli.resources import warn

            factor = block.get("reduction_factor", 4)
            grace = block.get("grace_period", 1)
            good = interval * max(1, -(-grace // interval))
            fix = f"set scheduler grace_period to a multiple of {interval} (e.g. {good})"
            if factor != int(factor):
                fix += " and reduction_factor to an integer"
            warn(
                f"{spec.name}: ASHA compares {block['metric']!r} at iteration(s) "
                f"{', '.join(f'{r:g}' for r in off[:4])}, which do not evaluate (evaluation_interval: {interval}): the "
                f"rungs see a stale or no evaluation; {fix}"
            )
            return


def warn_algorithm(spec: ExperimentSpec) -> None:
    """The algorithm's own warnings about this experiment (``config_questions.warnings``), the first one only."""
    from smac_rllib.algorithms import config_questions

    for config in spec.configs:
        messages = config_questions.warnings(config)
        if messages:
            from smac_rllib.cli.resources import warn

            warn(f"{spec.name}: {messages[0]}")
            return


def _describe_env(env) -> str:
    return " | ".join(env["grid_search"]) if isinstance(env, dict) and "grid_search" in env else str(env)


def run_experiment(spec: ExperimentSpec, args) -> int:
    from ray import tune

    from smac_rllib.cli.progress import ProgressPrinter, print_summary

    from smac_rllib.cli import checkpoints

    storage = storage_of(spec)
    name, restore = experiment_name(storage, spec.name, args.resume)
    exp_dir = os.path.join(storage, name)
    started = time.time()
    trainable = checkpoints.trainable(spec.run)  # atomic checkpoints, no retries for config errors (checkpoints.py)
    if restore:
        if args.stop or args.config or args.num_samples or args.seed is not None:
            from smac_rllib.cli.resources import warn

            warn("--stop/--config/--num-samples/--seed are ignored with --resume (the run continues as it started)")
        if "://" not in exp_dir:  # (its owner was checked before Ray started: check_resume)
            for path in checkpoints.remove_staging(exp_dir):
                print(
                    f"== {spec.name}: removed {path} (a checkpoint the interrupted run had not finished writing)",
                    flush=True,
                )
        print(f"== {spec.name}: resuming {exp_dir}", flush=True)
        logging.getLogger("ray.tune.execution.tune_controller").addFilter(StaleCheckpointFilter())
        tuner = tune.Tuner.restore(exp_dir, trainable=trainable, resume_unfinished=True, resume_errored=True)
        _add_interrupt_callback(tuner)  # runs started before Ctrl-C kept the work have none pickled
    else:
        print(
            f"== {spec.name}: {spec.run} on {_describe_env(spec.param_space['env'])}, {spec.num_trials} trial(s) -> "
            f"{exp_dir}",
            flush=True,
        )
        callbacks = [ProgressPrinter(stop=spec.stop), CheckpointOnInterrupt()]
        if spec.wandb is not None:
            callbacks.append(wandb_callback(spec, local_ray=not (args.address or os.environ.get("RAY_ADDRESS"))))
        tuner = tune.Tuner(
            trainable,
            param_space=spec.param_space,
            tune_config=tune.TuneConfig(
                num_samples=spec.num_samples,
                scheduler=build_scheduler(spec.scheduler),
                max_concurrent_trials=spec.max_concurrent_trials,
                trial_dirname_creator=trial_dirname,
            ),
            run_config=tune.RunConfig(
                name=name,
                storage_path=storage,
                stop=MetricStopper(spec.stop),
                checkpoint_config=tune.CheckpointConfig(**spec.checkpoint_config),
                failure_config=tune.FailureConfig(max_failures=spec.max_failures),
                callbacks=callbacks,
                verbose=1 if args.verbose else 0,
            ),
        )
    result_grid = tuner.fit()  # a Ctrl-C before Tune's loop started ends it at its first step: nothing runs

    interrupted = None
    if INTERRUPT.requested:  # the trials Tune's loop left unfinished; none when Ctrl-C came after the loop
        interrupted = set(INTERRUPT.unfinished or ())
    curves = None
    if not args.no_plot and interrupted is None:  # after Ctrl-C: stop now, the resumed run draws them
        curves = _plot_quietly(exp_dir)
    failed = print_summary(
        spec.name, exp_dir, result_grid, started, resume_command(args), curves, interrupted, spec.num_trials
    )
    if interrupted is not None:
        return EXIT_INTERRUPTED
    return EXIT_TRIAL_ERROR if failed else 0


def trial_dirname(trial) -> str:
    """``SMAC_1bc23_00001_latent_dim=8,num_particles=16``: trainable first (``rllib plot`` reads it)."""
    tag = re.sub(r"[^A-Za-z0-9_=.,+-]", "_", str(trial.experiment_tag).partition("_")[2])
    return f"{trial.trainable_name}_{trial.trial_id}" + (f"_{tag}" if tag else "")[:80]


def build_scheduler(block: dict | None):
    if not block:
        return None
    from ray.tune.schedulers import ASHAScheduler

    options = {k: v for k, v in block.items() if k != "type"}
    return ASHAScheduler(**options)


class MetricStopper(Stopper):
    """Stops a trial when any ``"a/b"`` criterion reaches its value; a metric not reported yet is not an error.

    Tune's dict ``stop`` raises when a key is missing from a result, e.g. an episode return before the first
    1000-step DMC episode ended (docs/design.md §3).
    """

    def __init__(self, criteria: dict[str, float]):
        self.criteria = dict(criteria)

    def __call__(self, trial_id: str, result: dict) -> bool:
        from smac_rllib.cli.progress import lookup

        for key, threshold in self.criteria.items():
            value = lookup(result, key)
            if isinstance(value, (int, float)) and value == value and value >= threshold:
                return True
        return False

    def stop_all(self) -> bool:
        return False


def _plot_quietly(exp_dir: str) -> str | None:
    from smac_rllib.cli.plot import plot_experiments
    from smac_rllib.cli.resources import warn

    out = os.path.join(exp_dir, "curves.png")
    try:
        return plot_experiments(exp_dir, out)
    except UserError as e:
        warn(f"no curves: {e}")
    except Exception as e:  # noqa: BLE001 - a plot must never fail a finished run
        warn(f"no curves: {one_line(e)}")
    return None


def _json_args(texts: list[str] | str | None, flag: str) -> dict | None:
    """``--config A --config B``: both JSON objects, merged in order (B's values win, nested mappings merge)."""
    if texts is None:
        return None
    from smac_rllib.cli.yaml_loader import _deep_merge

    merged: dict = {}
    for text in [texts] if isinstance(texts, str) else texts:
        merged = _deep_merge(merged, _json_arg(text, flag))
    return merged


def _json_arg(text: str, flag: str) -> dict:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        example = '{"training_iteration": 5}' if flag == "--stop" else '{"num_particles": 8}'
        raise UserError(
            f"{flag} is not valid JSON ({e.msg} at column {e.colno}); write e.g. {flag} '{example}'"
        ) from None
    if not isinstance(value, dict):
        raise UserError(f"{flag} must be a JSON object like '{{\"key\": value}}', got {text!r}")
    return value
