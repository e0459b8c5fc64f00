"""Which trials of a sweep are the same run: the grid points that make one trial (``variant_key``), the labels that
tell trials apart (``trial_labels``: the keys whose values differ), and the checks that refuse a sweep whose trials
would run the same settings under different labels -- hours of compute that a user reads as an ablation:

- a setting another one switches off in every trial (``Field.read_when``: ``mlmc_average_level0`` with
  ``estimator: nested``; RLlib's evaluation settings without ``evaluation_interval``), written or swept;
- two grid points that differ as written but not as run: an automatic value (``initial_alpha: null`` is 0.1 for a
  state run; a pixel run's unset ``env_config.action_repeat`` is 2; ``target_entropy: auto`` is -|A|, from the env the
  trial check builds; a replay ``capacity`` above the run's env steps holds them all), or a setting that is switched
  off in both
  (``mlmc_average_level0: [true, false]`` beside ``estimator: [nested, mlmc]``: the two nested trials are one run).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from smac_rllib.cli.errors import UserError, warn
from smac_rllib.cli.grids import MAX_GRID_POINTS, check_grids, deep_merge, grid_variants
from smac_rllib.core.values import is_number
from smac_rllib.cli.experiment_spec import ExperimentSpec
from smac_rllib.cli.results import ENV_STEP_KEYS, action_repeat

UNSET = "<unset>"


def variant_key(variant: dict) -> str:
    """Equal for grid points that make the same trial (their mappings' key order aside)."""
    return repr(flatten(variant))


def trial_labels(variants: list[dict]) -> list[str]:
    """``num_particles=8, env_config.time_limit=0.5`` per variant: the keys whose values differ between them."""
    flat = [flatten(v) for v in variants]
    varying = varying_paths(flat)
    return [", ".join(f"{p}={f[p]!r}" for p in varying if p in f) for f in flat]


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """``{"env_config.time_limit": 0.5, ...}``: every leaf of a nested mapping by its dotted path."""
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for key in sorted(value, key=repr):
            out |= flatten(value[key], f"{prefix}{key}.")
        return out
    return {prefix[:-1]: value}


def varying_paths(flat: list[dict[str, Any]]) -> list[str]:
    paths = dict.fromkeys(p for f in flat for p in f)
    return [p for p in paths if len({repr(f.get(p, UNSET)) for f in flat}) > 1]


def check_same_trials(
    spec: ExperimentSpec, trials: list[tuple[str, dict, Any]], run_values: Callable[[Any], dict] = lambda config: {}
) -> None:
    """Each distinct trial (label, grid point, validated config) runs settings of its own (see the module doc);
    ``run_values(config)``: {setting: (its value as run, "what that is")} for what the env's spaces or the run's
    length decide (``target_entropy: auto`` is -|A|; a replay larger than the run's env steps holds them all)."""
    _check_switched_off(spec, trials)
    _check_warm_up_grid(spec, trials)
    _check_resolved_alike(spec, trials, run_values)
    _check_training_alike(spec, trials)
    _warn_frames_apart(spec, trials)


def _switched_off(config, variant: dict) -> dict[str, str]:
    own = getattr(config, "switched_off_keys", lambda written: {})(variant)
    return _rllib_switched_off(config, variant) | own


def _rllib_switched_off(config, variant: dict) -> dict[str, str]:
    """RLlib's evaluation settings are read only when an evaluation runs (``evaluation_interval`` >= 1)."""
    if getattr(config, "evaluation_interval", None):
        return {}
    return {
        key: f"{key}={variant[key]!r} is not read: no evaluation runs without evaluation_interval; set "
        f"evaluation_interval: N (training iterations between evaluations) or remove {key}"
        for key in variant
        if isinstance(key, str) and key.startswith("evaluation_") and key != "evaluation_interval"
    }


# Settings read by gradient updates only: under ``warm_up_only`` (no update) trials that differ in them are one run.
UPDATE_ONLY_KEYS = (
    "tau", "gamma", "train_batch_size_per_learner", "batch_size_B", "batch_length_T", "updates_per_env_step",
    "target_network_update_freq", "target_entropy", "initial_alpha", "grad_clip",
)  # fmt: skip


def _check_warm_up_grid(spec: ExperimentSpec, trials: list[tuple[str, dict, Any]]) -> None:
    """``warm_up_only: true`` runs the uniform random warm-up alone: a sweep over what only the updates read (a
    learning rate, tau, the batch) runs the same run in every trial."""
    varying = varying_paths([flatten(variant) for _, variant, _ in trials]) if spec.warm_up_only else []
    for path in varying:
        top = path.split(".")[0]
        if top in UPDATE_ONLY_KEYS or top == "lr" or top.endswith("_lr"):
            raise UserError(
                f"warm_up_only: true runs no gradient update, so the {top} sweep changes nothing (its trials run "
                f"alike); drop the {top} sweep or warm_up_only",
                spec.key_lines.get(top, spec.source),
            )


def _deliberately_off(key: str, variant: dict) -> bool:
    """``evaluation_interval: 0`` written (e.g. ``--config`` turning off a file's evaluation) leaves the file's other
    evaluation settings unread on purpose; a sweep of them is still refused (its trials run alike)."""
    return key.startswith("evaluation_") and "evaluation_interval" in variant


def _check_switched_off(spec: ExperimentSpec, trials: list[tuple[str, dict, Any]]) -> None:
    """A written setting that another one switches off in *every* trial (``Field.read_when``: mlmc_average_level0 with
    estimator nested); off in some trials only (an estimator sweep keeping one MLMC option) is a valid ablation."""
    per_trial = [
        {key: why for key, why in _switched_off(config, variant).items() if not _deliberately_off(key, variant)}
        for _, variant, config in trials
    ]
    common = set.intersection(*(set(found) for found in per_trial)) if per_trial else set()
    if common:
        key = sorted(common)[0]
        label = trials[0][0]
        where = spec.key_lines.get(key, spec.source)
        raise UserError(f"{where}: {'trial ' + label + ': ' if label else ''}{per_trial[0][key]}")


def _number(value: Any) -> Any:
    """1 and 1.0 are one setting (a row's ``float`` kind takes integers)."""
    return float(value) if is_number(value) and not isinstance(value, bool) else value


def _env_as_made(config) -> dict[str, Any]:
    """``env_config.*`` as the env is made: a DMC task's action repeat filled in (2 for pixels, else 1)."""
    env_config = dict(config.env_config or {})
    if isinstance(config.env, str) and config.env.startswith("dmc/") and env_config.get("action_repeat") is None:
        env_config["action_repeat"] = action_repeat({"env_config": env_config})
    return flatten({"env_config": env_config})


def _as_run(path: str, flat: dict[str, Any], config, off: dict[str, str], run_values: dict) -> tuple[Any, str]:
    """(the value a trial runs with at ``path``, why it differs from the written one, or "")."""
    written = flat.get(path, UNSET)
    if path in off:
        return "<not read>", off[path].split(";")[0]
    if path in run_values and repr(_number(run_values[path][0])) != repr(_number(written)):
        return _number(run_values[path][0]), f"{path}={written!r} is {run_values[path][1]}"
    if path.startswith("env_config."):
        made = _env_as_made(config).get(path, UNSET)
        if repr(_number(made)) != repr(_number(written)):
            shown = f"={written!r}" if written is not UNSET else " (unset)"
            return _number(made), f"{path}{shown} is {made!r} for {config.env}"
        return _number(made), ""
    other = getattr(config, "NONE_IS", {}).get(path)
    if other and written in (None, UNSET):  # `flow_hidden_dim: null` is hidden_dim
        value = getattr(config, other)
        return _number(value), f"{path}={None if written is UNSET else written!r} is {other} ({value!r})"
    fields = getattr(config, "ALL_FIELDS", {})
    if "." not in path and path in fields and fields[path].auto is not None:
        value = config.resolved(path)
        if repr(_number(value)) != repr(_number(written)):
            modality = "pixel" if config.is_pixels else "state"
            return _number(value), f"{path}={written!r} is {value!r} for a {modality} run"
        return _number(value), ""
    return _number(written), ""


def _check_resolved_alike(spec: ExperimentSpec, trials: list[tuple[str, dict, Any]], run_values: Callable) -> None:
    """Two trials whose varying settings, as they run, are equal: the same run twice under two labels."""
    flat = [flatten(variant) for _, variant, _ in trials]
    varying = varying_paths(flat)
    if not varying:
        return
    seen: dict[str, int] = {}
    as_run = {}
    for i, (label, variant, config) in enumerate(trials):
        off = _switched_off(config, variant)
        values = run_values(config)
        as_run[i] = run = [_as_run(path, flat[i], config, off, values) for path in varying]
        key = repr([value for value, _ in run])
        if key not in seen:
            seen[key] = i
            continue
        j = seen[key]
        first = as_run[j]
        path, why = next((p, a[1] or b[1]) for p, a, b in zip(varying, first, run, strict=True) if a[1] or b[1])
        where = spec.key_lines.get(path.split(".")[0], spec.source)
        first_label, label = (f"[{x}]" if ", " in x else x or f"(without {path})" for x in (trials[j][0], label))
        raise UserError(
            f"{where}: trials {first_label} and {label} run the same settings ({why}): the sweep "
            f"would train the same run twice; drop one of the values, or write the sweep as a grid_search of whole "
            "mappings that lists only the runs that differ",
        )


# Our loops' settings that only decide how the run is reported (an iteration's size), not what it learns: the updates
# follow the env steps (training/rate_limiter.py), whatever an iteration holds; with an iteration-count stop they do
# decide the run's length.
REPORTING_KEYS = (
    "min_sample_timesteps_per_iteration",
    "min_time_s_per_iteration",
    "metrics_num_episodes_for_smoothing",
)
SPEED_KEYS = ("torch_num_threads",)  # how fast a run computes, never what it learns
LOGGING_KEYS = ("log_level", "log_sys_usage", "log_gradients")  # what a run logs, never what it learns
# Ray's resource requests: reservations that place a trial's actors, not limits on what they use (no cgroups)
RESOURCE_KEYS = tuple(
    f"{what}_{whose}"
    for what in ("num_cpus", "custom_resources")
    for whose in ("per_env_runner", "for_main_process", "per_learner")
) + ("placement_strategy",)


def _check_training_alike(spec: ExperimentSpec, trials: list[tuple[str, dict, Any]]) -> None:
    """Trials that differ only in how they are evaluated or reported train the same run (same seed, same updates)."""
    if len(trials) < 2 or not all(hasattr(config, "async_learning") for _, _, config in trials):
        return
    varying = varying_paths([flatten(variant) for _, variant, _ in trials])
    if varying and set(varying) <= set(SPEED_KEYS) and spec.max_concurrent_trials != 1:
        raise UserError(
            f"{spec.key_lines.get(varying[0], spec.source)}: the trials differ only in {', '.join(varying)}, which "
            f"changes how fast a run trains, not what it learns: the same run {len(trials)} times, side by side (so "
            "sharing the cores: their speeds do not compare either); to compare speeds add max_concurrent_trials: 1 "
            "(one trial at a time), or set one value"
        )
    counted = "training_iteration" in spec.stop
    reporting = [p for p in varying if p in LOGGING_KEYS or (p in REPORTING_KEYS and not counted)]
    resources = [p for p in varying if p.split(".")[0] in RESOURCE_KEYS]
    if not varying or not all(p.startswith("evaluation_") or p in reporting + resources for p in varying):
        return
    where = spec.key_lines.get(varying[0].split(".")[0], spec.source)
    if resources and len(resources) == len(varying):
        raise UserError(
            f"{where}: the trials differ only in {', '.join(varying)}: Ray's resource requests reserve a share of a "
            f"node to place a trial's processes, they do not limit what those use, so the sweep trains the same run "
            f"{len(trials)} times; set one value (the live line shows each run's steps/s), or sweep a training setting"
        )
    if "evaluation_config.seed" in varying:
        raise UserError(
            f"{where}: seed is swept inside evaluation_config: the {len(trials)} trials train with the same seed "
            f"({trials[0][2].seed}) and differ only in the evaluation's seed; move the grid up to config.seed"
        )
    same = (
        f"the trials differ only in {', '.join(varying)}, which change how a run is evaluated or reported, not what it "
        f"learns: the sweep trains the same run {len(trials)} times"
    )
    if any(p.startswith(("evaluation_config.env", "evaluation_config.render_env")) for p in varying):
        warn(f"{where}: {same} (to evaluate one policy on several envs; `rllib evaluate` keeps the training env)")
        return
    raise UserError(
        f"{where}: {same}; train one trial and evaluate its checkpoints with `rllib evaluate` (--episodes, --seed), "
        "or sweep a training setting (seed, updates_per_env_step, ...)"
    )


def _warn_frames_apart(spec: ExperimentSpec, trials: list[tuple[str, dict, Any]]) -> None:
    """A sweep over the action repeat under a stop in agent steps gives the trials different numbers of env frames
    (the x-axis of the paper's curves and of ``rllib plot``)."""
    stops = [key for key in ENV_STEP_KEYS if key in spec.stop]
    repeats = sorted({_env_as_made(config).get("env_config.action_repeat") for _, _, config in trials} - {None})
    if not stops or len(repeats) < 2:
        return
    steps = int(spec.stop[stops[0]])
    frames = " vs ".join(f"{steps * r:,}" for r in repeats)
    warn(
        f"{spec.source}: the trials run action_repeat {repeats} under a stop in agent steps ({stops[0]}: {steps:,}): "
        f"they see {frames} env frames; to compare at equal frames, give each action repeat its own experiment with "
        f"the stop at frames / action_repeat agent steps"
    )


def merge_cli_config(config: dict, cli: dict, where: str) -> dict:
    """``--config`` merged into the file's config; a key it sets in every point of a sweep of that key would make the
    sweep's trials one run under several labels."""
    for key, value in cli.items():  # its own grids first (an empty one would count as a lost sweep)
        check_grids(value, str(key), where)
    merged = deep_merge(config, cli)
    before = {variant_key(v) for v in grid_variants(config, limit=MAX_GRID_POINTS)}
    after = {variant_key(v) for v in grid_variants(merged, limit=MAX_GRID_POINTS)}
    if len(after) < len(before):
        raise UserError(
            f"--config {json.dumps(cli)} sets a key the file sweeps in every point of the sweep: its {len(before)} "
            f"trials would be {len(after)} run(s) under {len(before)} labels; drop that key from --config (or the "
            "sweep from the file)",
            where,
        )
    return merged
