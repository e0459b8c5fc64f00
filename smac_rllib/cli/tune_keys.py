"""Tune's own experiment keys: which this file passes to Tune (``max_concurrent_trials``, ``log_to_file``, with our
``warm_up_only``: ``parse_run_options``), and what a key of Tune's Python API that it does not pass says instead
(``tune_key_hint``): a ``checkpoint_config`` key written at the top, the Tuner's ``param_space`` (``config:`` here),
its ``run_config``/``tune_config`` blocks (written flat here), an argument only Python can give (a function, a search
algorithm, a filesystem object)."""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable
from typing import Any

from ray import tune
from ray.tune.experiment import Experiment

from smac_rllib.cli.errors import UserError
from smac_rllib.cli.experiment_parts import plain
from smac_rllib.core.values import is_int

FLAT_HERE = "num_samples, stop, checkpoint_config, max_failures, max_concurrent_trials, scheduler, log_to_file"


@functools.cache
def _tune_arguments() -> dict[str, str]:
    """Each argument of Tune's Python API -> the class or function that takes it."""
    owners = {
        "tune.Experiment": Experiment.__init__,
        "tune.RunConfig": tune.RunConfig,
        "tune.TuneConfig": tune.TuneConfig,
        "tune.FailureConfig": tune.FailureConfig,
    }
    found: dict[str, str] = {}
    for owner, signature in owners.items():
        for name in inspect.signature(signature).parameters:
            found.setdefault(name, owner)
    return found


def tune_key_hint(key: Any) -> str:
    """``; ...`` for an unknown experiment key that is Tune's, else ""."""
    if key in inspect.signature(tune.CheckpointConfig).parameters:
        return f"; it is a checkpoint_config key: write checkpoint_config: {{{key}: ...}}"
    if key in ("param_space", "search_space"):  # tune.Tuner(param_space=...), Tune's older search_space
        return (
            f"; the Tuner's {key} is this file's config: (the algorithm's settings, grids included): rename it config:"
        )
    if key in ("run_config", "tune_config", "failure_config"):
        return (
            f"; the Tuner's {key} is written flat here: its keys this file reads ({FLAT_HERE}) go beside run: and env:"
        )
    owner = _tune_arguments().get(key)
    if owner:
        return f"; it is an argument of {owner} in Python, which rllib train file does not pass (it reads {FLAT_HERE})"
    return ""


def parse_run_options(body: dict, where_of: Callable[[str], str]) -> dict:
    """The experiment keys that go to Tune as they are: ``warm_up_only`` (ours), ``max_concurrent_trials`` and
    ``log_to_file`` (Tune's: true, one file name for both streams, or [stdout name, stderr name] in the trial dir)."""
    warm_up_only = body.get("warm_up_only", False)
    if not isinstance(warm_up_only, bool):
        raise UserError(
            f"warm_up_only={warm_up_only!r} must be true or false (without quotes)", where_of("warm_up_only")
        )
    max_concurrent = body.get("max_concurrent_trials")
    if max_concurrent is not None and not (is_int(max_concurrent) and max_concurrent >= 1):
        raise UserError(
            f"max_concurrent_trials={max_concurrent!r} must be an integer >= 1", where_of("max_concurrent_trials")
        )
    log_to_file = plain(body.get("log_to_file", False))
    if not isinstance(log_to_file, bool) and not _log_file_names(log_to_file):
        raise UserError(
            f"log_to_file={log_to_file!r}: write true (the trial's stdout and stderr in its directory), a file name "
            "(both into it) or [stdout.log, stderr.log]; names, not paths (the files go in each trial's directory)",
            where_of("log_to_file"),
        )
    return {
        "warm_up_only": warm_up_only,
        "max_concurrent_trials": max_concurrent,
        "log_to_file": tuple(log_to_file) if isinstance(log_to_file, list) else log_to_file,
    }


def _log_file_names(value: Any) -> bool:
    """One file name, or [stdout name, stderr name]: plain names (Tune joins them to the trial's directory)."""
    names = [value] if isinstance(value, str) else value if isinstance(value, list) and len(value) == 2 else None
    return bool(names) and all(
        isinstance(n, str) and n.strip() and os.path.basename(n) == n and n not in (".", "..") for n in names
    )
