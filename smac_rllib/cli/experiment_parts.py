"""The optional blocks of one experiment: ``stop``, ``checkpoint_config``, ``wandb`` and ``scheduler``, each parsed and
checked against the result keys a run reports, every mistake a one-line ``UserError`` naming the fix."""

from __future__ import annotations

import inspect
import math
import os
from typing import Any

from ray.tune.schedulers import ASHAScheduler

from smac_rllib.core.values import is_int, is_real
from smac_rllib.cli.errors import UserError, did_you_mean, note, type_name, warn
from smac_rllib.cli.errors import yaml_number as _num
from smac_rllib.cli.grids import grid_options
from smac_rllib.cli.ranges import check_finite
from smac_rllib.cli.result_keys import result_key_error, time_attr_error
from smac_rllib.cli.results import EVAL_RETURN, TRAIN_RETURN, modern_metric
from smac_rllib.cli.yaml_reader import MarkedDict

CHECKPOINT_KEYS = (
    "checkpoint_frequency",
    "checkpoint_at_end",
    "num_to_keep",
    "checkpoint_score_attribute",
    "checkpoint_score_order",
)
DEFAULT_CHECKPOINT_CONFIG = {"checkpoint_frequency": 10, "checkpoint_at_end": True, "num_to_keep": 2}
_WANDB_HINTS = {  # wandb.init's arguments that Tune's callback sets itself
    "name": "; each trial's W&B run is named after the trial (and grouped by group:)",
    "id": "; each trial's W&B run has the trial's id",
}
WANDB_KEYS = (
    "project", "group", "entity", "tags", "notes", "job_type", "mode", "log_config", "excludes",
    "upload_checkpoints", "upload_timeout", "api_key_file",
)  # fmt: skip
DEFAULT_WANDB_PROJECT = "smac_rllib"
SCHEDULER_TYPES = {"fifo": "FIFO", "asha": "ASHA", "async_hyperband": "ASHA", "asynchyperband": "ASHA"}
# Result keys that only grow from their first value: a stop at 0 or below ends the run before it trains (key -> example)
COUNTING_STOP_KEYS = {
    "training_iteration": 100,
    "time_total_s": 3600,
    "env_runners/num_env_steps_sampled_lifetime": 1000000,
    "num_env_steps_sampled_lifetime": 1000000,
    "env_runners/num_agent_steps_sampled_lifetime": 1000000,
    "timesteps_total": 1000000,
    "num_updates_lifetime": 100000,
}


# Counts of one iteration (each result restarts them) -> the run's count a stop on them meant.
PER_ITERATION_KEYS = {
    "env_runners/num_env_steps_sampled": "env_runners/num_env_steps_sampled_lifetime",
    "env_runners/num_episodes": "env_runners/num_episodes_lifetime",
    "time_this_iter_s": "time_total_s",
    "evaluation/env_runners/num_env_steps_sampled": "evaluation/env_runners/num_env_steps_sampled_lifetime",
    "evaluation/env_runners/num_episodes": "evaluation/env_runners/num_episodes_lifetime",
}


def parse_stop(stop: Any, where: str, *, custom_metrics: bool = False) -> dict[str, float]:
    if stop is None:
        return {}
    if not isinstance(stop, dict):
        raise UserError(f"stop must be a mapping like {{training_iteration: 100}}, got {type_name(stop)}", where)
    out = {}
    for key, value in stop.items():
        if key in CHECKPOINT_KEYS:  # `stop: {checkpoint_at_end: true}`: a block one key off
            shown = str(value).lower() if isinstance(value, bool) else value
            raise UserError(f"{key} is a checkpoint_config key, not a stop criterion: write checkpoint_config: "
                            f"{{{key}: {shown}}} beside stop:", where)  # fmt: skip
        if not is_real(value):
            raise UserError(
                f"stop criterion {key!r}={value!r} must be a number (the run stops when the result reaches it"
                f"{'; it is in seconds, e.g. 3600' if str(key).startswith('time_') else ''})",
                where,
            )
        check_finite(value, str(key), where, what="stop criterion ")
        key = modern_metric(key, "stop criterion", where)
        error = result_key_error(key, "stop criterion", custom_metrics)
        if error:
            raise UserError(error, where)
        if key in PER_ITERATION_KEYS:
            span = "evaluation" if key.startswith("evaluation/") else "iteration"
            raise UserError(
                f"stop criterion {key}: {value!r} is a count of one {span} (each result restarts it), not the "
                f"run's: the run would stop only if one {span} reached it; write {PER_ITERATION_KEYS[key]}: "
                f"{value!r}",
                where,
            )
        if key in COUNTING_STOP_KEYS and value <= 0:
            raise UserError(
                f"stop criterion {key}={value!r} ends the run before its first iteration (the result starts "
                f"above 0); write a positive value, e.g. {{{key}: {COUNTING_STOP_KEYS[key]}}}",
                where,
            )
        if key.endswith(("steps_trained_lifetime", "steps_trained")):  # replayed transitions, not the run's length
            raise UserError(
                f"stop criterion {key}: {_num(value)} counts the transitions the updates replayed (batch x updates), "
                "not the env steps the run sampled; for the run's length stop on "
                f"env_runners/num_env_steps_sampled_lifetime: {_num(value)}",
                where,
            )
        if key.endswith("episode_return_max"):  # the best single episode of the window, not the policy's return
            warn(
                f"{where}: stop criterion {key}: {_num(value)} ends the run on one episode's return (the best of the "
                f"last episodes, a lucky one included); for the policy's return stop on {key[:-3]}mean"
                + ("" if key.startswith("evaluation/") else " or evaluation/env_runners/episode_return_mean")
            )
        if key in COUNTING_STOP_KEYS and not key.startswith("time_") and value != int(value):  # a count
            raise UserError(
                f"stop criterion {key}={value!r} is a count: the run stops at the first result at or above it, "
                f"{math.ceil(value):,}; write {math.ceil(value)} (or {int(value)})",
                where,
            )
        out[key] = value
    return out


def parse_stops(file_stop: Any, cli_stop: dict | None, where: str, *, custom_metrics: bool) -> tuple[dict, dict]:
    """(the stop, the file's criteria it drops): ``--stop``'s when given (it replaces the file's, as documented),
    else the file's. ``cli/horizon.py`` warns when a dropped criterion would have ended the run sooner."""
    if cli_stop is None:
        return parse_stop(file_stop, where, custom_metrics=custom_metrics), {}
    stop = parse_stop(cli_stop, "--stop", custom_metrics=custom_metrics)
    file_stop = parse_stop(file_stop, where, custom_metrics=custom_metrics) if isinstance(file_stop, dict) else {}
    return stop, {k: v for k, v in file_stop.items() if k not in stop}


def warn_seed_grid(name: str, file_seed: Any, cli_seed: int) -> None:
    """``--seed`` replaces the file's seed grid (as documented): said, since a study over seeds becomes one trial."""
    seeds = file_seed.get("grid_search") if isinstance(file_seed, dict) else None
    if isinstance(seeds, list) and len(seeds) > 1:
        warn(
            f"{name}: --seed {cli_seed} replaces the file's seed grid {seeds}: one seed instead of {len(seeds)} (each "
            "point of the other grids runs once); drop --seed to run the file's seeds"
        )


def parse_checkpoint_config(block: Any, where: str, *, custom_metrics: bool = False) -> dict:
    ckpt = plain(block or {})
    if not isinstance(ckpt, dict):
        raise UserError("checkpoint_config must be a mapping, e.g. {checkpoint_frequency: 10}", where)
    for key in ckpt:
        if key not in CHECKPOINT_KEYS:
            raise UserError(f"unknown checkpoint_config key {key!r}{did_you_mean(key, CHECKPOINT_KEYS)}", where)
    ckpt = {**DEFAULT_CHECKPOINT_CONFIG, **ckpt}
    for key in ("checkpoint_frequency", "num_to_keep"):
        value = ckpt[key]
        if value is not None and not (is_int(value) and value >= (0 if key == "checkpoint_frequency" else 1)):
            what = (
                "a positive integer; num_to_keep: null keeps every checkpoint (the default keeps 2)"
                if key == "num_to_keep"
                else "an integer >= 0 (iterations between checkpoints; 0: only the end checkpoint)"
            )
            raise UserError(f"checkpoint_config.{key}={value!r} must be {what}", where)
    if not isinstance(ckpt["checkpoint_at_end"], bool):
        raise UserError(
            f"checkpoint_config.checkpoint_at_end={ckpt['checkpoint_at_end']!r} must be true or false (without quotes)",
            where,
        )
    order = ckpt.get("checkpoint_score_order")
    if order is not None and order not in ("max", "min"):
        raise UserError(f"checkpoint_config.checkpoint_score_order={order!r}; use 'max' or 'min'", where)
    attribute = ckpt.get("checkpoint_score_attribute")
    if attribute is not None:
        attribute = modern_metric(attribute, "checkpoint_config.checkpoint_score_attribute", where)
        ckpt["checkpoint_score_attribute"] = attribute
        error = result_key_error(attribute, "checkpoint_config.checkpoint_score_attribute", custom_metrics)
        if error:
            raise UserError(error, where)
        if not ckpt["checkpoint_frequency"] and not ckpt["checkpoint_at_end"]:
            raise UserError(
                f"checkpoint_config ranks checkpoints by {attribute}, but none is saved (checkpoint_frequency: 0, "
                "checkpoint_at_end: false); set checkpoint_frequency (e.g. 10) or checkpoint_at_end: true",
                where,
            )
        kept = f"num_to_keep: {ckpt['num_to_keep']} keeps" if ckpt.get("num_to_keep") else "Tune ranks first"
        check_direction(
            attribute, order, "checkpoint_config.checkpoint_score_order", f"{kept} the {{}} checkpoints", where
        )
    return ckpt


def check_direction(metric: Any, order: str | None, key: str, effect: str, where: str) -> None:
    """A metric ranked the wrong way round: a return (``*episode_return_*``) with ``min`` keeps the worst policy, a
    loss (``*loss*``) with ``max`` (Tune's default) the worst fit. ``effect``: what is kept, ``{}`` for the side."""
    name = str(metric)
    if "episode_return" in name and order == "min":
        worst, better, good = "lowest-return (worst-policy)", "a higher return is better", "max"
    elif "loss" in name and order in (None, "max"):
        worst, better, good = "highest-loss", "a lower loss is better", "min"
    elif key.startswith("checkpoint") and order == "min" and (name in COUNTING_STOP_KEYS or name.endswith("_lifetime")):
        worst, good = "oldest", "max"  # a count or time only grows: min keeps the first checkpoints forever
        better = "or leave checkpoint_score_attribute unset: the newest are kept"
    else:
        return
    given = f"{key.rsplit('.', 1)[-1]}: {order}" if order else f"{key.rsplit('.', 1)[-1]} unset (the default: max)"
    raise UserError(
        f"{key.split('.')[0]} ranks {metric} with {given}: {effect.format(worst)}; write "
        f"{key.rsplit('.', 1)[-1]}: {good} ({better})",
        where,
    )


def parse_wandb(block: Any, flag: bool | None, where: str) -> dict | None:
    if flag is False or (flag is None and block in (None, False)):
        return None
    if block in (None, True, False):
        block = {}
    if not isinstance(block, dict):
        raise UserError(f"wandb must be a mapping like {{project: smac_rllib}}, got {type_name(block)}", where)
    for key in block:
        if key not in WANDB_KEYS:
            raise UserError(
                f"unknown wandb key {key!r}{_WANDB_HINTS.get(key) or did_you_mean(key, WANDB_KEYS)} (valid: "
                f"{', '.join(WANDB_KEYS)})",
                where,
            )
    for key in ("tags", "excludes"):  # a string would be taken letter by letter
        if key in block and not (isinstance(block[key], list) and all(isinstance(t, str) for t in block[key])):
            raise UserError(f"wandb.{key}={block[key]!r} must be a list of strings: {key}: [{block[key]}]", where)
    for key in ("log_config", "upload_checkpoints"):
        if key in block and not isinstance(block[key], bool):
            raise UserError(f"wandb.{key}={block[key]!r} must be true or false (without quotes)", where)
    timeout = block.get("upload_timeout")
    if timeout is not None and not (is_real(timeout) and 0 <= timeout < float("inf")):
        raise UserError(f"wandb.upload_timeout={timeout!r} must be a number of seconds >= 0 (default 30)", where)
    if block.get("mode") not in (None, "online", "offline", "disabled"):
        raise UserError(f"wandb.mode={block['mode']!r}; use online, offline or disabled", where)
    project = block.get("project") or os.environ.get("WANDB_PROJECT") or DEFAULT_WANDB_PROJECT
    bad = sorted(set(str(project)) & set("/\\#?%:"))
    if bad:
        given = "wandb.project" if block.get("project") else "WANDB_PROJECT"
        entity, _, name = str(project).partition("/")
        fix = f"entity: {entity}, project: {name} (or WANDB_ENTITY={entity} WANDB_PROJECT={name})" if name else ""
        raise UserError(
            f"{given}={project!r}: a W&B project name cannot hold {' '.join(bad)}; "
            + (f"the part before '/' is the entity: {fix}" if fix else "remove them"),
            where,
        )
    return {**plain(block), "project": project}


def config_evaluates(config: dict) -> bool:
    """Whether every grid point of ``config`` evaluates (``evaluation_interval`` >= 1): ``evaluation/...`` results."""
    options = grid_options(config.get("evaluation_interval"))
    return all(is_int(v) and v >= 1 for v in options)


NOTES: list[str] = []  # notes of the files read, printed by ``print_notes`` once every check passed


def print_notes() -> None:
    while NOTES:
        note(NOTES.pop(0))


def parse_scheduler(block: Any, where: str, *, evaluates: bool = False, custom_metrics: bool = False) -> dict | None:
    """``{"type": "ASHA", ...}`` or None (FIFO); the default metric is the evaluation return when ``evaluates``."""
    if block is None:
        return None
    if isinstance(block, str):  # `scheduler: FIFO` (Tune takes a scheduler by name)
        block = {"type": block}
    if not isinstance(block, dict) or "type" not in block:
        raise UserError(
            "scheduler must be a mapping with a type, e.g. {type: ASHA, metric: "
            "evaluation/env_runners/episode_return_mean, mode: max}",
            where,
        )
    kind = SCHEDULER_TYPES.get(str(block["type"]).lower().replace("-", "_"))
    if kind is None:
        raise UserError(f"unknown scheduler type {block['type']!r}; use ASHA or FIFO", where)
    if kind == "FIFO":
        return None
    params = [p for p in inspect.signature(ASHAScheduler.__init__).parameters if p != "self"]
    options = {k: v for k, v in plain(block).items() if k != "type"}
    for key in options:
        if key not in params:
            raise UserError(
                f"unknown ASHA scheduler key {key!r}{did_you_mean(key, params)} (valid: {', '.join(params)})", where
            )
    for key in ("metric", "time_attr"):
        if key in options:
            options[key] = modern_metric(options[key], f"scheduler {key}", where)
            error = result_key_error(options[key], f"scheduler {key}", custom_metrics)
            if error:
                raise UserError(error, where)
    if error := time_attr_error(options.get("time_attr"), PER_ITERATION_KEYS):  # ASHA's time must grow with the run
        raise UserError(error, where)
    _check_asha_values(options, where)
    if str(options.get("metric", "")).startswith("evaluation/") and not evaluates:
        raise UserError(
            f"scheduler metric {options['metric']!r} is reported only when the experiment evaluates; add "
            "`evaluation_interval: 10` to the config, or use metric: env_runners/episode_return_mean (the training "
            "return)",
            where,
        )
    if "metric" not in options:  # Tune's ASHA needs one: ours by default, said (the user named none)
        options["metric"] = EVAL_RETURN if evaluates else TRAIN_RETURN
        NOTES.append(  # said once every check passed (train.py), not before a refusal's line
            f"{where}: ASHA ranks the trials on {options['metric']} ({options.get('mode', 'max')}), the default; set "
            "the scheduler's metric and mode to rank on another result key"
        )
    check_direction(
        options["metric"], options.get("mode"), "scheduler.mode", "ASHA would stop all but the {} trials", where
    )
    options.setdefault("mode", "max")
    options.setdefault("time_attr", "training_iteration")
    return {"type": "ASHA", **options}


def asha_stop(block: Any) -> dict | None:
    """``{time_attr: max_t}`` of an ASHA scheduler block that gives ``max_t``: Tune's ASHA stops every trial there, so
    an experiment without ``stop:`` still ends (None otherwise)."""
    if not isinstance(block, dict) or str(block.get("type", "")).lower() != "asha" or "max_t" not in block:
        return None
    return {block.get("time_attr") or "training_iteration": block["max_t"]}


def _check_asha_values(options: dict, where: str) -> None:
    """ASHA's numbers and mode (Tune checks some of them only when the run starts, after Ray)."""
    mode = options.get("mode")
    if mode is not None and mode not in ("max", "min"):
        raise UserError(f"scheduler mode={mode!r}; use 'max' or 'min' (max for returns)", where)
    for key, hint in (
        ("max_t", " (in units of time_attr, e.g. iterations)"),
        ("grace_period", " (in units of time_attr)"),
        ("brackets", ""),
    ):
        value = options.get(key, 1)
        if not (is_int(value) and value >= 1):
            raise UserError(f"scheduler {key}={value!r} must be an integer >= 1{hint}", where)
    factor = options.get("reduction_factor")
    if factor is not None and not (is_real(factor) and 1 < factor < float("inf")):
        raise UserError(
            f"scheduler reduction_factor={factor!r} must be > 1 (e.g. 3: keep the top third at each rung)", where
        )
    grace, max_t = options.get("grace_period", 1), options.get("max_t", 100)
    if isinstance(grace, int) and isinstance(max_t, int) and grace > max_t:
        raise UserError(
            f"scheduler grace_period={grace} must be <= max_t={max_t}; lower grace_period or raise max_t", where
        )
    last = options.get("stop_last_trials")
    if last is not None and not isinstance(last, bool):
        raise UserError(f"scheduler stop_last_trials={last!r} must be true or false (without quotes)", where)


def plain(value: Any) -> Any:
    """MarkedDict -> dict, recursively (what Tune and RLlib get)."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


# Legacy names of experiment keys (experiment_spec.EXPERIMENT_KEYS) from RLlib's old tuned examples (value: new name).
LEGACY_EXPERIMENT_KEYS = {
    "local_dir": "storage_path",
    "checkpoint_freq": "checkpoint_config.checkpoint_frequency",
    "checkpoint_at_end": "checkpoint_config.checkpoint_at_end",
    "keep_checkpoints_num": "checkpoint_config.num_to_keep",
    "checkpoint_score_attr": "checkpoint_config.checkpoint_score_attribute",  # Tune < 2.0
}


def translate_legacy_keys(body: MarkedDict, path: str) -> MarkedDict:
    """Tune's older experiment keys (``local_dir``, ``checkpoint_freq``, ...) read under their names now, each said in
    a note; an old and a new name of one setting together are refused."""
    if not any(k in LEGACY_EXPERIMENT_KEYS for k in body):
        return body
    out = MarkedDict(body)
    out.line, out.key_lines = body.line, dict(getattr(body, "key_lines", {}))
    for old, new in LEGACY_EXPERIMENT_KEYS.items():
        if old not in out:
            continue
        where = f"{path}:{out.key_lines.get(old)}" if out.key_lines.get(old) else path
        top, _, sub = new.partition(".")
        present = out.get(top)
        if (sub and isinstance(present, dict) and sub in present) or (not sub and top in out):
            raise UserError(f"{old} is Tune's older name of {new}, and {new} is set too; keep one ({new})", where)
        note(f"{where}: {old} is Tune's older name; read as {new} (write that to silence this note)")
        value, extra = out.pop(old), {}
        if old == "checkpoint_score_attr" and isinstance(value, str) and value.startswith("min-"):
            value, extra = value[4:], {"checkpoint_score_order": "min"}  # Tune < 2.0 wrote the order as a prefix
        if sub:
            out.setdefault(top, {})
            out[top] = {**out[top], sub: value, **extra}
            out.key_lines.setdefault(top, out.key_lines.get(old))
        else:
            out[new] = value
            out.key_lines[new] = out.key_lines.get(old)
    return out
