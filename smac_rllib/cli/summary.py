"""The summary that ends an experiment of ``rllib train``: per trial its status, iterations, env steps, evaluation
and training return (last and best, with the env step of each), checkpoint and error; the best evaluation return over
training as mean +- std over seeds (the paper's Table 1 statistic); and where the results, curves and the ``--resume``
command are."""

from __future__ import annotations

import math
import os
import shlex
import time

from smac_rllib.cli import overdue
from smac_rllib.cli.errors import one_line
from smac_rllib.cli.plot import group_trials
from smac_rllib.cli.progress import last_error_line
from smac_rllib.cli.wandb_key import runs_dir
from smac_rllib.cli.results import (
    EVAL_RETURN,
    TRAIN_RETURN,
    action_repeat,
    env_steps,
    finite,
    format_duration,
    format_number,
    lookup,
    metric_rows,
    read_results,
    trial_info,
)


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
    return f"last {format_number(last)}{at(last_steps)}, best {format_number(best)}{at(best_steps)}"


def _met(metrics: dict, stop: dict) -> bool:
    """Whether a trial's last result meets a criterion of the stop (Tune stops at result >= value)."""
    for key, value in stop.items():
        reached = lookup(metrics, key)
        if isinstance(reached, (int, float)) and reached >= value:
            return True
    return False


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
    stop: dict | None = None,
) -> int:
    """Per-trial table (status, iterations, env steps, evaluation and training return: last and best with the env
    step of each, checkpoint), the best evaluation return over training as mean +- std over seeds (the paper's
    Table 1 statistic) when a setting has several seeds, and where everything is.

    ``interrupted``: after Ctrl-C, the paths of the trials the run left unfinished (their checkpoint is where
    ``resume_hint`` continues them); None when the run was not interrupted. ``planned``: the number of trials the
    experiment has (Tune creates some only when they start). ``stop``: the experiment's stop; a trial that ended
    without an error before any criterion of it was met was cut by the scheduler (ASHA): CUT, not OK.
    Returns the number of failed trials.
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
        if status == "OK" and stop and interrupted is None and not overdue.OVERDUE and not _met(metrics, stop):
            status = "CUT"
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
    n_cut = sum(r[1] == "CUT" for r in rows)
    print("", flush=True)
    counts = f"{len(rows)} trial(s), {len(rows) - n_err - n_stopped - n_cut} finished, {n_err} failed"
    if n_cut:
        counts += f", {n_cut} cut before the stop by the scheduler"
    if overdue.OVERDUE:  # the run was ended by a key no result reports (its error line came during the run)
        counts = f"{len(rows)} trial(s) ended early by a key no result reports (the error above), {n_err} failed"
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
    print(f"Results:     {exp_dir}  (curves: rllib plot {shlex.quote(exp_dir)}; TensorBoard event files too)")
    if curves:
        print(f"Curves:      {curves}")
    last_ckpt = next((r[6] for r in rows if r[6] != "-"), None)  # (label, status, iters, steps, ev, train, ckpt, ...)
    if last_ckpt:
        print(f"Evaluate:    rllib evaluate {shlex.quote(last_ckpt)} --episodes 10 --video eval.mp4")
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
    wandb_dir = runs_dir(path) if path else None
    wandb = ""
    if wandb_dir and os.path.isdir(wandb_dir):
        offline = any(name.startswith("offline-run-") for name in os.listdir(wandb_dir))
        wandb = f"\n        W&B run    {wandb_dir}" + (
            f" (offline: upload with `wandb sync {shlex.quote(wandb_dir)}/offline-run-*`)" if offline else ""
        )
    return {"run": (", " + ", ".join(parts)) if parts else "", "wandb": wandb}


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
        lines.append(f"  {env} {label}: {format_number(mean)} +- {format_number(std)} (n={len(best)})")
    return lines
