"""Tune's results as the CLI reads them: the keys it reports first (evaluation and training return, env steps), ``a/b``
lookups, a trial's ``result.json`` and ``params.json``, and the number and duration formats of every report
(``progress.py``, ``summary.py``, ``plot.py``, ``interrupt.py``, ``live.py``)."""

from __future__ import annotations

import json
import os
from typing import Any

from smac_rllib.cli.errors import note
from smac_rllib.core.values import is_number

STEPS_KEYS = ("env_runners/num_env_steps_sampled_lifetime", "num_env_steps_sampled_lifetime")
ENV_STEP_KEYS = (*STEPS_KEYS, "env_runners/num_agent_steps_sampled_lifetime")  # single-agent: the same count
EVAL_RETURN = "evaluation/env_runners/episode_return_mean"  # the deterministic policy's evaluation episodes
TRAIN_RETURN = "env_runners/episode_return_mean"  # the exploring policy's training episodes
# Set only in the results of an iteration that evaluated: RLlib 2.60 repeats the latest evaluation's metrics in
# the iterations between evaluations (its metrics logger keeps them), which must not count as new evaluations.
EVAL_MARKER = "evaluation/num_healthy_workers"


# Old result keys -> RLlib 2.60 new-stack result keys (stop criteria, scheduler metrics).
LEGACY_METRICS = {
    "timesteps_total": "num_env_steps_sampled_lifetime",
    "agent_timesteps_total": "num_env_steps_sampled_lifetime",  # one agent: agent steps are env steps
    "episodes_total": "env_runners/num_episodes_lifetime",
    "episode_reward_max": "env_runners/episode_return_max",
    "episode_reward_min": "env_runners/episode_return_min",
    "episode_len_mean": "env_runners/episode_len_mean",
    "episode_reward_mean": "env_runners/episode_return_mean",
    "episode_return_mean": "env_runners/episode_return_mean",
    "env_runners/episode_reward_mean": "env_runners/episode_return_mean",
    "sampler_results/episode_reward_mean": "env_runners/episode_return_mean",
    "evaluation/episode_reward_mean": "evaluation/env_runners/episode_return_mean",
    "evaluation/episode_return_mean": "evaluation/env_runners/episode_return_mean",
    "evaluation/env_runners/episode_reward_mean": "evaluation/env_runners/episode_return_mean",
    "evaluation/sampler_results/episode_reward_mean": "evaluation/env_runners/episode_return_mean",
}
_NOTED: set[tuple] = set()


def modern_metric(key: str, what: str, where: str | None) -> str:
    """``key`` under this RLlib's name; an old API stack name is read as the new one, said once in a note."""
    new = LEGACY_METRICS.get(key, key)
    if new != key and (key, what, where) not in _NOTED:
        _NOTED.add((key, what, where))
        note(
            f"{where + ': ' if where else ''}{what} {key!r} is the old API stack's name; read as {new!r} (write that "
            "to silence this note)"
        )
    return new


def lookup(result: dict, key: str, default: Any = None) -> Any:
    """``result["a"]["b"]`` for ``"a/b"`` (or a flat ``"a/b"`` key, as in progress.csv). A name may hold a slash
    itself (our learners report ``critic/loss``: ``result["learners"]["default_policy"]["critic/loss"]``), as Tune's
    flattened result reads it: at each level the longest name that the key's next parts spell is taken."""
    if key in result:
        return result[key]
    return _walk(result, key.split("/"), default)


def _walk(node: Any, parts: list[str], default: Any) -> Any:
    if not parts:
        return node
    if not isinstance(node, dict):
        return default
    for n in range(len(parts), 0, -1):
        name = "/".join(parts[:n])
        if name in node:
            found = _walk(node[name], parts[n:], _MISSING)
            if found is not _MISSING:
                return found
    return default


_MISSING = object()


def env_steps(result: dict) -> int | None:
    for key in STEPS_KEYS:
        value = lookup(result, key)
        if isinstance(value, (int, float)):
            return int(value)
    return None


def finite(value: Any) -> float | None:
    return float(value) if is_number(value) else None


def format_number(x: float) -> str:
    if x == 0 or 1e-3 <= abs(x) < 1e5:
        return f"{x:.3g}" if abs(x) < 10 else f"{x:.1f}"
    return f"{x:.2e}"


def format_duration(seconds: float) -> str:
    seconds = int(max(0, seconds))
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}h{m:02d}m" if h else (f"{m}m{s:02d}s" if m else f"{s}s")


def read_results(trial_dir: str) -> list[dict]:
    """The trial's results in iteration order, one per iteration (a resumed trial repeats the iterations after
    its checkpoint: the later ones win). Reads result.json: progress.csv breaks when a resumed run adds columns.
    """
    by_iteration: dict[int, dict] = {}
    try:
        with open(os.path.join(trial_dir, "result.json"), encoding="utf-8") as f:
            for line in f:
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line cut by a kill
                row.pop("config", None)
                by_iteration[int(row.get("training_iteration", len(by_iteration) + 1))] = row
    except OSError:
        return []
    return [by_iteration[i] for i in sorted(by_iteration)]


def metric_rows(rows: list[dict], metric: str) -> list[dict]:
    """The rows that report ``metric`` afresh: for ``evaluation/...`` metrics, the iterations that evaluated
    (not RLlib's repeats of the latest evaluation in between; all rows when no row carries the marker)."""
    if metric.startswith("evaluation/"):
        evaluated = [row for row in rows if lookup(row, EVAL_MARKER) is not None]
        if evaluated:
            return evaluated
    return rows


def trial_info(trial_dir: str) -> dict[str, Any]:
    """{"algo", "env", "params" (flat), "action_repeat"} of a trial, from its directory name and params.json."""
    try:
        with open(os.path.join(trial_dir, "params.json"), encoding="utf-8") as f:
            params = json.load(f)
    except (OSError, json.JSONDecodeError):
        params = {}
    return {
        "algo": os.path.basename(trial_dir).split("_")[0],
        "env": str(params.get("env", "?")),
        "params": _flatten(params),
        "action_repeat": action_repeat(params),
    }


def action_repeat(params: dict) -> int:
    """Env frames per agent step (the env's default: 2 from pixels, 1 from states)."""
    env_config = params.get("env_config") or {}
    return int(env_config.get("action_repeat") or (2 if env_config.get("from_pixels") else 1))


def _flatten(params: dict, prefix: str = "") -> dict[str, Any]:
    flat = {}
    for key, value in params.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(_flatten(value, name + "."))
        else:
            flat[name] = value
    return flat
