"""Live progress (one line per trial iteration) and the final summary of ``rllib train``.

A line reads::

    [0 latent_dim=4] it 3 | 300 steps | return 41.2 | 96 steps/s | critic/loss 0.812 actor/loss -0.31 alpha 0.098 | 31s

Tune's own status tables are off (``verbose=0``) unless ``rllib train -v``.
"""

from __future__ import annotations

import math
import os
import time
from typing import Any

from ray import tune

from smac_rllib.cli.errors import one_line
from smac_rllib.cli.plot import read_results

# (label, candidate result keys under learners/<module>/) -- SMAC, pixel SMAC, RLlib SAC
LOSS_KEYS = (
    ("world_model", ("world_model/loss",)),
    ("critic", ("critic/loss", "qf_loss")),
    ("actor", ("actor/loss", "policy_loss")),
    ("alpha", ("alpha/value", "alpha_value")),
    ("entropy", ("estimator/entropy_mlmc", "estimator/entropy")),
)
STEPS_KEYS = ("env_runners/num_env_steps_sampled_lifetime", "num_env_steps_sampled_lifetime")
RETURN_KEY = "env_runners/episode_return_mean"


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


class ProgressPrinter(tune.Callback):
    """Prints each trial's start, every iteration, checkpoints, errors and completion (pickled with the run)."""

    def __init__(self):
        self._last: dict[str, tuple[int, float]] = {}  # trial_id -> (env steps, time_total_s)

    def on_trial_start(self, iteration, trials, trial, **info):
        print(f"[{trial_label(trial)}] started  {trial.path}", flush=True)

    def on_trial_restore(self, iteration, trials, trial, **info):
        print(f"[{trial_label(trial)}] restored from its last checkpoint", flush=True)

    def on_trial_result(self, iteration, trials, trial, result, **info):
        print(format_result(trial_label(trial), result, self._last.get(trial.trial_id)), flush=True)
        steps = env_steps(result)
        if steps is not None:
            self._last[trial.trial_id] = (steps, float(result.get("time_total_s", 0.0)))

    def on_checkpoint(self, iteration, trials, trial, checkpoint, **info):
        print(f"[{trial_label(trial)}] checkpoint {getattr(checkpoint, 'path', checkpoint)}", flush=True)

    def on_trial_complete(self, iteration, trials, trial, **info):
        print(f"[{trial_label(trial)}] done", flush=True)

    def on_trial_error(self, iteration, trials, trial, **info):
        error_file = _error_file(trial)
        print(f"[{trial_label(trial)}] ERROR: {last_error_line(error_file)}  (details: {error_file})", flush=True)


def _error_file(trial) -> str | None:
    """The trial's error.txt in the storage path (what stays), else Tune's local staging copy."""
    name = getattr(getattr(trial, "run_metadata", None), "error_filename", None) or "error.txt"
    stored = os.path.join(trial.path or "", name)
    return stored if os.path.exists(stored) else getattr(trial, "error_file", None) or stored


def format_result(label: str, result: dict, last: tuple[int, float] | None = None) -> str:
    parts = [f"it {result.get('training_iteration', '?'):>3}"]
    steps = env_steps(result)
    if steps is not None:
        parts.append(f"{steps:,} steps")
    ret = lookup(result, RETURN_KEY)
    parts.append(f"return {_fmt(ret)}" if isinstance(ret, (int, float)) and math.isfinite(ret) else "return -")
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


def last_error_line(error_file: str | None) -> str:
    """The last non-empty line of a Tune error file (the exception), or a placeholder."""
    try:
        with open(error_file, encoding="utf-8", errors="replace") as f:
            lines = [line.strip() for line in f if line.strip()]
    except (OSError, TypeError):
        return "the trial failed"
    return lines[-1][:300] if lines else "the trial failed"


def print_summary(name: str, exp_dir: str, result_grid, started: float, resume_hint: str, curves: str | None) -> tuple[int, int]:
    """Per-trial table (status, iterations, env steps, last/best return, checkpoint) and where everything is.

    Returns (failed, interrupted) trial counts.
    """
    rows = []
    for result in result_grid:
        metrics = result.metrics or {}
        label = os.path.basename(result.path) if result.path else "?"
        returns = [lookup(row, RETURN_KEY) for row in read_results(result.path)] if result.path else []
        returns = [r for r in returns if isinstance(r, (int, float)) and math.isfinite(r)]
        best = max(returns) if returns else None
        ret = lookup(metrics, RETURN_KEY)
        status = "ERROR" if result.error else "OK"
        ckpt = result.checkpoint.path if result.checkpoint else "-"
        error_txt = os.path.join(result.path or "", "error.txt")
        error = (last_error_line(error_txt) if os.path.exists(error_txt) else one_line(result.error)) if result.error else None
        rows.append((label, status, metrics.get("training_iteration", 0), env_steps(metrics), ret, best, ckpt, error))
    trials = getattr(getattr(result_grid, "_experiment_analysis", None), "trials", None) or []
    unfinished = sum(str(getattr(t, "status", "")) not in ("TERMINATED", "ERROR") for t in trials)
    n_err = sum(r[1] == "ERROR" for r in rows)
    print("", flush=True)
    stopped = f", {unfinished} interrupted" if unfinished else ""
    print(f"== {name}: {len(rows)} trial(s), {len(rows) - n_err - unfinished} finished, {n_err} failed{stopped}, "
          f"{format_duration(time.time() - started)}")
    for label, status, iters, steps, ret, best, ckpt, error in rows:
        r = _fmt(ret) if isinstance(ret, (int, float)) and math.isfinite(ret) else "-"
        b = _fmt(best) if best is not None and math.isfinite(best) else "-"
        print(f"  {status:5} {label}\n        iterations {iters}, env steps {steps if steps is not None else '-'}, "
              f"return last {r} best {b}\n        checkpoint {ckpt}")
        if error:
            print(f"        error: {error}")
    print(f"Results:     {exp_dir}  (tensorboard --logdir {exp_dir})")
    if curves:
        print(f"Curves:      {curves}")
    last_ckpt = next((r[6] for r in rows if r[6] != "-"), None)
    if last_ckpt:
        print(f"Evaluate:    rllib evaluate {last_ckpt} --episodes 10 --video eval.mp4")
    if n_err or unfinished:
        print(f"Resume:      {resume_hint}")
    print("", flush=True)
    return n_err, unfinished
