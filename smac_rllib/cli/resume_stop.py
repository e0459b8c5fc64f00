"""``--resume`` with the stop criteria the file (or ``--stop``) gives now, not the ones the run started with.

Tune's ``Tuner.restore`` keeps the run's pickled stopper and skips every finished trial, so a stop raised in the
file trained nothing and exited 0. Here: the restored run stops by the file's criteria, and a trial that ended
because it reached the *old* criteria (not one an ASHA scheduler stopped, nor one that failed) continues from its
last checkpoint until it reaches the new ones. Criteria that do not raise the run's own (lower, or on other keys: a
resume without the ``--stop`` the run started with) leave the run's own (``effective_stop``).
A finished trial with no checkpoint to continue from is refused
before Ray starts, naming the command that works (a new run). What the run recorded is read from Tune's newest
``experiment_state-*.json`` (JSON; its stopper is a pickle read by a loader that builds nothing but the criteria).
"""

from __future__ import annotations

import dataclasses
import glob
import io
import json
import os
import pickle

from smac_rllib.cli.checkpoints import checkpoint_dirs, is_complete
from smac_rllib.cli.errors import UserError
from smac_rllib.cli.grids import has_grid
from smac_rllib.cli.results import lookup


@dataclasses.dataclass
class FinishedTrial:
    trial_id: str
    trial_dir: str
    last_result: dict


def trials_to_continue(exp_dir: str, stop: dict, scheduler: dict | None, source: str) -> list[FinishedTrial]:
    """The finished trials of ``exp_dir`` that ``stop`` (the file's criteria now) continues: each ended by the
    criteria the run started with and has not reached ``stop``. One without a complete checkpoint is a UserError."""
    state = _newest_state(exp_dir)
    if state is None:
        return []
    old = _old_criteria(state)
    continued = []
    for trial in _finished(state, exp_dir):
        if _reached(trial.last_result, stop):
            continue  # the new criteria stop it too
        if old is not None and not _reached(trial.last_result, old):
            continue  # ended by the scheduler (ASHA), not by the stop: it stays stopped
        if old is None and scheduler:
            continue  # cannot tell the stop from the scheduler: leave it as it ended
        continued.append(trial)
    for trial in continued:
        if not any(is_complete(d) for d in checkpoint_dirs(trial.trial_dir)):
            reached = ", ".join(f"{k}={lookup(trial.last_result, k)}" for k in stop)
            raise UserError(
                f"--resume: trial {trial.trial_id} finished ({reached}) without a checkpoint, so the raised stop "
                f"{json.dumps(stop)} cannot continue it; start a new run instead (drop --resume), with "
                "checkpoint_config: {checkpoint_at_end: true} so that the next raise can resume",
                source,
            )
    return continued


def effective_stop(exp_dir: str, stop: dict) -> tuple[dict, str | None]:
    """The criteria a resumed run stops by, and a line saying why when they are not ``stop``: the ones given now when
    they raise the run's own (same keys, none lower) or the run's are unknown; else the run's own (a resume without
    the ``--stop`` the run started with must not cut it short)."""
    state = _newest_state(exp_dir)
    old = _old_criteria(state) if state is not None else None
    if old is None or stop == old or (set(stop) == set(old) and all(stop[k] >= old[k] for k in stop)):
        return stop, None
    return old, (
        f"the run started with stop {json.dumps(old)}; {json.dumps(stop)} does not raise it, so it continues to its "
        "own (give --stop with higher values to train further)"
    )


def stop_text(stop: dict) -> str:
    """``training_iteration >= 9, ...``: the criteria as the run's lines say them."""
    return ", ".join(f"{k} >= {v:g}" for k, v in stop.items())


def all_finished(exp_dir: str) -> bool:
    """Every trial of the run ended (reached its stop, or was stopped by the scheduler); none failed or is left."""
    state = _newest_state(exp_dir)
    if state is None:
        return False
    statuses = [json.loads(t).get("status") for t, _ in state.get("trial_data", [])]
    return bool(statuses) and all(s == "TERMINATED" for s in statuses)


def install(tuner, stopper, continue_ids: set[str]) -> bool:
    """Make the restored ``tuner`` stop by ``stopper`` and continue the trials ``continue_ids`` (finished ones);
    False where this Tune hides what that needs (a ``ray://`` client's remote tuner)."""
    # lazy: ray.tune's controller (with torch behind it) is loaded by train.py before this runs
    from ray.tune.execution.tune_controller import TuneController
    from ray.tune.experiment import Trial
    from ray.tune.tune_config import ResumeConfig

    internal = getattr(tuner, "_local_tuner", None)
    fit_resume = getattr(internal, "_fit_resume", None)
    requeue = getattr(TuneController, "_requeue_restored_trials", None)
    if fit_resume is None or requeue is None:
        return False
    internal.get_run_config().stop = stopper
    for callback in internal.get_run_config().callbacks or []:
        if isinstance(getattr(callback, "_stop", None), dict):  # ProgressPrinter: progress towards the new criteria
            callback._stop = dict(getattr(stopper, "criteria", {}))

    def requeue_with_new_stop(controller, trials, resume_config):
        controller._stopper = stopper  # resume() put back the stopper pickled in the experiment state
        again = [t for t in trials if t.trial_id in continue_ids and t.status == Trial.TERMINATED]
        if again:
            requeue(controller, again, dataclasses.replace(resume_config, finished=ResumeConfig.ResumeType.RESUME))
        requeue(controller, [t for t in trials if t not in again], resume_config)

    def fit_resume_with_new_stop(*args, **kwargs):
        TuneController._requeue_restored_trials = requeue_with_new_stop
        try:
            return fit_resume(*args, **kwargs)
        finally:
            TuneController._requeue_restored_trials = requeue

    internal._fit_resume = fit_resume_with_new_stop
    return True


def _reached(result: dict, criteria: dict) -> bool:
    for key, threshold in criteria.items():
        value = lookup(result, key)
        if isinstance(value, (int, float)) and value == value and value >= threshold:
            return True
    return False


def _newest_state(exp_dir: str) -> dict | None:
    paths = glob.glob(os.path.join(exp_dir, "experiment_state-*.json"))
    if not paths:
        return None
    try:
        with open(max(paths), encoding="utf-8") as f:  # the name holds the time it was written
            return json.load(f)
    except (OSError, ValueError):
        return None


def _finished(state: dict, exp_dir: str) -> list[FinishedTrial]:
    trials = []
    for trial_json, metadata_json in state.get("trial_data", []):
        trial, metadata = json.loads(trial_json), json.loads(metadata_json)
        if trial.get("status") == "TERMINATED":
            trial_dir = os.path.join(exp_dir, trial.get("relative_logdir") or "")
            trials.append(FinishedTrial(trial["trial_id"], trial_dir, metadata.get("last_result") or {}))
    return trials


class _CriteriaOnly(pickle.Unpickler):
    """Reads the pickled ``MetricStopper`` as its criteria; any other class is refused (nothing is run)."""

    def find_class(self, module, name):
        if (module, name) == ("smac_rllib.cli.train", "MetricStopper"):
            return _Criteria
        if (module, name) == ("smac_rllib.cli.overdue", "KeyWatch"):  # the stopper's watch of its keys: not needed
            return _Ignored
        raise pickle.UnpicklingError(f"{module}.{name}")


class _Criteria:
    criteria: dict = {}


class _Ignored:
    def __setstate__(self, state) -> None:
        pass


def _old_criteria(state: dict) -> dict | None:
    """The stop criteria the run started with (its pickled ``MetricStopper``), None when unknown."""
    stopper = state.get("runner_data", {}).get("_stopper")
    try:
        data = bytes.fromhex(stopper["value"])
        old = _CriteriaOnly(io.BytesIO(data)).load()
    except Exception:  # noqa: BLE001 - another stopper, another format: unknown
        return None
    return dict(old.criteria) if isinstance(old, _Criteria) and isinstance(old.criteria, dict) else None


# --------------------------------------------------------------------------------------------- the config it ran with


def changed_settings(exp_dir: str, param_space: dict) -> list[str]:
    """``key (ran with A; now B)`` for every setting of ``param_space`` (the file with ``--config``) whose value
    none of the experiment's trials ran with: Tune resumes a run with the config it started with and would ignore
    it. Swept keys (a grid now) and keys only the run has (a ``--config`` left out) are not compared."""
    ran = [p for p in map(_read_json, glob.glob(os.path.join(exp_dir, "*", "params.json"))) if p is not None]
    if not ran:
        return []
    changed = []
    for key, value in param_space.items():
        if key == "env" or has_grid(value):
            continue
        before = [params.get(key, _UNSET) for params in ran]
        if _plain(value) not in before:
            old = ", ".join(sorted({"not set" if b is _UNSET else json.dumps(b) for b in before}))
            changed.append(f"{key} (ran with {old}; now {json.dumps(_plain(value))})")
    return changed


_UNSET = object()


def _read_json(path: str) -> dict | None:
    """A trial's params.json; None where a kill left it empty or cut (Tune writes it as the trial starts)."""
    try:
        with open(path) as f:
            params = json.load(f)
    except (OSError, ValueError):
        return None
    return params if isinstance(params, dict) else None


def _plain(value):
    """JSON's view of a value (params.json is JSON; tuples and lists alike)."""
    return json.loads(json.dumps(value, default=str))
