"""Live progress of ``rllib train``: one line per trial iteration, and the trials' starts, checkpoints and errors.

A line reads::

    [0 latent_dim=4] it  12 | 12,000 steps | return eval 412 (it 10), train 380 | 96 steps/s | critic 0.812 ... | 31s

``eval`` is the evaluation return (the deterministic policy's episodes, ``evaluation/env_runners/...``) of this
iteration, or of the latest iteration that evaluated (``(it N)``), ``-`` before the first evaluation; ``train``
is the training return (the exploring policy's episodes); the summary at the end is ``summary.py``. Tune's own
status tables are off (``verbose=0``) unless ``rllib train -v``.
"""

from __future__ import annotations

import math
import os
import time

from ray import tune

from smac_rllib.cli.checkpoints import restorable
from smac_rllib.cli.errors import one_line
from smac_rllib.cli.live import LiveWatcher
from smac_rllib.cli.results import (
    EVAL_MARKER,
    EVAL_RETURN,
    TRAIN_RETURN,
    env_steps,
    finite,
    format_duration,
    format_number,
    lookup,
)

# (label, candidate result keys under learners/<module>/) -- SMAC, pixel SMAC, RLlib SAC
LOSS_KEYS = (
    ("world_model", ("world_model/loss",)),
    ("critic", ("critic/loss", "qf_loss")),
    ("actor", ("actor/loss", "policy_loss")),
    ("alpha", ("alpha/value", "alpha_value")),
    ("entropy", ("estimator/entropy_mlmc", "estimator/entropy")),
)


def learner_metrics(result: dict) -> dict[str, float]:
    learners = result.get("learners") or {}
    module = next((v for k, v in learners.items() if k != "__all_modules__" and isinstance(v, dict)), {})
    out = {}
    for label, keys in LOSS_KEYS:
        for key in keys:
            value = module.get(key)
            if isinstance(value, (int, float)) and math.isfinite(value):
                out[label] = float(value)
                break
    return out


def trial_label(trial) -> str:
    """``"0"`` or ``"1 latent_dim=8,num_particles=16"`` (the grid values; Tune's experiment tag)."""
    tag = getattr(trial, "experiment_tag", "") or ""
    index, _, params = str(tag).partition("_")
    return f"{index} {params}".strip() if params else (index or str(trial))


# trial id -> (wall time its last result arrived, that iteration's s)
_ITERATION_CLOCK: dict[str, tuple[float, float]] = {}


def iteration_wait_estimate(now: float | None = None) -> float | None:
    """Seconds until the slowest running trial's current iteration ends, if its iterations last as long as its last
    one (what a Ctrl-C waits for before the checkpoints); None before any result."""
    if not _ITERATION_CLOCK:
        return None
    now = time.time() if now is None else now
    return max(max(0.0, iter_s - (now - arrived)) for arrived, iter_s in _ITERATION_CLOCK.values())


class ProgressPrinter(tune.Callback):
    """Prints each trial's start, every iteration, checkpoints, errors and completion (pickled with the run)."""

    def __init__(self, stop: dict | None = None):
        self._last: dict[str, tuple[int, float]] = {}  # trial_id -> (env steps, time_total_s)
        self._last_eval: dict[str, tuple[float, int]] = {}  # trial_id -> (evaluation return, its iteration)
        self._stop = dict(stop or {})
        self._last_result: dict[str, dict] = {}  # trial_id -> the few fields of its last result the live lines use
        self._live = None

    def on_step_end(self, iteration, trials, **info):
        """Progress inside long iterations: one line per new ``progress_live.json`` record (cli/live.py)."""
        if getattr(self, "_live", None) is None:
            self._live = LiveWatcher()
        for line in self._live.new_lines(
            trials, trial_label, getattr(self, "_stop", {}), getattr(self, "_last_result", {})
        ):
            print(line, flush=True)

    def on_trial_start(self, iteration, trials, trial, **info):
        checkpoint = getattr(trial, "checkpoint", None)  # set: Tune restores the trial from it (--resume, a retry)
        restoring = f", restoring from {describe_restore(checkpoint)}" if checkpoint is not None else ""
        print(f"[{trial_label(trial)}] started  {trial.path}{restoring}", flush=True)

    def on_trial_restore(self, iteration, trials, trial, **info):
        print(
            f"[{trial_label(trial)}] restored from {describe_restore(getattr(trial, 'checkpoint', None))}", flush=True
        )

    def on_trial_result(self, iteration, trials, trial, result, **info):
        if not hasattr(self, "_last_result"):  # a callback pickled by an older version (--resume)
            self._last_result, self._stop, self._live = {}, {}, None
        line = format_result(
            trial_label(trial), result, self._last.get(trial.trial_id), self._last_eval.get(trial.trial_id)
        )
        eta = eta_after_result(result, self._stop, self._last.get(trial.trial_id))
        print(line + (f" | stop in ~{eta}" if eta else ""), flush=True)
        _ITERATION_CLOCK[trial.trial_id] = (time.time(), float(result.get("time_this_iter_s", 0.0)))
        self._last_result[trial.trial_id] = {
            "training_iteration": result.get("training_iteration", 0),
            "time_total_s": result.get("time_total_s", 0.0),
            "env_runners": {"num_env_steps_sampled_lifetime": env_steps(result)},
        }
        steps = env_steps(result)
        if steps is not None:
            self._last[trial.trial_id] = (steps, float(result.get("time_total_s", 0.0)))
        value = fresh_evaluation(result)
        if value is not None:
            self._last_eval[trial.trial_id] = (value, int(result.get("training_iteration", 0)))

    def on_checkpoint(self, iteration, trials, trial, checkpoint, **info):
        print(f"[{trial_label(trial)}] checkpoint {getattr(checkpoint, 'path', checkpoint)}", flush=True)

    def on_trial_complete(self, iteration, trials, trial, **info):
        _ITERATION_CLOCK.pop(trial.trial_id, None)
        print(f"[{trial_label(trial)}] done", flush=True)

    def on_trial_error(self, iteration, trials, trial, **info):
        error_file = _error_file(trial)
        print(f"[{trial_label(trial)}] ERROR: {last_error_line(error_file)}  (details: {error_file})", flush=True)


def describe_restore(checkpoint) -> str:
    """``<path>`` of the checkpoint a trial was restored from; an incomplete one is named with the complete one
    that the trainable loaded instead (checkpoints.restorable, the same choice)."""
    path = getattr(checkpoint, "path", None)
    if not path:
        return "its last checkpoint"
    if not os.path.isdir(path):
        return str(path)
    try:
        chosen, skipped = restorable(path)
    except ValueError as e:
        return f"{path} ({one_line(e)})"
    return f"{chosen} ({skipped})" if skipped else str(chosen)


def _error_file(trial) -> str | None:
    """The trial's error.txt in the storage path (what stays), else Tune's local staging copy."""
    name = getattr(getattr(trial, "run_metadata", None), "error_filename", None) or "error.txt"
    stored = os.path.join(trial.path or "", name)
    return stored if os.path.exists(stored) else getattr(trial, "error_file", None) or stored


def format_result(
    label: str, result: dict, last: tuple[int, float] | None = None, last_eval: tuple[float, int] | None = None
) -> str:
    """One progress line; ``last`` = (env steps, time) of the previous line, ``last_eval`` = (evaluation return,
    iteration) of the latest evaluation before this result."""
    parts = [f"it {result.get('training_iteration', '?'):>3}"]
    steps = env_steps(result)
    if steps is not None:
        parts.append(f"{steps:,} steps")
    parts.append(f"return {format_returns(result, last_eval)}")
    total = float(result.get("time_total_s", 0.0))
    if steps is not None:
        prev_steps, prev_time = last if last else (0, total - float(result.get("time_this_iter_s", total)))
        if total > prev_time:
            parts.append(f"{(steps - prev_steps) / (total - prev_time):.0f} steps/s")
    metrics = learner_metrics(result)
    if metrics:
        parts.append(" ".join(f"{k} {format_number(v)}" for k, v in metrics.items()))
    parts.append(format_duration(total))
    return f"[{label}] " + " | ".join(parts)


def fresh_evaluation(result: dict) -> float | None:
    """The evaluation return of an iteration that evaluated; None in the iterations between evaluations (RLlib
    repeats the latest evaluation's metrics there, without ``EVAL_MARKER``)."""
    if lookup(result, EVAL_MARKER) is None:
        return None
    return finite(lookup(result, EVAL_RETURN))


def format_returns(result: dict, last_eval: tuple[float, int] | None = None) -> str:
    """``eval 412, train 380`` | ``eval 412 (it 10), train 380`` (an earlier evaluation) | ``eval -, train 380``."""
    value, repeated = fresh_evaluation(result), finite(lookup(result, EVAL_RETURN))
    if value is not None:
        ev = format_number(value)
    elif last_eval is not None:
        ev = f"{format_number(last_eval[0])} (it {last_eval[1]})"
    elif repeated is not None:
        ev = f"{format_number(repeated)} (earlier)"
    else:
        ev = "-"
    train = finite(lookup(result, TRAIN_RETURN))
    return f"eval {ev}, train {format_number(train) if train is not None else '-'}"


def last_error_line(error_file: str | None) -> str:
    """The last non-empty line of a Tune error file (the exception), or a placeholder."""
    try:
        with open(error_file, encoding="utf-8", errors="replace") as f:
            lines = [line.strip() for line in f if line.strip()]
    except (OSError, TypeError):
        return "the trial failed"
    return lines[-1][:300] if lines else "the trial failed"


def eta_after_result(result: dict, stop: dict, last: tuple[int, float] | None) -> str | None:
    """Time to the stop criterion from the last iteration's pace (the live lines' estimate, cli/live.py)."""
    total, this_iter = float(result.get("time_total_s", 0.0)), float(result.get("time_this_iter_s", 0.0))
    if "training_iteration" in stop and this_iter > 0:
        return format_duration(
            max(0, stop["training_iteration"] - int(result.get("training_iteration", 0))) * this_iter
        )
    if "time_total_s" in stop:
        return format_duration(max(0.0, float(stop["time_total_s"]) - total))
    steps = env_steps(result)
    key = next((k for k in stop if k.endswith("num_env_steps_sampled_lifetime")), None)
    if key is not None and steps is not None:
        prev_steps, prev_time = last if last else (0, total - this_iter)
        if steps > prev_steps and total > prev_time:
            return format_duration(max(0.0, float(stop[key]) - steps) * (total - prev_time) / (steps - prev_steps))
    return None
