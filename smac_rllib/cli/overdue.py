"""Result keys that never come. ``parse_stop`` (experiment_parts.py) knows only the names a result of this RLlib may
hold: a key under an open prefix (``learners/<module>/...``, ``timers/...``), a callback's metric (``custom_metrics``)
or a key this algorithm does not report (``num_updates_lifetime`` of PPO, ``async/...`` of a synchronous run) passes
it, and a stop criterion on it would never stop the run, a checkpoint score never rank the checkpoints, an ASHA metric
never stop a trial. Here each such key is watched in every result of every trial (``MetricStopper`` in train.py).

A key must be in a result once its gate opened: ``evaluation/...`` in a result that evaluated (``EVAL_MARKER``),
``env_runners/...`` (episode returns, a callback's metrics) once an episode ended, ``learners/...``, ``async/...`` and
the update counters once learning started, every other key in every result. A key missing from ``GRACE`` results whose
gate was open (and never seen in the trial) is overdue: the run stops with one line and ``rllib`` exits with 2.
"""

from __future__ import annotations

import sys

from smac_rllib.cli.errors import PROG, did_you_mean
from smac_rllib.cli.results import EVAL_MARKER, lookup

GRACE = 2  # results that must hold the key (a few RLlib keys appear only in the second evaluation's result)
LEARNING_KEYS = ("num_updates_lifetime", "num_env_steps_trained_lifetime")
EFFECTS = {
    "stop criterion": "stop the run",
    "checkpoint_config.checkpoint_score_attribute": "rank the checkpoints",
    "scheduler metric": "let ASHA stop a trial",
    "scheduler time_attr": "let ASHA stop a trial",
}
# The messages of the keys found overdue in this process (the stopper of a resumed run is unpickled, not ours).
OVERDUE: list[str] = []


def _episodes_ended(result: dict, prefix: str) -> bool:
    count = lookup(result, f"{prefix}env_runners/num_episodes_lifetime")
    return not isinstance(count, (int, float)) or count > 0  # not reported: cannot tell, count the result


def learning_started(result: dict) -> bool:
    learners = result.get("learners")
    return isinstance(learners, dict) and any(k != "__all_modules__" and v for k, v in learners.items())


def gate(key: str) -> str:
    """The family of ``key``: "evaluation", "episodes", "learning" or "always" (what must happen before it comes)."""
    if key.startswith("evaluation/"):
        return "evaluation"
    if key.startswith("env_runners/"):
        return "episodes"
    if key.startswith(("learners/", "async/")) or key in LEARNING_KEYS:
        return "learning"
    return "always"


GATE_WORDS = {
    "evaluation": "that evaluated",
    "episodes": "after an episode ended",
    "learning": "after learning started",
    "always": "",
}


def gate_open(key: str, result: dict) -> bool:
    family = gate(key)
    if family == "evaluation":
        return lookup(result, EVAL_MARKER) is not None and (
            not key.startswith("evaluation/env_runners/") or _episodes_ended(result, "evaluation/")
        )
    if family == "episodes":
        return _episodes_ended(result, "")
    if family == "learning":
        return learning_started(result)
    return True


def flat_keys(result: dict, prefix: str = "") -> list[str]:
    out = []
    for key, value in result.items():
        if isinstance(value, dict):
            out += flat_keys(value, f"{prefix}{key}/")
        elif key != "config":
            out.append(f"{prefix}{key}")
    return out


def overdue_message(key: str, what: str, result: dict, missed: int, where: str | None = None) -> str:
    """One line: which key, in how many results it was missing, what it would never do, the closest key there."""
    words = GATE_WORDS[gate(key)]
    hint = did_you_mean(key, flat_keys(result)) or (
        "; use a key of the trial's result.json (a/b = result['a']['b']), e.g. training_iteration"
    )
    iteration = result.get("training_iteration", "?")
    if key.startswith("evaluation/env_runners/") and not lookup(result, "evaluation/env_runners/num_episodes_lifetime"):
        message = (
            f"{what} {key!r} is in none of the trial's {missed} results that evaluated (up to iteration {iteration}): "
            f"{_no_evaluation_episode(result)}; stopped the run"
        )
        return " ".join(f"{where}: {message}".split()) if where else " ".join(message.split())
    message = (
        f"{what} {key!r} is in none of the trial's {missed} results {words} (up to iteration {iteration}), so it "
        f"would never {EFFECTS.get(what, 'trigger')}: stopped the run{hint}"
    )
    return " ".join(f"{where}: {message}".split()) if where else " ".join(message.split())


RLLIB_EVALUATION_TIMEOUT_S = 120.0  # AlgorithmConfig.evaluation_sample_timeout_s's default


def _no_evaluation_episode(result: dict) -> str:
    """Why the evaluations ended no episode (their episode metrics come from ended episodes only)."""
    config = result.get("config") if isinstance(result.get("config"), dict) else {}
    timeout = config.get("evaluation_sample_timeout_s")
    if isinstance(timeout, (int, float)) and timeout < RLLIB_EVALUATION_TIMEOUT_S:
        return (
            f"no evaluation episode ended: evaluation_sample_timeout_s={timeout:g} s cuts each evaluation before its "
            f"first episode does; raise it or remove it (RLlib's default: {RLLIB_EVALUATION_TIMEOUT_S:g} s)"
        )
    return (
        "no evaluation episode ended (each evaluation stops before an episode does: evaluation_duration in timesteps "
        "shorter than an episode? write evaluation_duration_unit: episodes)"
    )


class KeyWatch:
    """Per trial: how many results had each key's gate open without it; the first key overdue ends the run."""

    def __init__(self, keys: dict[str, str], where: str | None = None):
        self.keys = dict(keys)  # result key -> what names it ("stop criterion", ...)
        self.where = where
        self.overdue: str | None = None
        self._missed: dict[tuple[str, str], int] = {}
        self._seen: set[tuple[str, str]] = set()

    def check(self, trial_id: str, result: dict) -> str | None:
        """The one-line message when a key of ``keys`` is overdue in this ``result``; None otherwise."""
        for key, what in self.keys.items():
            slot = (trial_id, key)
            if slot in self._seen:
                continue
            if lookup(result, key) is not None:
                self._seen.add(slot)
                continue
            if not gate_open(key, result):
                continue
            self._missed[slot] = self._missed.get(slot, 0) + 1
            if self._missed[slot] >= GRACE:
                self.overdue = overdue_message(key, what, result, self._missed[slot], self.where)
                return self.overdue
        return None


def watched_keys(stop: dict, checkpoint_config: dict | None, scheduler: dict | None) -> dict[str, str]:
    """{result key: what names it} of an experiment: its stop criteria, checkpoint score and scheduler metrics."""
    keys = {key: "stop criterion" for key in stop}
    score = (checkpoint_config or {}).get("checkpoint_score_attribute")
    if isinstance(score, str):
        keys.setdefault(score, "checkpoint_config.checkpoint_score_attribute")
    for name in ("metric", "time_attr"):
        value = (scheduler or {}).get(name)
        if isinstance(value, str):
            keys.setdefault(value, f"scheduler {name}")
    return keys


def report(message: str) -> None:
    """Print the line once (stderr, as every ``rllib: error``) and keep it for the run's exit code."""
    if message not in OVERDUE:
        OVERDUE.append(message)
        print(f"{PROG}: error: {message}", file=sys.stderr, flush=True)
