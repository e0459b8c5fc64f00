"""Tuned-example YAML -> checked ``ExperimentSpec`` objects, every mistake reported as a one-line ``UserError``.

The format is RLlib's classic tuned-example format, plus a few optional keys (all but ``run``/``env``/``config``
are optional)::

    smac-state-cheetah-run:                     # experiment name = its directory under the storage path
      run: SMAC                                 # SMAC | SACBaseline | any RLlib algorithm (SAC, PPO, ...)
      env: dmc/cheetah-run                      # dmc/<domain>-<task> or a gymnasium id
      stop: {env_runners/num_env_steps_sampled_lifetime: 1000000}   # "a/b" = result["a"]["b"]; any one stops
      num_samples: 1                            # repeats of every grid point (use a seed grid for seeds)
      checkpoint_config: {checkpoint_frequency: 10, num_to_keep: 2, checkpoint_at_end: true}
      storage_path: ~/ray_results               # results go to <storage_path>/<experiment name>
      max_failures: 2                           # trial restarts from its last checkpoint (Tune FailureConfig)
      max_concurrent_trials: 4
      wandb: {project: smac_rllib, group: state}                     # WandbLoggerCallback arguments
      scheduler: {type: ASHA, metric: evaluation/env_runners/episode_return_mean, mode: max, ...}
      warm_up_only: false                       # true: a run of the uniform warm-up alone (no gradient update)
      config:                                   # AlgorithmConfig keys, as in config.to_dict()
        num_particles: {grid_search: [8, 16, 32]}                    # grid_search works at any depth
        evaluation_interval: 10                 # RLlib's .evaluation(...): every 10 iterations, 10 episodes of
        evaluation_duration: 10                 #   the deterministic policy -> evaluation/env_runners/...
        evaluation_config: {explore: false}

Metrics under ``evaluation/`` (stop criteria, the scheduler's metric) need ``evaluation_interval`` in every grid
point; the scheduler's default metric is the evaluation return when the experiment evaluates, else the
training return.

Several experiments in one file run in order. Shared settings go in a template, a top-level ``.name`` (GitLab
CI) or ``x-name`` (compose) entry that is not run, merged with YAML's ``<<:`` (shallow: merge nested mappings
too; ``yaml_reader.py``)::

    .smac: &smac {run: SMAC, env: dmc/cheetah-run, stop: {training_iteration: 100}, config: &config {seed: 0}}
    smac-k8:  {<<: *smac, config: {<<: *config, num_particles: 8}}
    smac-k32: {<<: *smac, config: {<<: *config, num_particles: 32}}

Numbers like ``3e-4`` are floats (YAML 1.1 would read a string). Everything is checked before Ray starts
(``checks.py``): value ranges, NaN/inf, env_config, every grid point (up to ``MAX_GRID_POINTS`` trials; each distinct
one as it will run, its envs and module built: ``trial_check.py``), stop/scheduler/checkpoint result keys, the storage
path. A file must be UTF-8 (``yaml_reader.py``), at most ``MAX_YAML_BYTES``, nested at most ``MAX_YAML_DEPTH`` levels
and expand to at most ``MAX_YAML_VALUES`` values through its aliases; mapping keys are plain names or numbers.
"""

from __future__ import annotations

import contextlib
import copy
import difflib
import re
from typing import Any

from ray.rllib.algorithms.registry import ALGORITHMS

from smac_rllib.core.values import is_int
from smac_rllib import TRAINABLES, algorithms
from smac_rllib.algorithms import config_questions
from smac_rllib.cli.checks import check_config, config_key_hint
from smac_rllib.cli.env_checks import check_env, check_modalities
from smac_rllib.cli.errors import UserError, did_you_mean, one_line, type_name
from smac_rllib.cli.experiment_parts import (
    config_evaluates,
    parse_checkpoint_config,
    parse_scheduler,
    parse_stops,
    warn_seed_grid,
    parse_wandb,
    plain,
    translate_legacy_keys,
)
from smac_rllib.cli.experiment_spec import (
    check_experiment_name,
    EXPERIMENT_KEYS,
    FOREIGN_EXPERIMENT_KEYS,
    ExperimentSpec,
    Overrides,
)
from smac_rllib.cli.grids import MAX_GRID_POINTS, check_grids, grid_variants, num_grid_points
from smac_rllib.cli.ranges import check_finite, config_errors
from smac_rllib.cli.ray_output import quiet
from smac_rllib.cli import experiment_parts, experiment_spec, grids, trial_check
from smac_rllib.cli.storage import resolve_storage_path
from smac_rllib.cli.same_trials import merge_cli_config, trial_labels, variant_key
from smac_rllib.cli.trial_check import check_trials, in_trial, line_of_message
from smac_rllib.cli.tune_keys import parse_run_options, tune_key_hint
from smac_rllib.cli.yaml_reader import MarkedDict, is_template, read_yaml

# --------------------------------------------------------------------------------------------- experiments

OUR_ALGORITHMS = TRAINABLES  # smac_rllib.TRAINABLES: one list of our run names


def load_experiments(path: str, overrides: Overrides | None = None, *, build: bool = True) -> list[ExperimentSpec]:
    """Read and check every experiment of ``path``; ``build`` also validates each grid point's AlgorithmConfig."""
    doc = read_yaml(path)
    names = [name for name in doc if not is_template(name)]
    if not names:
        raise UserError(
            f"{path} holds only templates ({', '.join(map(str, doc))}: names starting with '.' or 'x-' are not run); "
            "add an experiment that merges one, e.g. `my-run: {<<: *defaults}`"
        )
    if "run" in names and not isinstance(doc["run"], dict):  # one experiment's keys at the top level
        raise UserError(
            f"the file's top level holds one experiment's keys ({', '.join(map(str, names))}): put them under an "
            "experiment name, e.g. `my-run:` on the first line and every key indented below it",
            f"{path}:{doc.line_of('run')}",
        )
    specs = [parse_experiment(name, doc[name], doc, path, overrides or Overrides()) for name in names]
    _check_distinct_experiments(specs, doc, path)
    if build:
        for spec in specs:
            spec.configs = build_configs(spec)
    return specs


def _check_distinct_experiments(specs: list[ExperimentSpec], doc: MarkedDict, path: str) -> None:
    """Two experiments of one file that are the same run (a base merged into variants that change nothing, a copy)
    would train the same trials twice."""
    seen: dict[str, str] = {}
    for spec in specs:
        key = repr((spec.run, spec.stop, spec.num_samples, sorted(spec.param_space.items(), key=lambda kv: kv[0])))
        if key in seen:
            first = seen[key]
            raise UserError(
                f"experiments {first!r} and {spec.name!r} are the same run (same run, env, stop and config); drop one "
                f"(a template to merge from is named '.{first.lstrip('._')}' or 'x-{first.lstrip('._')}' and is not "
                "run)",
                f"{path}:{doc.line_of(spec.name)}",
            )
        seen[key] = spec.name


def parse_experiment(name: Any, body: Any, doc: MarkedDict, path: str, ov: Overrides) -> ExperimentSpec:
    where = f"{path}:{doc.line_of(name)}"
    check_experiment_name(name, body, where)
    body = translate_legacy_keys(body, path)
    for key in body:
        if key not in EXPERIMENT_KEYS:
            hint = FOREIGN_EXPERIMENT_KEYS.get(key) or _config_key_hint(key, body) or tune_key_hint(key)
            hint = hint or did_you_mean(key, EXPERIMENT_KEYS)
            raise UserError(f"unknown experiment key {key!r}{hint}", _where(path, body, key))

    grids.check_experiment_keys(body, lambda key: _where(path, body, key))
    run = body.get("run")
    if not run:
        raise UserError(f"experiment {name!r} has no `run:`; add e.g. `run: SMAC` (or SACBaseline, SAC)", where)
    algo_class = algorithm_class(run, _where(path, body, "run"))

    config = body.get("config") or {}
    if not isinstance(config, dict):
        raise UserError(
            f"`config:` must be a mapping of config keys, got {type_name(config)}", _where(path, body, "config")
        )
    grids.check_whole_config_grid(config, _where(path, body, "config"))
    marked_config, config_lines = config, {k: _where(path, config, k) for k in config}
    grids.check_shared_grids(config, config_lines.get)
    config = plain(config)
    if "env" in body and "env" in config and config["env"] != body["env"]:
        raise UserError(
            f"env given twice ({body['env']!r} and config.env {config['env']!r}); keep one", _where(path, body, "env")
        )
    if ov.config:
        config = merge_cli_config(config, ov.config, f"{path} (--config)")
    if "env" in body and not (ov.config and "env" in ov.config):  # --config '{"env": ...}' replaces the file's env
        config["env"] = plain(body["env"])
        config_lines["env"] = _where(path, body, "env")
    if ov.seed is not None:
        warn_seed_grid(name, config.get("seed"), ov.seed)
        config["seed"] = ov.seed
    if "model_config" in config:  # `config.rl_module(model_config=...)`; the attribute behind it is `_model_config`
        config["_model_config"] = config.pop("model_config")
        config_lines["_model_config"] = config_lines.get("model_config", where)

    def line_of(key: str, sub: Any = None) -> str:
        if ov.config and key in ov.config:
            return f"{path} (--config)"
        nested = marked_config.get(key) if isinstance(marked_config, dict) else None
        if sub is not None and isinstance(nested, MarkedDict) and sub in nested:
            return _where(path, nested, sub)
        return config_lines.get(key, where)

    if "env" not in config:
        raise UserError(
            f"experiment {name!r} has no env; add e.g. `env: dmc/cheetah-run` (list: python -m smac_rllib.envs --list)",
            where,
        )
    _check_values(config, line_of)
    config_questions.fill_defaults(config, algo_class)  # e.g. float frames for RLlib's DreamerV3
    check_env(config, algo_class, line_of)
    try:
        check_config(config, algo_class, line_of)
    except UserError as e:  # a --config key that one experiment of several does not have: --config reaches them all
        if f"{path} (--config)" not in str(e) or sum(not is_template(k) for k in doc) < 2:
            raise
        raise UserError(
            f"{e}; --config goes into every experiment of the file ({name!r} too): set it in the file"
        ) from None

    custom = any(str(k).startswith("callbacks") for k in config)  # callbacks may report metrics of their own
    block = plain(body.get("stop")) or experiment_parts.asha_stop(body.get("scheduler"))  # ASHA's max_t ends trials
    stop, dropped = parse_stops(block, ov.stop, _where(path, body, "stop"), custom_metrics=custom)
    if not stop:
        raise UserError(
            f"experiment {name!r} has no stop criterion; add e.g. `stop: {{training_iteration: 100}}` or pass --stop",
            where,
        )

    num_samples = ov.num_samples if ov.num_samples is not None else body.get("num_samples", 1)
    if not (is_int(num_samples) and num_samples >= 1):
        raise UserError(f"num_samples={num_samples!r} must be an integer >= 1", _where(path, body, "num_samples"))

    ckpt = parse_checkpoint_config(
        body.get("checkpoint_config"), _where(path, body, "checkpoint_config"), custom_metrics=custom
    )

    if ov.storage_path and body.get("storage_path") not in (None, ov.storage_path):  # as documented, and said
        experiment_parts.NOTES.append(f"--storage-path {ov.storage_path} replaces the file's {body['storage_path']}")
    storage_path = ov.storage_path or body.get("storage_path")  # every form checked alike, the default too
    storage_where = "--storage-path" if ov.storage_path else _where(path, body, "storage_path")
    storage_path = resolve_storage_path(storage_path, storage_where)

    max_failures = body.get("max_failures", 2)
    if not (is_int(max_failures) and max_failures >= -1):
        raise UserError(
            f"max_failures={max_failures!r} must be an integer >= -1 (-1: retry forever)",
            _where(path, body, "max_failures"),
        )
    evaluates = config_evaluates(config)
    for key in stop:
        if key.startswith("evaluation/") and not evaluates:
            raise UserError(
                f"stop criterion {key!r} is reported only when the experiment evaluates; add `evaluation_interval: 10` "
                "(and evaluation_duration, evaluation_config: {explore: false}) to every grid point's config",
                _where(path, body, "stop") if ov.stop is None else "--stop",
            )
    scheduler = parse_scheduler(
        body.get("scheduler"), _where(path, body, "scheduler"), evaluates=evaluates, custom_metrics=custom
    )
    score = ckpt.get("checkpoint_score_attribute")
    if isinstance(score, str) and score.startswith("evaluation/") and not evaluates:
        raise UserError(
            f"checkpoint_config.checkpoint_score_attribute {score!r} is reported only when the experiment evaluates "
            "(checkpoints would be ranked on nothing); add `evaluation_interval: 10` to every grid point's config or "
            "rank on env_runners/episode_return_mean",
            _where(path, body, "checkpoint_config"),
        )
    check_modalities(config, line_of)
    if config.get("async_learning") is False:  # the synchronous loop reports no async/ metrics
        named = [*stop, *([score] if isinstance(score, str) else []), *([scheduler["metric"]] if scheduler else [])]
        for key in (k for k in named if str(k).startswith("async/")):
            raise UserError(
                f"{key!r} is reported by the asynchronous loop only, and this experiment sets async_learning: "
                "false; name another result key or drop async_learning: false",
                _where(path, body, "stop"),
            )

    options = parse_run_options(body, lambda key: _where(path, body, key))

    return ExperimentSpec(
        name=name,
        run=run,
        algo_class=algo_class,
        param_space=config,
        stop=stop,
        num_samples=num_samples,
        checkpoint_config=ckpt,
        storage_path=storage_path,
        max_failures=max_failures,
        max_concurrent_trials=options["max_concurrent_trials"],
        wandb=parse_wandb(body.get("wandb"), ov.wandb, _where(path, body, "wandb")),
        scheduler=scheduler,
        source=path,
        key_lines=config_lines,
        warm_up_only=options["warm_up_only"],
        dropped_stop=dropped,
        log_to_file=options["log_to_file"],
    )


def _check_values(config: dict, line_of) -> None:
    """grid_search shapes and NaN/inf anywhere in the config (env_config per key, for its line)."""
    for key, value in config.items():
        if key == "env_config" and isinstance(value, dict):
            for sub, sub_value in value.items():
                check_grids(sub_value, f"env_config.{sub}", line_of("env_config", sub))
                check_finite(sub_value, f"env_config.{sub}", line_of("env_config", sub))
            continue
        check_grids(value, str(key), line_of(key))
        check_finite(value, str(key), line_of(key))


# --------------------------------------------------------------------------------------------- algorithms


def _config_key_hint(key: Any, body: dict) -> str:
    """``; num_particles is a config key of SMAC: ...`` when an experiment's unknown key is one of its config's; an
    experiment nested in a wrapper (``experiments: {name: {run: ...}}``) is said as one."""
    if isinstance(body.get(key), dict) and "run" in body[key]:
        return f"; {key} is an experiment nested one level too deep: experiments are the file's top-level keys"
    with contextlib.suppress(UserError):  # no run, or an unknown one: said next
        return config_key_hint(key, algorithm_class(body.get("run"), ""))
    return ""


def algorithm_class(run: Any, where: str) -> type:
    """The Algorithm class behind a ``run:`` name: ours (SMAC, SACBaseline) or RLlib's registry (SAC, PPO, ...)."""
    options = run.get("grid_search") if isinstance(run, dict) else run
    if isinstance(options, list):  # a sweep over algorithms: Tune would build one algorithm's config class for all
        names = [str(o).lower() for o in options[:2]] if len(options) >= 2 else ["smac", "sacbaseline"]
        raise UserError(
            "run cannot be swept (each algorithm has its own config class): write one experiment per algorithm in "
            f"the same file, e.g. a `.defaults` template merged into `{names[0]}:` and `{names[1]}:` with "
            "`<<: *defaults`",
            where,
        )
    if isinstance(run, dict):
        raise UserError(f"run must be one algorithm name, e.g. `run: SMAC`, got {type_name(run)}", where)
    if run in OUR_ALGORITHMS:
        return getattr(algorithms, run)
    if isinstance(run, str) and run in ALGORITHMS:
        with quiet():
            return ALGORITHMS[run]()[0]
    names = list(OUR_ALGORITHMS) + sorted(ALGORITHMS)
    text = str(run).rsplit(".", 1)[-1]  # ray.rllib.algorithms.sac.SAC: its class name
    lower = {n.lower(): n for n in names}
    close = [lower[text.lower()]] if text.lower() in lower else difflib.get_close_matches(text, names, n=1, cutoff=0.5)
    hint = experiment_spec.paper_run_hint(text) or (f"did you mean {close[0]!r}? " if close else "")
    raise UserError(f"unknown run {run!r}; {hint}(available: {', '.join(names)})", where)


# --------------------------------------------------------------------------------------------- grid points


def build_configs(spec: ExperimentSpec) -> list:
    """An AlgorithmConfig per grid point, each validated (``smac_errors()`` first, then RLlib's ``validate()``)."""
    points = num_grid_points(spec.param_space)
    if points * spec.num_samples > MAX_GRID_POINTS:
        raise UserError(
            f"experiment {spec.name!r} has {points:,} grid points x {spec.num_samples} sample(s) = "
            f"{points * spec.num_samples:,} trials, more than {MAX_GRID_POINTS:,}; shorten the grid_search lists or "
            "split the sweep into experiments",
            spec.source,
        )
    variants = grid_variants(spec.param_space, limit=MAX_GRID_POINTS)  # every point, not a sample of them
    labels = trial_labels(variants)
    built: dict[str, Any] = {}  # identical grid points: one config, checked once
    trials = []
    for variant, label in zip(variants, labels, strict=True):
        key = variant_key(variant)
        if key not in built:
            trial_check.check_grid_point(spec, label, variant)  # names and types before the config is made
            try:
                built[key] = _build_config(spec, variant)
            except UserError as e:
                raise UserError(in_trial(label, str(e))) from None
            trials.append((label, variant, built[key]))
    check_trials(spec, trials)  # envs, nested keys, modules: each distinct trial as it will run
    return [built[variant_key(v)] for v in variants]


def _build_config(spec: ExperimentSpec, variant: dict):
    with quiet():
        config = spec.algo_class.get_default_config()
        try:
            config.update_from_dict(copy.deepcopy(variant))
        except Exception as e:  # noqa: BLE001 - RLlib raises anything for a bad value
            raise UserError(f"experiment {spec.name!r}: {one_line(e)}", spec.source) from None
        errors = config_errors(config) + config_questions.unused_keys(config, variant)
        if errors:
            raise UserError(errors[0], line_of_message(spec, errors[0]))
        try:
            config.validate()
        except Exception as e:  # noqa: BLE001
            message = _RLLIB_SUPPRESS_HINT.sub("", one_line(e))  # not a fix to suggest
            message += next((fix for text, fix in _RLLIB_FIXES.items() if text in message), "")
            raise UserError(message, line_of_message(spec, str(e))) from None
    return config


_RLLIB_SUPPRESS_HINT = re.compile(r"\s*To suppress all validation errors.*$")
# RLlib's messages that name no fix -> the fix.
_RLLIB_FIXES = {
    "`evaluation_duration=auto` not supported": " Set evaluation_duration to a number (e.g. 10 episodes), or "
    "evaluation_parallel_to_training: true with evaluation_num_env_runners >= 1.",
}


# --------------------------------------------------------------------------------------------- helpers


def _where(path: str, mapping: Any, key: Any) -> str:
    line = mapping.line_of(key) if isinstance(mapping, MarkedDict) else None
    return f"{path}:{line}" if line else path
