"""Live progress (one line per trial iteration) and the final summary of ``rllib train``.

A line reads::

    [0 latent_dim=4] it  12 | 12,000 steps | return eval 412 (it 10), train 380 | 96 steps/s | critic 0.812 ... | 31s

``eval`` is the evaluation return (the deterministic policy's episodes, ``evaluation/env_runners/...``) of this
iteration, or of the latest iteration that evaluated (``(it N)``), ``-`` before the first evaluation; ``train``
is the training return (the exploring policy's episodes). The summary reports both, and the best evaluation
return over training with the env step it was reached at (the paper's Table 1 statistic, per trial and as
mean +- std over seeds). Tune's own status tables are off (``verbose=0``) unless ``rllib train -v``.
"""

from __future__ import annotations

import math
import os
import time
from typing import Any

from ray import tune

from smac_rllib.cli.errors import one_line
from smac_rllib.cli.plot import (
    EVAL_MARKER,
    EVAL_RETURN,
    TRAIN_RETURN,
    action_repeat,
    group_trials,
    metric_rows,
    read_results,
    trial_info,
)

# (label, candidate result keys under learners/<module>/) -- SMAC, pixel SMAC, RLlib SAC
LOSS_KEYS = (
    ("world_model", ("world_model/loss",)),
    ("critic", ("critic/loss", "qf_loss")),
    ("actor", ("actor/loss", "policy_loss")),
    ("alpha", ("alpha/value", "alpha_value")),
    ("entropy", ("estimator/entropy_mlmc", "estimator/entropy")),
)
STEPS_KEYS = ("env_runners/num_env_steps_sampled_lifetime", "num_env_steps_sampled_lifetime")
RETURN_KEY = EVAL_RETURN  # what the progress lines, the summary and `rllib plot` report first


def lookup(result: dict, key: str, default: Any = None) -> Any:
    """``result["a"]["b"]`` for ``"a/b"`` (or a flat ``"a/b"`` key, as in progress.csv)."""
    if key in result:
        return result[key]
    node: Any = result
    for part in key.split("/"):
        if not isinstance(node, dict) or part not in node:
            return default
        node = node[part]
    return node


def env_steps(result: dict) -> int | None:
    for key in STEPS_KEYS:
        value = lookup(result, key)
        if isinstance(value, (int, float)):
            return int(value)
    return None


def finite(value: Any) -> float | None:
    return (
        float(value)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        else None
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


def _fmt(x: float) -> str:
    if x == 0 or 1e-3 <= abs(x) < 1e5:
        return f"{x:.3g}" if abs(x) < 10 else f"{x:.1f}"
    return f"{x:.2e}"


def format_duration(seconds: float) -> str:
    seconds = int(seconds)
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}h{m:02d}m" if h else (f"{m}m{s:02d}s" if m else f"{s}s")


_ITERATION_CLOCK: dict[
    str, tuple[float, float]
] = {}  # trial id -> (wall time its last result arrived, that iteration's s)


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
            from smac_rllib.cli.live import LiveWatcher

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
    from smac_rllib.cli.checkpoints import restorable

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
        parts.append(" ".join(f"{k} {_fmt(v)}" for k, v in metrics.items()))
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
        ev = _fmt(value)
    elif last_eval is not None:
        ev = f"{_fmt(last_eval[0])} (it {last_eval[1]})"
    elif repeated is not None:
        ev = f"{_fmt(repeated)} (earlier)"
    else:
        ev = "-"
    train = finite(lookup(result, TRAIN_RETURN))
    return f"eval {ev}, train {_fmt(train) if train is not None else '-'}"


def last_error_line(error_file: str | None) -> str:
    """The last non-empty line of a Tune error file (the exception), or a placeholder."""
    try:
        with open(error_file, encoding="utf-8", errors="replace") as f:
            lines = [line.strip() for line in f if line.strip()]
    except (OSError, TypeError):
        return "the trial failed"
    return lines[-1][:300] if lines else "the trial failed"


def return_history(rows: list[dict], key: str) -> list[tuple[int | None, float]]:
    """(env steps, value) of every result row with a finite ``key``, in iteration order."""
    return [(env_steps(row), v) for row in metric_rows(rows, key) for v in [finite(lookup(row, key))] if v is not None]


def describe_returns(history: list[tuple[int | None, float]], repeat: int = 1) -> str | None:
    """``last 805 (env step 1,000,000), best 845 (env step 450,000)``; frames too when ``repeat`` > 1."""
    if not history:
        return None

    def at(steps: int | None) -> str:
        if steps is None:
            return ""
        return f" (env step {steps:,} = frame {steps * repeat:,})" if repeat != 1 else f" (env step {steps:,})"

    last_steps, last = history[-1]
    best_steps, best = max(history, key=lambda h: h[1])  # the first time the best was reached
    return f"last {_fmt(last)}{at(last_steps)}, best {_fmt(best)}{at(best_steps)}"


def trial_evaluates(config: dict | None) -> bool | None:
    """Whether a trial's config evaluates (None: config unknown)."""
    if not isinstance(config, dict):
        return None
    return bool(config.get("evaluation_interval"))


def print_summary(
    name: str,
    exp_dir: str,
    result_grid,
    started: float,
    resume_hint: str,
    curves: str | None,
    interrupted: set[str] | None = None,
    planned: int | None = None,
) -> int:
    """Per-trial table (status, iterations, env steps, evaluation and training return: last and best with the env
    step of each, checkpoint), the best evaluation return over training as mean +- std over seeds (the paper's
    Table 1 statistic) when a setting has several seeds, and where everything is.

    ``interrupted``: after Ctrl-C, the paths of the trials the run left unfinished (their checkpoint is where
    ``resume_hint`` continues them); None when the run was not interrupted. ``planned``: the number of trials the
    experiment has (Tune creates some only when they start). Returns the number of failed trials.
    """
    rows, best_evals = [], []
    for result in result_grid:
        metrics = result.metrics or {}
        label = os.path.basename(result.path) if result.path else "?"
        history = read_results(result.path) if result.path else []
        if not history and metrics:
            history = [metrics]
        config = getattr(result, "config", None)
        repeat = action_repeat(config) if isinstance(config, dict) else 1
        evals = return_history(history, EVAL_RETURN)
        if evals and result.path:
            best_evals.append({**trial_info(result.path), "best": max(v for _, v in evals)})
        ev = describe_returns(evals, repeat)
        if ev is None:
            ev = (
                "- (evaluation is off: set evaluation_interval)"
                if trial_evaluates(config) is False
                else "- (no evaluation yet)"
            )
        train = describe_returns(return_history(history, TRAIN_RETURN), repeat) or "-"
        status = "ERROR" if result.error else ("INTERRUPTED" if interrupted and result.path in interrupted else "OK")
        ckpt = result.checkpoint.path if result.checkpoint else "-"
        error_txt = os.path.join(result.path or "", "error.txt")
        error = (
            (last_error_line(error_txt) if os.path.exists(error_txt) else one_line(result.error))
            if result.error
            else None
        )
        rows.append(
            (
                label,
                status,
                metrics.get("training_iteration", 0),
                env_steps(metrics),
                ev,
                train,
                ckpt,
                error,
                _run_facts(metrics, result.path, repeat),
            )
        )
    n_err = sum(r[1] == "ERROR" for r in rows)
    n_stopped = sum(r[1] == "INTERRUPTED" for r in rows)
    print("", flush=True)
    counts = f"{len(rows)} trial(s), {len(rows) - n_err - n_stopped} finished, {n_err} failed"
    took = format_duration(time.time() - started)
    if interrupted is None:
        print(f"== {name}: {counts}, {took}")
    else:
        print(f"== {name}: interrupted (Ctrl-C) after {took}: {counts}, {n_stopped} interrupted")
    for label, status, iters, steps, ev, train, ckpt, error, facts in rows:
        print(
            f"  {status:5} {label}\n        iterations {iters}, env steps "
            f"{f'{steps:,}' if steps is not None else '-'}{facts['run']}\n"
            f"        eval return  {ev}\n        train return {train}\n        checkpoint {ckpt}{facts['wandb']}"
        )
        if error:
            print(f"        error: {error}")
    if interrupted is not None and planned and planned > len(rows):
        print(f"  ({planned - len(rows)} more trial(s) not started yet)")
    for line in best_eval_lines(best_evals):
        print(line)
    print(f"Results:     {exp_dir}  (curves: rllib plot {exp_dir}; TensorBoard event files too)")
    if curves:
        print(f"Curves:      {curves}")
    last_ckpt = next((r[6] for r in rows if r[6] != "-"), None)  # (label, status, iters, steps, ev, train, ckpt, ...)
    if last_ckpt:
        print(f"Evaluate:    rllib evaluate {last_ckpt} --episodes 10 --video eval.mp4")
    if interrupted is not None or any(r[1] == "ERROR" and (r[2] or r[6] != "-") for r in rows):
        how = "  # continues the interrupted trials from their checkpoints" if n_stopped else ""
        print(f"Resume:      {resume_hint}{how}")
    elif n_err:  # every failed trial failed before its first iteration: a resume would start it again the same way
        print(
            "Fix:         the failed trial(s) stopped before their first iteration (error above); --resume would "
            "repeat it: fix the cause, then run the command again"
        )
    print("", flush=True)
    return n_err


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


def _run_facts(metrics: dict, path: str | None, repeat: int) -> dict[str, str]:
    """Frames, wall time and updates per second of a trial, and where its W&B run is (summary lines)."""
    parts = []
    steps = env_steps(metrics)
    if steps is not None and repeat > 1:
        parts.append(f"{steps * repeat:,} frames")
    wall = finite(metrics.get("time_total_s"))
    if wall:
        parts.append(f"wall {format_duration(wall)}")
        updates = finite(metrics.get("num_updates_lifetime"))
        if updates:
            parts.append(f"{updates / wall:.1f} updates/s")
    wandb_dir = os.path.join(path, "wandb") if path else None
    return {
        "run": (", " + ", ".join(parts)) if parts else "",
        "wandb": f"\n        W&B run    {wandb_dir}" if wandb_dir and os.path.isdir(wandb_dir) else "",
    }


def best_eval_lines(trials: list[dict]) -> list[str]:
    """Best evaluation return over training, mean +- std over the seeds of each setting (paper Table 1); nothing
    unless some setting has two or more seeds."""
    groups = group_trials(trials)
    if not any(len(members) > 1 for members in groups.values()):
        return []
    lines = ["Best eval return over training, mean +- std over seeds (paper Table 1):"]
    for (env, label), members in sorted(groups.items()):
        best = [t["best"] for t in members]
        mean = sum(best) / len(best)
        std = math.sqrt(sum((b - mean) ** 2 for b in best) / (len(best) - 1)) if len(best) > 1 else 0.0
        lines.append(f"  {env} {label}: {_fmt(mean)} +- {_fmt(std)} (n={len(best)})")
    return lines
