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
      config:                                   # AlgorithmConfig keys, as in config.to_dict()
        num_particles: {grid_search: [8, 16, 32]}                    # grid_search works at any depth
        evaluation_interval: 10                 # RLlib's .evaluation(...): every 10 iterations, 10 episodes of
        evaluation_duration: 10                 #   the deterministic policy -> evaluation/env_runners/...
        evaluation_config: {explore: false}

Metrics under ``evaluation/`` (stop criteria, the scheduler's metric) need ``evaluation_interval`` in every grid
point; the scheduler's default metric is the evaluation return when the experiment evaluates, else the
training return.

Several experiments in one file run in order. Numbers like ``3e-4`` are floats (YAML 1.1 would read a string).
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import inspect
import itertools
import os
import re
from collections.abc import Iterator
from typing import Any

import yaml

from smac_rllib.cli.checks import check_config, check_env, did_you_mean, grid_options, is_grid, quiet, type_name
from smac_rllib.cli.errors import UserError, one_line
from smac_rllib.cli.plot import EVAL_RETURN, TRAIN_RETURN

# --------------------------------------------------------------------------------------------- YAML reading

# YAML 1.2 floats: YAML 1.1 (PyYAML) reads `3e-4` or `1e6` as the *string* "3e-4".
_FLOAT_RE = re.compile(
    r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
        |[-+]?(?:[0-9][0-9_]*)[eE][-+]?[0-9]+
        |[-+]?\.[0-9_]+(?:[eE][-+]?[0-9]+)?
        |[-+]?\.(?:inf|Inf|INF)
        |\.(?:nan|NaN|NAN))$""",
    re.X,
)


class MarkedDict(dict):
    """A YAML mapping that remembers the (1-based) line of each of its keys, for error messages."""

    line: int | None = None
    key_lines: dict

    def line_of(self, key: Any) -> int | None:
        return getattr(self, "key_lines", {}).get(key, self.line)


class _Loader(yaml.SafeLoader):
    pass


def _construct_mapping(loader: _Loader, node: yaml.MappingNode) -> MarkedDict:
    first_line: dict = {}
    for key_node, _ in node.value:  # duplicates among the keys written here (PyYAML silently keeps the last)
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=True)
        if key in first_line:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (first on line {first_line[key]}); keep one", key_node.start_mark
            )
        first_line[key] = key_node.start_mark.line + 1
    loader.flatten_mapping(node)  # `<<: *anchor` merges first; keys written here override them
    mapping = MarkedDict()
    mapping.line, mapping.key_lines = node.start_mark.line + 1, {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        mapping[key] = loader.construct_object(value_node, deep=True)
        mapping.key_lines[key] = key_node.start_mark.line + 1
    return mapping


_Loader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT_RE, list("-+0123456789."))
_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def read_yaml(path: str) -> MarkedDict:
    """Parse ``path``; a missing file or a syntax error is a ``UserError`` with ``file:line:column``."""
    if not os.path.exists(path):
        hint = _tuned_examples_hint(path)
        raise UserError(f"no such file: {path}{hint}")
    if os.path.isdir(path):
        raise UserError(f"{path} is a directory; pass a YAML file, e.g. {os.path.join(path, 'smac_state.yaml')}")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        doc = yaml.load(text, Loader=_Loader)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else path
        problem = e.problem or "invalid YAML"
        hint = next((h or problem for pattern, h in _YAML_HINTS if pattern in problem), None)
        if hint is None:
            context = f" ({e.context})" if e.context and e.problem else ""
            hint = f"{problem}{context}; check the indentation, the ':' and the quoting there"
        raise UserError(f"YAML syntax error: {hint}", where) from None
    except yaml.YAMLError as e:
        raise UserError(f"YAML error: {one_line(e)}", path) from None
    if not isinstance(doc, dict) or not doc:
        raise UserError("expected a mapping {experiment_name: {run: ..., env: ..., config: {...}}}", path)
    return doc


def _tuned_examples_hint(path: str) -> str:
    here = os.path.join(os.getcwd(), "tuned_examples")
    if os.path.isdir(here):
        names = sorted(n for n in os.listdir(here) if n.endswith(".yaml"))
        close = difflib.get_close_matches(os.path.basename(path), names, n=1)
        if close:
            return f"; did you mean tuned_examples/{close[0]}?"
        if names:
            return f"; tuned examples: {', '.join('tuned_examples/' + n for n in names)}"
    return ""


# --------------------------------------------------------------------------------------------- experiments

# Keys of one experiment. Legacy names from RLlib's old tuned examples are translated (value: new name).
EXPERIMENT_KEYS = (
    "run", "env", "stop", "config", "num_samples", "checkpoint_config", "storage_path", "max_failures",
    "max_concurrent_trials", "wandb", "scheduler",
)  # fmt: skip
_LEGACY_EXPERIMENT_KEYS = {
    "local_dir": "storage_path",
    "checkpoint_freq": "checkpoint_config.checkpoint_frequency",
    "checkpoint_at_end": "checkpoint_config.checkpoint_at_end",
    "keep_checkpoints_num": "checkpoint_config.num_to_keep",
}
CHECKPOINT_KEYS = ("checkpoint_frequency", "checkpoint_at_end", "num_to_keep", "checkpoint_score_attribute", "checkpoint_score_order")
DEFAULT_CHECKPOINT_CONFIG = {"checkpoint_frequency": 10, "checkpoint_at_end": True, "num_to_keep": 2}
WANDB_KEYS = (
    "project", "group", "entity", "tags", "notes", "job_type", "mode", "log_config", "excludes",
    "upload_checkpoints", "upload_timeout", "api_key_file",
)  # fmt: skip
DEFAULT_WANDB_PROJECT = "smac_rllib"
SCHEDULER_TYPES = {"fifo": "FIFO", "asha": "ASHA", "async_hyperband": "ASHA", "asynchyperband": "ASHA"}
# Old result keys -> RLlib 2.60 new-stack result keys (stop criteria, scheduler metrics).
LEGACY_METRICS = {
    "timesteps_total": "num_env_steps_sampled_lifetime",
    "episode_reward_mean": "env_runners/episode_return_mean",
    "episode_return_mean": "env_runners/episode_return_mean",
    "env_runners/episode_reward_mean": "env_runners/episode_return_mean",
    "sampler_results/episode_reward_mean": "env_runners/episode_return_mean",
    "evaluation/episode_reward_mean": "evaluation/env_runners/episode_return_mean",
    "evaluation/episode_return_mean": "evaluation/env_runners/episode_return_mean",
    "evaluation/env_runners/episode_reward_mean": "evaluation/env_runners/episode_return_mean",
    "evaluation/sampler_results/episode_reward_mean": "evaluation/env_runners/episode_return_mean",
}
OUR_ALGORITHMS = ("SMAC", "SACBaseline")


@dataclasses.dataclass
class Overrides:
    """Command-line values that replace (stop, num_samples, storage_path, seed, wandb) or merge into (config) the file's."""

    stop: dict | None = None
    config: dict | None = None
    num_samples: int | None = None
    storage_path: str | None = None
    seed: int | None = None
    wandb: bool | None = None  # None: as the file says


@dataclasses.dataclass
class ExperimentSpec:
    name: str
    run: str  # the Tune trainable name
    algo_class: type
    param_space: dict  # plain dict for Tune: config keys (+ "env"), {"grid_search": [...]} left in place
    stop: dict[str, float]
    num_samples: int
    checkpoint_config: dict
    storage_path: str | None
    max_failures: int
    max_concurrent_trials: int | None
    wandb: dict | None  # WandbLoggerCallback kwargs, None = off
    scheduler: dict | None  # {"type": "ASHA", ...} or None (FIFO)
    source: str  # the YAML file
    key_lines: dict = dataclasses.field(default_factory=dict)  # config key -> "file:line" (error messages)
    configs: list = dataclasses.field(default_factory=list)  # validated AlgorithmConfig of every grid point

    @property
    def num_trials(self) -> int:
        return self.num_samples * max(1, len(self.configs) if self.configs else num_grid_points(self.param_space))


def load_experiments(path: str, overrides: Overrides | None = None, *, build: bool = True) -> list[ExperimentSpec]:
    """Read and check every experiment of ``path``; ``build`` also validates each grid point's AlgorithmConfig."""
    doc = read_yaml(path)
    specs = [parse_experiment(name, body, doc, path, overrides or Overrides()) for name, body in doc.items()]
    if build:
        for spec in specs:
            spec.configs = build_configs(spec)
    return specs


def parse_experiment(name: Any, body: Any, doc: MarkedDict, path: str, ov: Overrides) -> ExperimentSpec:
    where = f"{path}:{doc.line_of(name)}"
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_.\-]+", name):
        raise UserError(f"experiment name {name!r} must be letters, digits, '_', '-' or '.' (it names a directory)", where)
    if not isinstance(body, dict):
        raise UserError(f"experiment {name!r} must be a mapping with run, env, stop and config", where)
    body = _translate_legacy_keys(body, path)
    for key in body:
        if key not in EXPERIMENT_KEYS:
            raise UserError(f"unknown experiment key {key!r}{did_you_mean(key, EXPERIMENT_KEYS)}", _where(path, body, key))

    run = body.get("run")
    if not run:
        raise UserError(f"experiment {name!r} has no `run:`; add e.g. `run: SMAC` (or SACBaseline, SAC)", where)
    algo_class = algorithm_class(run, _where(path, body, "run"))

    config = body.get("config") or {}
    if not isinstance(config, dict):
        raise UserError(f"`config:` must be a mapping of config keys, got {type_name(config)}", _where(path, body, "config"))
    marked_config, config_lines = config, {k: _where(path, config, k) for k in config}
    config = _plain(config)
    if ov.config:
        config = _deep_merge(config, ov.config)
    if "env" in body:
        if "env" in config and config["env"] != body["env"]:
            raise UserError(f"env given twice ({body['env']!r} and config.env {config['env']!r}); keep one", _where(path, body, "env"))
        config["env"] = _plain(body["env"])
        config_lines["env"] = _where(path, body, "env")
    if ov.seed is not None:
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
        raise UserError(f"experiment {name!r} has no env; add e.g. `env: dmc/cheetah-run` (list: python -m smac_rllib.envs --list)", where)
    check_env(config, algo_class, line_of)
    check_config(config, algo_class, line_of)

    stop = parse_stop(ov.stop if ov.stop is not None else body.get("stop"), _where(path, body, "stop") if ov.stop is None else "--stop")
    if not stop:
        raise UserError(f"experiment {name!r} has no stop criterion; add e.g. `stop: {{training_iteration: 100}}` or pass --stop", where)

    num_samples = ov.num_samples if ov.num_samples is not None else body.get("num_samples", 1)
    if not (isinstance(num_samples, int) and not isinstance(num_samples, bool) and num_samples >= 1):
        raise UserError(f"num_samples={num_samples!r} must be an integer >= 1", _where(path, body, "num_samples"))

    ckpt = _plain(body.get("checkpoint_config") or {})
    if not isinstance(ckpt, dict):
        raise UserError("checkpoint_config must be a mapping, e.g. {checkpoint_frequency: 10}", _where(path, body, "checkpoint_config"))
    for key in ckpt:
        if key not in CHECKPOINT_KEYS:
            raise UserError(f"unknown checkpoint_config key {key!r}{did_you_mean(key, CHECKPOINT_KEYS)}", _where(path, body, "checkpoint_config"))
    ckpt = {**DEFAULT_CHECKPOINT_CONFIG, **ckpt}
    for key in ("checkpoint_frequency", "num_to_keep"):
        value = ckpt[key]
        if value is not None and not (isinstance(value, int) and not isinstance(value, bool) and value >= (0 if key == "checkpoint_frequency" else 1)):
            raise UserError(f"checkpoint_config.{key}={value!r} must be a positive integer", _where(path, body, "checkpoint_config"))

    storage_path = ov.storage_path or body.get("storage_path")
    if storage_path is not None:
        if not isinstance(storage_path, str):
            raise UserError(f"storage_path must be a directory path, got {storage_path!r}", _where(path, body, "storage_path"))
        storage_path = storage_path if "://" in storage_path else os.path.abspath(os.path.expanduser(storage_path))

    max_failures = body.get("max_failures", 2)
    if not (isinstance(max_failures, int) and not isinstance(max_failures, bool) and max_failures >= -1):
        raise UserError(f"max_failures={max_failures!r} must be an integer >= -1 (-1: retry forever)", _where(path, body, "max_failures"))
    evaluates = _evaluates(config)
    for key in stop:
        if key.startswith("evaluation/") and not evaluates:
            raise UserError(
                f"stop criterion {key!r} is reported only when the experiment evaluates; add `evaluation_interval: 10` "
                "(and evaluation_duration, evaluation_config: {explore: false}) to every grid point's config",
                _where(path, body, "stop") if ov.stop is None else "--stop",
            )
    scheduler = parse_scheduler(body.get("scheduler"), _where(path, body, "scheduler"), evaluates=evaluates)

    max_concurrent = body.get("max_concurrent_trials")
    if max_concurrent is not None and not (isinstance(max_concurrent, int) and max_concurrent >= 1):
        raise UserError(f"max_concurrent_trials={max_concurrent!r} must be an integer >= 1", _where(path, body, "max_concurrent_trials"))

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
        max_concurrent_trials=max_concurrent,
        wandb=parse_wandb(body.get("wandb"), ov.wandb, _where(path, body, "wandb")),
        scheduler=scheduler,
        source=path,
        key_lines=config_lines,
    )


def _translate_legacy_keys(body: MarkedDict, path: str) -> MarkedDict:
    if not any(k in _LEGACY_EXPERIMENT_KEYS for k in body):
        return body
    out = MarkedDict(body)
    out.line, out.key_lines = body.line, dict(getattr(body, "key_lines", {}))
    for old, new in _LEGACY_EXPERIMENT_KEYS.items():
        if old not in out:
            continue
        value = out.pop(old)
        if "." in new:
            top, sub = new.split(".")
            out.setdefault(top, {})
            out[top] = {**out[top], sub: value}
            out.key_lines.setdefault(top, out.key_lines.get(old))
        else:
            out[new] = value
            out.key_lines[new] = out.key_lines.get(old)
    return out


# --------------------------------------------------------------------------------------------- algorithms

def algorithm_class(run: Any, where: str) -> type:
    """The Algorithm class behind a ``run:`` name: ours (SMAC, SACBaseline) or RLlib's registry (SAC, PPO, ...)."""
    from ray.rllib.algorithms.registry import ALGORITHMS

    if run in OUR_ALGORITHMS:
        from smac_rllib import algorithms

        return getattr(algorithms, run)
    if isinstance(run, str) and run in ALGORITHMS:
        with quiet():
            return ALGORITHMS[run]()[0]
    names = list(OUR_ALGORITHMS) + sorted(ALGORITHMS)
    text = str(run)
    lower = {n.lower(): n for n in names}
    close = [lower[text.lower()]] if text.lower() in lower else difflib.get_close_matches(text, names, n=1, cutoff=0.5)
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise UserError(f"unknown run {run!r}; {hint}(available: {', '.join(names)})", where)


# --------------------------------------------------------------------------------------------- experiment parts

def parse_stop(stop: Any, where: str) -> dict[str, float]:
    if stop is None:
        return {}
    if not isinstance(stop, dict):
        raise UserError(f"stop must be a mapping like {{training_iteration: 100}}, got {type_name(stop)}", where)
    out = {}
    for key, value in stop.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise UserError(f"stop criterion {key!r}={value!r} must be a number (the run stops when the result reaches it)", where)
        out[LEGACY_METRICS.get(key, key)] = value
    return out


def parse_wandb(block: Any, flag: bool | None, where: str) -> dict | None:
    if flag is False or (flag is None and block in (None, False)):
        return None
    if block in (None, True, False):
        block = {}
    if not isinstance(block, dict):
        raise UserError(f"wandb must be a mapping like {{project: smac_rllib}}, got {type_name(block)}", where)
    for key in block:
        if key not in WANDB_KEYS:
            raise UserError(f"unknown wandb key {key!r}{did_you_mean(key, WANDB_KEYS)} (valid: {', '.join(WANDB_KEYS)})", where)
    return {"project": DEFAULT_WANDB_PROJECT, **_plain(block)}


def _evaluates(config: dict) -> bool:
    """Whether every grid point of ``config`` evaluates (``evaluation_interval`` >= 1): ``evaluation/...`` results."""
    options = grid_options(config.get("evaluation_interval"))
    return all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in options)


def parse_scheduler(block: Any, where: str, *, evaluates: bool = False) -> dict | None:
    """``{"type": "ASHA", ...}`` or None (FIFO); the default metric is the evaluation return when ``evaluates``."""
    if block is None:
        return None
    if not isinstance(block, dict) or "type" not in block:
        raise UserError("scheduler must be a mapping with a type, e.g. {type: ASHA, metric: evaluation/env_runners/episode_return_mean, mode: max}", where)
    kind = SCHEDULER_TYPES.get(str(block["type"]).lower().replace("-", "_"))
    if kind is None:
        raise UserError(f"unknown scheduler type {block['type']!r}; use ASHA or FIFO", where)
    if kind == "FIFO":
        return None
    from ray.tune.schedulers import ASHAScheduler

    params = [p for p in inspect.signature(ASHAScheduler.__init__).parameters if p != "self"]
    options = {k: v for k, v in _plain(block).items() if k != "type"}
    for key in options:
        if key not in params:
            raise UserError(f"unknown ASHA scheduler key {key!r}{did_you_mean(key, params)} (valid: {', '.join(params)})", where)
    for key in ("metric", "time_attr"):
        if key in options:
            options[key] = LEGACY_METRICS.get(options[key], options[key])
    if str(options.get("metric", "")).startswith("evaluation/") and not evaluates:
        raise UserError(
            f"scheduler metric {options['metric']!r} is reported only when the experiment evaluates; add "
            "`evaluation_interval: 10` to the config, or use metric: env_runners/episode_return_mean (the training return)",
            where,
        )
    options.setdefault("metric", EVAL_RETURN if evaluates else TRAIN_RETURN)
    options.setdefault("mode", "max")
    options.setdefault("time_attr", "training_iteration")
    return {"type": "ASHA", **options}


# --------------------------------------------------------------------------------------------- grid points

def _grid_paths(value: Any, path: tuple = ()) -> Iterator[tuple[tuple, list]]:
    if is_grid(value):
        options = value["grid_search"]
        if not isinstance(options, list) or not options:
            raise UserError(f"grid_search at {'.'.join(map(str, path)) or 'config'} needs a non-empty list, e.g. {{grid_search: [8, 16, 32]}}")
        yield path, options
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _grid_paths(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _grid_paths(v, path + (i,))


def num_grid_points(param_space: dict) -> int:
    n = 1
    for _, options in _grid_paths(param_space):
        n *= len(options)
    return n


def grid_variants(param_space: dict, limit: int = 256) -> list[dict]:
    """The concrete configs of a param space with ``grid_search`` entries (first ``limit`` of them)."""
    paths = list(_grid_paths(param_space))
    variants = []
    for combo in itertools.islice(itertools.product(*[options for _, options in paths]), limit):
        variant = copy.deepcopy(param_space)
        for (path, _), option in zip(paths, combo):
            node = variant
            for step in path[:-1]:
                node = node[step]
            node[path[-1]] = copy.deepcopy(option)
        variants.append(variant)
    return variants


def build_configs(spec: ExperimentSpec) -> list:
    """An AlgorithmConfig per grid point, each validated (``smac_errors()`` first, then RLlib's ``validate()``)."""
    configs = []
    for variant in grid_variants(spec.param_space):
        with quiet():
            config = spec.algo_class.get_default_config()
            try:
                config.update_from_dict(copy.deepcopy(variant))
            except Exception as e:  # noqa: BLE001 - RLlib raises anything for a bad value
                raise UserError(f"experiment {spec.name!r}: {one_line(e)}", spec.source) from None
            errors = config.smac_errors() if hasattr(config, "smac_errors") else []
            if errors:
                raise UserError(errors[0], _line_of_message(spec, errors[0]))
            try:
                config.validate()
            except Exception as e:  # noqa: BLE001
                raise UserError(one_line(e), _line_of_message(spec, str(e))) from None
        configs.append(config)
    return configs


# --------------------------------------------------------------------------------------------- helpers

def _line_of_message(spec: ExperimentSpec, message: str) -> str:
    """``file:line`` of the key a validate() message starts with (``num_particles=6 must be ...``)."""
    match = re.match(r"\W*(\w+)\s*=", message)
    if match and match.group(1) in spec.key_lines:
        return spec.key_lines[match.group(1)]
    for key, where in spec.key_lines.items():  # the first key the message mentions
        if re.search(rf"\b{re.escape(str(key))}\b", message):
            return where
    return f"{spec.source} (experiment {spec.name!r})"


_YAML_HINTS = (
    ("expected <block end>", "this line's indentation does not match the lines above it; align it with its siblings"),
    ("mapping values are not allowed", "unexpected ':'; put a space after the key's ':' or quote a value that contains ': '"),
    ("found character '\\t'", "tabs are not allowed in YAML; indent with spaces"),
    ("could not find expected ':'", "a key without ':'; write `key: value`"),
    ("found undefined alias", "an undefined '*alias'; quote values that start with '*'"),
    ("duplicate key", None),  # the problem says it all
)


def _where(path: str, mapping: Any, key: Any) -> str:
    line = mapping.line_of(key) if isinstance(mapping, MarkedDict) else None
    return f"{path}:{line}" if line else path


def _plain(value: Any) -> Any:
    """MarkedDict -> dict, recursively (what Tune and RLlib get)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _deep_merge(base: dict, override: dict) -> dict:
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict) and not is_grid(value) and not is_grid(out[key]):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out
