"""Progress lines inside long iterations: the trainable writes ``<trial dir>/progress_live.json``
(``smac_rllib/training/off_policy.py: LiveProgress``, every 30 s once an iteration runs that long, also between the
episodes of a long evaluation on the local evaluation env runner); the CLI's
progress callback reads it between results and prints one line per new record, with the time to the stop
criterion estimated from the iteration's projected length.
"""

from __future__ import annotations

import json
import os
import time

from smac_rllib.cli.results import format_duration
from smac_rllib.training.off_policy import LIVE_PROGRESS_FILE

_STEP_KEYS = ("num_env_steps_sampled_lifetime", "env_runners/num_env_steps_sampled_lifetime")


def read_live(trial_dir: str) -> dict | None:
    try:
        with open(os.path.join(trial_dir, LIVE_PROGRESS_FILE)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def eta_to_stop(record: dict, stop: dict, last_result: dict | None) -> str | None:
    """Time to the stop criterion, from the projected length of this iteration and its env steps."""
    done, planned, elapsed = (
        record.get("updates_done") or 0,
        record.get("updates_planned") or 0,
        record.get("elapsed_s") or 0.0,
    )
    iteration_s = elapsed * planned / done if done and planned > done else elapsed
    left_in_iteration = max(0.0, iteration_s - elapsed)
    if "training_iteration" in stop:
        iterations_left = max(0, int(stop["training_iteration"]) - int(record.get("training_iteration", 0)))
        return format_duration(left_in_iteration + iterations_left * iteration_s)
    step_key = next((k for k in _STEP_KEYS if k in stop), None)
    if step_key is not None and last_result is not None:
        steps_before = _steps(last_result)
        steps_now = record.get("env_steps_stored") or 0
        if steps_before is not None and steps_now > steps_before:  # env steps this iteration adds, per iteration
            iterations_left = max(0.0, (float(stop[step_key]) - steps_now) / (steps_now - steps_before))
            return format_duration(left_in_iteration + iterations_left * iteration_s)
    if "time_total_s" in stop and last_result is not None:
        return format_duration(float(stop["time_total_s"]) - float(last_result.get("time_total_s", 0.0)) - elapsed)
    return None


def _steps(result: dict) -> float | None:
    value = (
        result.get("env_runners", {}).get("num_env_steps_sampled_lifetime")
        if isinstance(result.get("env_runners"), dict)
        else None
    )
    return float(value) if value is not None else None


STALL_S = 150.0  # no env step stored and no update for this long: said on the live line (slowest update: ~36 s)


def format_live(label: str, record: dict, stop: dict, last_result: dict | None, idle_s: float = 0.0) -> str:
    """The live line; ``idle_s``: how long neither the env steps stored nor the updates done have moved."""
    if record.get("phase") == "evaluation":
        return format_live_evaluation(label, record)
    parts = [f"it {record.get('training_iteration', '?'):>3} running {format_duration(record.get('elapsed_s') or 0)}"]
    done, planned = record.get("updates_done"), record.get("updates_planned")
    if planned:
        parts.append(f"{done}/{planned} updates")
    if record.get("s_per_update"):
        parts.append(f"{record['s_per_update']:.2f} s/update")
    parts.append(f"{int(record.get('env_steps_stored') or 0):,} steps stored")
    if idle_s >= STALL_S:
        parts.append(
            f"no env step stored and no update for {format_duration(idle_s)} (stalled? Ctrl-C checkpoints the run; "
            "-v shows the workers' logs)"
        )
        return f"[{label}] " + ", ".join(parts)
    eta = eta_to_stop(record, stop, last_result)
    if eta is not None:
        parts.append(f"stop in ~{eta}")
    return f"[{label}] " + ", ".join(parts)


def format_live_evaluation(label: str, record: dict) -> str:
    """``[0] it  10 evaluating 2m00s, 4/10 episodes, ~3m00s left``: the evaluation episodes done so far."""
    elapsed, done, planned = (
        record.get("elapsed_s") or 0.0,
        record.get("episodes_done") or 0,
        record.get("episodes_planned"),
    )
    parts = [f"it {record.get('training_iteration', '?'):>3} evaluating {format_duration(elapsed)}"]
    if planned:
        parts.append(f"{done}/{planned} episodes")
        if done:
            parts.append(f"~{format_duration(elapsed / done * max(0, planned - done))} left")
    return f"[{label}] " + ", ".join(parts)


class LiveWatcher:
    """Checks each running trial's live-progress file at most every ``every_s`` seconds; returns new lines."""

    def __init__(self, every_s: float = float(os.environ.get("SMAC_LIVE_PROGRESS_S", "30")) / 6):
        self.every_s = every_s
        self._last_check = 0.0
        self._seen: dict[str, float] = {}  # trial dir -> time of the last printed record
        self._moved: dict[str, tuple] = {}  # trial dir -> ((iteration, env steps stored, updates done), since when)

    def new_lines(self, trials, label_of, stop: dict, last_results: dict) -> list[str]:
        now = time.time()
        if now - self._last_check < self.every_s:
            return []
        self._last_check = now
        lines = []
        for trial in trials:
            directory = _working_dir(trial)
            if getattr(trial, "status", None) != "RUNNING" or not directory:
                continue
            record = read_live(directory)
            if record is None or record.get("time", 0) <= self._seen.get(directory, 0):
                continue
            last = last_results.get(trial.trial_id)
            if last is not None and int(last.get("training_iteration", 0)) >= int(record.get("training_iteration", 0)):
                continue  # the iteration this record is about has already reported
            self._seen[directory] = record["time"]
            lines.append(format_live(label_of(trial), record, stop, last, self._idle_s(directory, record)))
        return lines

    def _idle_s(self, directory: str, record: dict) -> float:
        """Seconds since the trial's env steps stored or updates done last changed (records of one iteration)."""
        key = (record.get("training_iteration"), record.get("env_steps_stored"), record.get("updates_done"))
        before, since = self._moved.get(directory, (None, record["time"]))
        if key != before:
            self._moved[directory] = (key, record["time"])
            return 0.0
        return float(record["time"]) - float(since)


def _working_dir(trial) -> str | None:
    """Where the trainable's ``logdir`` is: Tune's trial working directory (under Ray's session dir), else the trial
    dir."""
    storage = getattr(trial, "storage", None)
    try:
        return storage.trial_working_directory if storage is not None else getattr(trial, "local_path", None)
    except Exception:  # noqa: BLE001 - a trial without a directory name yet
        return getattr(trial, "local_path", None)
