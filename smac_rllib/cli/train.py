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

import logging
import os
import re
import time

from ray import tune
from ray.tune.schedulers import ASHAScheduler
from ray.tune.stopper import Stopper

import smac_rllib
from smac_rllib.cli import checkpoints, experiment_parts, ranking, resources
from smac_rllib.cli.errors import (
    EXIT_INTERRUPTED,
    EXIT_TRIAL_ERROR,
    EXIT_USER_ERROR,
    UserError,
    one_line,
    resume_command,
    warn,
)
from smac_rllib.cli.experiment_spec import ExperimentSpec
from smac_rllib.cli.checkpoint_disk import warn_checkpoint_cadence, warn_wandb_uploads
from smac_rllib.cli.horizon import check_horizon
from smac_rllib.cli.update_budget import check_actor_updates, warn_update_budget
from smac_rllib.cli.tune_horizon import seconds_rung_past_stop, time_stop_before_evaluation
from smac_rllib.cli import overdue
from smac_rllib.cli.interrupt import INTERRUPT, CheckpointOnInterrupt, _add_interrupt_callback, catch_ctrl_c
from smac_rllib.cli.pending import PendingReporter
from smac_rllib.cli.plot import plot_experiments
from smac_rllib.cli.preflight import (
    describe_env,
    print_dry_run,
    warn_algorithm,
    warn_asha_one_trial,
    warn_far_first_evaluation,
)
from smac_rllib.cli.progress import ProgressPrinter
from smac_rllib.cli.ray_output import ConfigErrorFilter, StaleCheckpointFilter, StateCopyRaceFilter, quiet_ray_notices
from smac_rllib.cli.ray_start import check_before_ray, start_ray
from smac_rllib.cli.results import lookup
from smac_rllib.cli.resume_stop import effective_stop, stop_text, trials_to_continue
from smac_rllib.cli.resume_stop import install as install_stop
from smac_rllib.cli.storage import check_not_in_experiment, check_resume, experiment_name, storage_of
from smac_rllib.cli.summary import print_summary

# Runs started before wandb_logging.py split off pickled its callbacks as smac_rllib.cli.train.<name>: the names stay
# importable here for --resume (as MetricStopper and trial_dirname, which every run pickles).
from smac_rllib.cli.wandb_logging import _WandbCallback, check_api_key, wandb_callback  # noqa: F401
from smac_rllib.cli.yaml_loader import load_experiments


def run_train(args) -> int:
    """``args.overrides``: the command line's values, read by ``main.py`` (``Overrides.from_args``) before Ray."""
    smac_rllib.register()
    experiment_parts.NOTES[:] = args.overrides.notes if args.overrides else []  # not an earlier read's (tests)
    specs = load_experiments(args.path, args.overrides)
    own_stop = args.overrides is None or args.overrides.stop is None  # the file's own, not a smoke test's
    for spec in specs:
        check_horizon(spec)  # settings against the stop and the task (one-line UserError)
        check_actor_updates(spec)
        if own_stop:
            warn_checkpoint_cadence(spec)
        warn_asha_one_trial(spec)
        warn_far_first_evaluation(spec)
        warn_wandb_uploads(spec)
        warn_algorithm(spec)
        resources.warn_small_requests(spec)
        check_api_key(spec)  # online W&B without a key: one line, not Tune's traceback
    experiment_parts.print_notes()  # what the files left to defaults, once nothing was refused
    if args.resume:
        done = check_resume(specs, trust=getattr(args, "trust", False))
        specs = [spec for spec in specs if all(spec is not d for d in done)]
        if not specs:
            return 0  # every experiment had ended: no Ray to start
    else:
        check_not_in_experiment(specs)
    if not (args.address or os.environ.get("RAY_ADDRESS")):  # a cluster's nodes have their own memory
        resources.check_memory(specs, gpus=resources.local_gpus())
        resources.check_local_cpus(specs)
        resources.check_local_placement(specs)  # one node: no STRICT_SPREAD
    for spec in specs:  # once nothing is refused: what the run's updates amount to
        warn_update_budget(spec, own_stop)
    if args.dry_run:
        check_before_ray(args, specs)  # the cluster answers as one; the warnings a local Ray's start prints
        print_dry_run(specs)
        return 0
    start_ray(args, specs)
    checkpoints.install_retry_policy()
    ranking.install_nested_score_ranking()  # num_to_keep keeps the best by a nested score key (ranking.py)
    ConfigErrorFilter.install()
    if not args.verbose:
        quiet_ray_notices()
        StateCopyRaceFilter.install()

    worst = 0
    with catch_ctrl_c():
        for spec in specs:
            code = run_experiment(spec, args)
            if code == EXIT_INTERRUPTED:
                return code  # Ctrl-C: do not start the next experiment
            worst = max(worst, code)
    return worst


def run_experiment(spec: ExperimentSpec, args) -> int:
    storage = storage_of(spec)
    name, restore = experiment_name(storage, spec.name, args.resume)
    exp_dir = os.path.join(storage, name)
    started = time.time()
    trainable = checkpoints.trainable(spec.run)  # atomic checkpoints, no retries for config errors (checkpoints.py)
    if restore:
        if args.config or args.num_samples or args.seed is not None:
            warn("--config/--num-samples/--seed are ignored with --resume (the run continues as it started)")
        # the stop is the file's (or --stop's) now: finished trials that reached the old one continue (resume_stop.py)
        local = "://" not in exp_dir  # remote storage: Tune reads its experiment state itself
        stop, note = effective_stop(exp_dir, spec.stop) if local else (spec.stop, None)
        if note:
            print(f"== {spec.name}: {note}", flush=True)
        continued = trials_to_continue(exp_dir, stop, spec.scheduler, spec.source) if local else []
        if local:  # (its owner was checked before Ray started: check_resume)
            for path in checkpoints.remove_staging(exp_dir):
                print(
                    f"== {spec.name}: removed {path} (a checkpoint the interrupted run had not finished writing)",
                    flush=True,
                )
        print(f"== {spec.name}: resuming {exp_dir}", flush=True)
        logging.getLogger("ray.tune.execution.tune_controller").addFilter(StaleCheckpointFilter())
        tuner = tune.Tuner.restore(exp_dir, trainable=trainable, resume_unfinished=True, resume_errored=True)
        _add_interrupt_callback(tuner)  # runs started before Ctrl-C kept the work have none pickled
        if not install_stop(tuner, MetricStopper(stop), {t.trial_id for t in continued}):
            warn(f"this Tune hides the restored run's stopper: {spec.name} continues with the stop it started with")
        elif continued:
            continuing = f"{len(continued)} finished trial(s) continue"
            print(f"== {spec.name}: stop now {stop_text(stop)}: {continuing}", flush=True)
    else:
        print(
            f"== {spec.name}: {spec.run} on {describe_env(spec.param_space['env'])}, {spec.num_trials} trial(s) -> "
            f"{exp_dir}",
            flush=True,
        )
        cluster = bool(args.address or os.environ.get("RAY_ADDRESS"))
        callbacks = [ProgressPrinter(stop=spec.stop), CheckpointOnInterrupt(), PendingReporter(cluster=cluster)]
        if spec.wandb is not None:
            callbacks.append(wandb_callback(spec, local_ray=not cluster))
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
                stop=MetricStopper(
                    spec.stop,
                    overdue.watched_keys(spec.stop, spec.checkpoint_config, spec.scheduler),
                    spec.source,
                    spec.scheduler,
                ),
                checkpoint_config=tune.CheckpointConfig(**spec.checkpoint_config),
                failure_config=tune.FailureConfig(max_failures=spec.max_failures),
                callbacks=callbacks,
                verbose=1 if args.verbose else 0,
                log_to_file=spec.log_to_file,  # written in the trial's working dir: synced to its directory
                sync_config=tune.SyncConfig(sync_artifacts=bool(spec.log_to_file)),
            ),
        )
    overdue.OVERDUE.clear()
    result_grid = tuner.fit()  # a Ctrl-C before Tune's loop started ends it at its first step: nothing runs

    interrupted = None
    if INTERRUPT.requested:  # the trials Tune's loop left unfinished; none when Ctrl-C came after the loop
        interrupted = set(INTERRUPT.unfinished or ())
    curves = None
    if not args.no_plot and interrupted is None:  # after Ctrl-C: stop now, the resumed run draws them
        curves = _plot_quietly(exp_dir)
    failed = print_summary(
        spec.name, exp_dir, result_grid, started, resume_command(args), curves, interrupted, spec.num_trials, spec.stop
    )
    if interrupted is not None:
        return EXIT_INTERRUPTED
    if overdue.OVERDUE:  # a stop / score key that never comes: printed when found (overdue.py), a config mistake
        return EXIT_USER_ERROR
    return EXIT_TRIAL_ERROR if failed else 0


def trial_dirname(trial) -> str:
    """``SMAC_1bc23_00001_latent_dim=8,num_particles=16``: trainable first (``rllib plot`` reads it)."""
    tag = re.sub(r"[^A-Za-z0-9_=.,+-]", "_", str(trial.experiment_tag).partition("_")[2])
    return f"{trial.trainable_name}_{trial.trial_id}" + (f"_{tag}" if tag else "")[:80]


def build_scheduler(block: dict | None):
    if not block:
        return None
    options = {k: v for k, v in block.items() if k != "type"}
    return ASHAScheduler(**options)


class MetricStopper(Stopper):
    """Stops a trial when any ``"a/b"`` criterion reaches its value; a metric not reported yet is not an error, one
    that never comes is: a watched key (the criteria, the checkpoint score, the scheduler's metrics) missing once it
    must be there stops the run with one line (overdue.py; ``rllib`` then exits with 2).

    Tune's dict ``stop`` raises when a key is missing from a result, e.g. an episode return before the first
    1000-step DMC episode ended (docs/design.md §3).
    """

    def __init__(
        self,
        criteria: dict[str, float],
        watch: dict[str, str] | None = None,
        where: str | None = None,
        scheduler: dict | None = None,
    ):
        self.criteria = dict(criteria)
        self.watch = overdue.KeyWatch(watch if watch is not None else dict.fromkeys(criteria, "stop criterion"), where)
        self.scheduler = scheduler  # ASHA's rungs in seconds: compared with the stop at the measured pace, once

    def _warn_rungs(self, result: dict) -> None:
        """Settings compared with the stop once the trial's pace is known (tune_horizon.py), each said once per run."""
        if getattr(self, "scheduler", None) and (
            message := seconds_rung_past_stop(self.scheduler, self.criteria, result)
        ):
            warn(message)
            self.scheduler = None
        if not getattr(self, "evaluation_said", False) and (
            message := time_stop_before_evaluation(self.criteria, result)
        ):
            warn(message)
            self.evaluation_said = True

    def __call__(self, trial_id: str, result: dict) -> bool:
        self._warn_rungs(result)
        watch = getattr(self, "watch", None)  # None: pickled by a version without it (--resume)
        if watch is not None:
            message = watch.check(trial_id, result)
            if message:
                overdue.report(message)
                return True
        for key, threshold in self.criteria.items():
            value = lookup(result, key)
            if isinstance(value, (int, float)) and value == value and value >= threshold:
                return True
        return False

    def stop_all(self) -> bool:
        """A key that never comes is a mistake of the experiment: no other trial of it starts."""
        watch = getattr(self, "watch", None)
        return watch is not None and watch.overdue is not None


def _plot_quietly(exp_dir: str) -> str | None:
    out = os.path.join(exp_dir, "curves.png")
    try:
        return plot_experiments(exp_dir, out)
    except UserError as e:
        warn(f"no curves: {e}")
    except Exception as e:  # noqa: BLE001 - a plot must never fail a finished run
        warn(f"no curves: {one_line(e)}")
    return None
