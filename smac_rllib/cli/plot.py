"""``rllib plot RESULTS_DIR``: return vs environment frames, mean and 95% interval over seeds (paper Figs. 4-5).

The y axis is the evaluation return by default: the mean return of the deterministic policy's evaluation
episodes (``evaluation/env_runners/episode_return_mean``, from the ``.evaluation(...)`` settings every tuned
example has), as the paper reports it. A run without evaluation results falls back to the training return
(``env_runners/episode_return_mean``, the exploring policy's episodes), labelled as such; ``--metric`` picks any
other result key (``--metric env_runners/episode_return_mean`` for the training return).

Reads every Tune trial directory under RESULTS_DIR (``result.json`` + ``params.json``). Trials that differ only
in their seed form one line: the algorithm (from the trial directory name), K and latent dim when set, and
any other setting that differs between trials. One panel per env. The x axis is agent steps times the action
repeat (= frames, as in the paper's pixel plots; equal to env steps from states). The band is the 95%
Student-t interval of the mean over seeds, each seed linearly interpolated onto a common grid.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections import defaultdict
from typing import Any

import numpy as np

from smac_rllib.cli.errors import UserError, note
from smac_rllib.cli.results import (
    EVAL_RETURN,
    TRAIN_RETURN,
    env_steps,
    lookup,
    metric_rows,
    modern_metric,
    read_results,
    trial_info,
)

METRIC_LABELS = {
    EVAL_RETURN: "evaluation return (deterministic policy)",
    TRAIN_RETURN: "training return (exploring policy)",
}
SEED_KEYS = ("seed", "env_config.seed")
NAMED = {"num_particles": "K", "latent_dim": "latent"}  # always in the label when set


def run_plot(args) -> int:
    out = args.out or os.path.join(args.results_dir, "curves.png")
    if os.path.isdir(out) or out.endswith(os.sep):  # a directory: the plot goes into it
        out = os.path.join(out, "curves.png")
    ext = os.path.splitext(out)[1].lower()
    if ext not in (".png", ".pdf", ".svg", ".jpg", ".jpeg"):
        raise UserError(
            f"--out {args.out}: write the plot to a .png, .pdf, .svg or .jpg file, or to a directory "
            "(curves.png goes into it)"
        )
    path = plot_experiments(args.results_dir, out, metric=getattr(args, "metric", None))
    print(f"wrote {path}")
    return 0


def metric_label(metric: str) -> str:
    return METRIC_LABELS.get(metric, metric.split("/")[-1].replace("_", " "))


def find_trials(results_dir: str) -> list[str]:
    """Trial directories (with a result.json) under ``results_dir``, sorted."""
    if os.path.isfile(results_dir):  # a trial's progress.csv / result.json: its directory is read
        trial = os.path.dirname(os.path.abspath(results_dir))
        raise UserError(
            f"{results_dir} is a file; rllib plot reads a directory: the experiment's, rllib plot "
            f"{os.path.dirname(trial)} (or the trial's own: rllib plot {trial})"
        )
    if not os.path.isdir(results_dir):
        raise UserError(
            f"no such directory: {results_dir} (pass an experiment directory, e.g. ~/ray_results/smac-state)"
        )
    found = []
    for root, dirs, files in os.walk(results_dir):
        if "result.json" in files:
            found.append(root)
            dirs[:] = [d for d in dirs if not d.startswith("checkpoint_")]
    trial = _trial_above(results_dir) if not found else None
    if trial:  # a checkpoint (or a folder in one) of a trial: its curves are the trial's
        raise UserError(
            f"{results_dir} is inside the trial {trial}, whose results rllib plot reads: pass the experiment "
            f"directory, rllib plot {os.path.dirname(trial)} (or the trial's own: rllib plot {trial})"
        )
    return sorted(found)


def _trial_above(path: str) -> str | None:
    """The trial directory (with a result.json) that holds ``path``, a few levels up; None if none does."""
    path = os.path.abspath(path)
    for _ in range(3):
        path = os.path.dirname(path)
        if os.path.isfile(os.path.join(path, "result.json")):
            return path
    return None


def load_trial(trial_dir: str, metric: str) -> dict[str, Any] | None:
    """{"algo", "env", "params" (flat), "x", "y"} of one trial; None when it has no finite ``metric`` yet."""
    xs, ys = [], []
    for row in metric_rows(read_results(trial_dir), metric):
        x, y = env_steps(row), lookup(row, metric)
        if isinstance(x, (int, float)) and isinstance(y, (int, float)) and math.isfinite(y):
            xs.append(float(x))
            ys.append(float(y))
    if not xs:
        return None
    info = trial_info(trial_dir)
    repeat = info.pop("action_repeat")
    return {**info, "x": np.asarray(xs) * float(repeat), "y": np.asarray(ys), "frames": repeat != 1}


def group_trials(trials: list[dict]) -> dict[tuple[str, str], list[dict]]:
    """{(env, label): trials} -- trials that differ only in their seed share a label."""
    keys = set().union(*(t["params"] for t in trials)) if trials else set()
    varying = sorted(
        k for k in keys
        if k not in SEED_KEYS
        and k != "env"
        and len({json.dumps(t["params"].get(k), sort_keys=True) for t in trials}) > 1
    )  # fmt: skip
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for t in trials:
        parts = [t["algo"]]
        for key, short in NAMED.items():
            if key in t["params"]:
                parts.append(f"{short}={t['params'][key]}")
        parts += [f"{k}={t['params'].get(k)}" for k in varying if k not in NAMED]
        groups[(t["env"], " ".join(parts))].append(t)
    return dict(groups)


def mean_and_interval(curves: list[tuple[np.ndarray, np.ndarray]], points: int = 100):
    """(x, mean, low, high) on a common grid; the 95% t-interval of the mean over seeds (none for one seed)."""
    if len(curves) == 1:
        x, y = curves[0]
        return x, y, None, None
    start = max(float(c[0][0]) for c in curves)
    end = min(float(c[0][-1]) for c in curves)
    if end <= start:  # no overlap: plot the seeds' common start only
        end = start
    grid = np.linspace(start, end, points) if end > start else np.array([start])
    ys = np.stack([np.interp(grid, x, y) for x, y in curves])
    n = ys.shape[0]
    mean = ys.mean(axis=0)
    sem = ys.std(axis=0, ddof=1) / math.sqrt(n)
    from scipy import stats  # lazy: scipy (~1.9 s) only for a band over several seeds

    half = float(stats.t.ppf(0.975, n - 1)) * sem
    return grid, mean, mean - half, mean + half


def load_trials(results_dir: str, metric: str | None = None) -> tuple[str, list[dict]]:
    """(metric, trials that reported it). ``metric=None``: the evaluation return, else (no trial evaluated yet)
    the training return, with a note on stderr."""
    trial_dirs = find_trials(results_dir)
    metric = modern_metric(metric, "--metric", None) if metric else None
    for candidate in [metric] if metric else [EVAL_RETURN, TRAIN_RETURN]:
        trials = [t for t in (load_trial(d, candidate) for d in trial_dirs) if t is not None]
        if trials:
            if not metric and candidate != EVAL_RETURN:
                note(
                    f"no trial under {results_dir} has an evaluation result (no evaluation_interval in its config, "
                    "no evaluation yet, or none that ended an episode): plotting the training return instead"
                )
            return candidate, trials
    if metric:
        reported = _returns_reported(trial_dirs)
        if near := _keys_sharing_words(trial_dirs, metric):  # an old stack's or another tool's name of a metric
            raise UserError(
                f"no trial under {results_dir} reports {metric!r}; the results' key with its words: "
                f"{', '.join(map(repr, near))}: pass that to --metric"
            )
        if reported:
            raise UserError(
                f"no trial under {results_dir} reports {metric!r}; they report {', '.join(map(repr, reported))}: pass "
                "one of those to --metric"
            )
        raise UserError(
            f"no trial under {results_dir} has reported {metric!r} yet (an episode must end first); train longer or "
            "pass --metric"
        )
    raise UserError(
        f"no trial under {results_dir} has reported an evaluation return ({EVAL_RETURN!r}) or a training return "
        f"({TRAIN_RETURN!r}) yet (an episode must end first); train longer or pass --metric"
    )


def _keys_sharing_words(trial_dirs: list[str], metric: str) -> list[str]:
    """Numeric result keys that hold every word of ``metric``'s last part (``critic_loss``: critic/loss)."""
    words = set(re.split(r"[/_.]", metric.rsplit("/", 1)[-1].lower())) - {""}
    rows = read_results(trial_dirs[0]) if trial_dirs else []
    keys = _numeric_keys(rows[-1]) if rows else []
    return [key for key in keys if words and words <= set(re.split(r"[/_.]", key.lower()))][:3]


def _numeric_keys(row: dict, prefix: str = "") -> list[str]:
    keys = []
    for key, value in row.items():
        if isinstance(value, dict):
            keys += _numeric_keys(value, f"{prefix}{key}/")
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            keys.append(f"{prefix}{key}")
    return keys


def _returns_reported(trial_dirs: list[str]) -> list[str]:
    """The return keys (training, evaluation) that some trial's results hold."""
    found = []
    for key in (EVAL_RETURN, TRAIN_RETURN):
        if any(load_trial(d, key) is not None for d in trial_dirs):
            found.append(key)
    return found


def plot_experiments(results_dir: str, out: str, metric: str | None = None) -> str:
    """Draw the curves of every trial under ``results_dir`` into ``out``; ``metric=None``: see ``load_trials``."""
    metric, trials = load_trials(results_dir, metric)
    import matplotlib  # lazy: matplotlib (~1.2 s) once there are curves; a wrong directory fails without it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = group_trials(trials)
    envs = sorted({env for env, _ in groups})
    fig, axes = plt.subplots(1, len(envs), figsize=(6 * len(envs), 4.2), squeeze=False)
    for ax, env in zip(axes[0], envs, strict=True):
        for (genv, label), members in sorted(groups.items()):
            if genv != env:
                continue
            curves = [(t["x"], t["y"]) for t in members]
            x, mean, low, high = mean_and_interval(curves)
            line = ax.plot(x, mean, label=f"{label} (n={len(members)})", linewidth=1.6)[0]
            if low is not None:
                ax.fill_between(x, low, high, color=line.get_color(), alpha=0.2, linewidth=0)
        frames = any(t["frames"] for t in trials if t["env"] == env)
        ax.set_title(env)
        ax.set_xlabel("environment frames (agent steps x action repeat)" if frames else "environment steps")
        ax.set_ylabel(metric_label(metric))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("mean and 95% interval over seeds", fontsize=9)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out
