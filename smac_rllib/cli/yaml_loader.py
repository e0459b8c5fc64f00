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
Everything is checked before Ray starts (``checks.py``): value ranges, NaN/inf, env_config, every grid point
(up to ``MAX_GRID_POINTS`` trials), stop/scheduler/checkpoint result keys, the storage path. A file must be
UTF-8, at most ``MAX_YAML_BYTES``, nested at most ``MAX_YAML_DEPTH`` levels and expand to at most
``MAX_YAML_VALUES`` values through its aliases; mapping keys are plain names or numbers.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import inspect
import os
import re
from typing import Any

import yaml

from smac_rllib.cli.checks import (
    MAX_GRID_POINTS,
    check_config,
    check_env,
    check_finite,
    check_grids,
    config_errors,
    did_you_mean,
    grid_options,
    grid_variants,
    is_grid,
    num_grid_points,
    quiet,
    result_key_error,
    type_name,
)
from smac_rllib import TRAINABLES
from smac_rllib.algorithms import config_questions
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


MAX_YAML_BYTES = 1 << 20  # a tuned example is a few kB; more is a wrong file
MAX_YAML_DEPTH = 64  # nesting levels (PyYAML composes recursively: 1000 levels would be a RecursionError)
MAX_YAML_VALUES = 100_000  # values after expanding '*' aliases ("billion laughs": 9 lines -> 10**9 values)


class _LimitError(yaml.MarkedYAMLError):
    """A file beyond MAX_YAML_DEPTH / MAX_YAML_VALUES, or with a key that is not a plain value."""


class _Loader(yaml.SafeLoader):
    _depth = 0

    def compose_node(self, parent, index):
        self._depth += 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                raise _LimitError(None, None, _too_deep(), self.peek_event().start_mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def get_single_node(self):
        node = super().get_single_node()
        if node is not None:
            _expanded_size(node, {}, 1)
        return node


def _expanded_size(node: yaml.Node, seen: dict, depth: int) -> tuple[int, int]:
    """(values, levels) under ``node`` with every alias expanded, memoized (linear in the file); too many values,
    too many levels (``depth`` counts those above) or a recursive alias raise ``_LimitError``."""
    key = id(node)
    if key in seen:
        if seen[key] is None:
            raise _LimitError(None, None, "an alias refers to the mapping or list that contains it; remove that '*' alias", node.start_mark)
        size, height = seen[key]
    else:
        if depth > MAX_YAML_DEPTH:
            raise _LimitError(None, None, _too_deep(), node.start_mark)
        seen[key] = None  # in progress
        children = node.value if isinstance(node, yaml.SequenceNode) else []
        if isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        sizes = [_expanded_size(child, seen, depth + 1) for child in children]
        size, height = 1 + sum(s for s, _ in sizes), 1 + max((h for _, h in sizes), default=0)
        seen[key] = size, height
    if size > MAX_YAML_VALUES:
        raise _LimitError(None, None, f"the file expands to more than {MAX_YAML_VALUES:,} values through its '*' aliases "
                          "(an alias bomb?); write the values out or use fewer aliases", node.start_mark)
    if depth + height - 1 > MAX_YAML_DEPTH:
        raise _LimitError(None, None, _too_deep(" through '*' aliases"), node.start_mark)
    return size, height


def _too_deep(via: str = "") -> str:
    return f"values are nested deeper than {MAX_YAML_DEPTH} levels{via}; flatten the file"


def _construct_mapping(loader: _Loader, node: yaml.MappingNode) -> MarkedDict:
    first_line: dict = {}
    for key_node, _ in node.value:  # duplicates among the keys written here (PyYAML silently keeps the last)
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        if not isinstance(key_node, yaml.ScalarNode):
            kind = "list" if isinstance(key_node, yaml.SequenceNode) else "mapping"
            raise _LimitError(None, None, f"a {kind} is used as a mapping key; keys are plain names or numbers "
                              "(check for a stray '?', '[' or '{' before the ':')", key_node.start_mark)
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
    """Parse ``path``; a missing file, a syntax error, non-UTF-8 bytes or a file beyond the limits (size, nesting,
    aliases) is a ``UserError`` with ``file:line:column``."""
    text = _read_text(path)
    try:
        doc = yaml.load(text, Loader=_Loader)
    except _LimitError as e:
        mark = e.problem_mark
        raise UserError(e.problem, f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else path) from None
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else path
        problem = e.problem or "invalid YAML"
        hint = next((h or problem for pattern, h in _YAML_HINTS if pattern in problem or pattern in str(e.context)), None)
        if hint is None:
            context = f" ({e.context})" if e.context and e.problem else ""
            hint = f"{problem}{context}; check the indentation, the ':' and the quoting there"
        raise UserError(f"YAML syntax error: {hint}", where) from None
    except yaml.reader.ReaderError as e:  # a control character (NUL, ...): no mark, a position in the text
        line = text[: e.position].count("\n") + 1
        raise UserError(f"the file contains the control character U+{e.character:04X}; remove it (save the file as plain text)",
                        f"{path}:{line}") from None
    except yaml.YAMLError as e:
        raise UserError(f"YAML error: {one_line(e)}", path) from None
    except RecursionError:  # a limit above should come first; never a traceback
        raise UserError(f"values are nested too deeply; flatten the file (at most {MAX_YAML_DEPTH} levels)", path) from None
    if not isinstance(doc, dict) or not doc:
        raise UserError("expected a mapping {experiment_name: {run: ..., env: ..., config: {...}}}", path)
    return doc


def _read_text(path: str) -> str:
    if not os.path.exists(path):
        hint = _tuned_examples_hint(path)
        raise UserError(f"no such file: {path}{hint}")
    if os.path.isdir(path):
        raise UserError(f"{path} is a directory; pass a YAML file, e.g. {os.path.join(path, 'smac_state.yaml')}")
    try:
        size = os.path.getsize(path)
        if size > MAX_YAML_BYTES:
            raise UserError(f"{path} is larger than {MAX_YAML_BYTES >> 20} MiB ({size:,} bytes), not a tuned example; pass the YAML file")
        with open(path, "rb") as f:
            data = f.read(MAX_YAML_BYTES + 1)
    except OSError as e:
        raise UserError(f"cannot read {path} ({e.strerror}); check the path and its permissions") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise UserError(f"the file is not UTF-8 text (byte 0x{data[e.start]:02x}); save it as UTF-8", f"{path}:{line}") from None


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
OUR_ALGORITHMS = TRAINABLES  # smac_rllib.TRAINABLES: one list of our run names


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
    if "env" in body and "env" in config and config["env"] != body["env"]:
        raise UserError(f"env given twice ({body['env']!r} and config.env {config['env']!r}); keep one", _where(path, body, "env"))
    if ov.config:
        config = _deep_merge(config, ov.config)
    if "env" in body and not (ov.config and "env" in ov.config):  # --config '{"env": ...}' replaces the file's env
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
    _check_values(config, line_of)
    config_questions.fill_defaults(config, algo_class)  # e.g. float frames for RLlib's DreamerV3
    check_env(config, algo_class, line_of)
    check_config(config, algo_class, line_of)

    custom = any(str(k).startswith("callbacks") for k in config)  # callbacks may report metrics of their own
    stop = parse_stop(ov.stop if ov.stop is not None else body.get("stop"), _where(path, body, "stop") if ov.stop is None else "--stop",
                      custom_metrics=custom)
    if not stop:
        raise UserError(f"experiment {name!r} has no stop criterion; add e.g. `stop: {{training_iteration: 100}}` or pass --stop", where)

    num_samples = ov.num_samples if ov.num_samples is not None else body.get("num_samples", 1)
    if not (isinstance(num_samples, int) and not isinstance(num_samples, bool) and num_samples >= 1):
        raise UserError(f"num_samples={num_samples!r} must be an integer >= 1", _where(path, body, "num_samples"))

    ckpt = parse_checkpoint_config(body.get("checkpoint_config"), _where(path, body, "checkpoint_config"), custom_metrics=custom)

    storage_path = ov.storage_path or body.get("storage_path")
    if storage_path is not None:
        storage_where = "--storage-path" if ov.storage_path else _where(path, body, "storage_path")
        if not isinstance(storage_path, str) or not storage_path:
            raise UserError(f"storage_path must be a directory path, got {storage_path!r}", storage_where)
        storage_path = storage_path if "://" in storage_path else os.path.abspath(os.path.expanduser(storage_path))
        check_storage_path(storage_path, storage_where)

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
    scheduler = parse_scheduler(body.get("scheduler"), _where(path, body, "scheduler"), evaluates=evaluates, custom_metrics=custom)

    max_concurrent = body.get("max_concurrent_trials")
    if max_concurrent is not None and not (isinstance(max_concurrent, int) and not isinstance(max_concurrent, bool) and max_concurrent >= 1):
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


def check_storage_path(storage_path: str, where: str) -> None:
    """A local storage path must be (or be creatable as) a writable directory, before Ray or Tune start."""
    if "://" in storage_path:
        return  # s3://, gs://: checked by pyarrow when the run starts
    existing = storage_path
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise UserError(f"storage path {storage_path} cannot be created: {existing} is a file; pass a directory", where)
    try:  # os.access is True for root even on a read-only filesystem: make (and remove) a directory there
        import tempfile

        os.rmdir(tempfile.mkdtemp(prefix=".rllib-write-test-", dir=existing))
    except OSError as e:
        raise UserError(f"cannot write to {existing} ({e.strerror}); pass a storage path you can write to", where) from None


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

def parse_stop(stop: Any, where: str, *, custom_metrics: bool = False) -> dict[str, float]:
    if stop is None:
        return {}
    if not isinstance(stop, dict):
        raise UserError(f"stop must be a mapping like {{training_iteration: 100}}, got {type_name(stop)}", where)
    out = {}
    for key, value in stop.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise UserError(f"stop criterion {key!r}={value!r} must be a number (the run stops when the result reaches it)", where)
        check_finite(value, str(key), where, what="stop criterion ")
        key = LEGACY_METRICS.get(key, key)
        error = result_key_error(key, "stop criterion", custom_metrics)
        if error:
            raise UserError(error, where)
        out[key] = value
    return out


def parse_checkpoint_config(block: Any, where: str, *, custom_metrics: bool = False) -> dict:
    ckpt = _plain(block or {})
    if not isinstance(ckpt, dict):
        raise UserError("checkpoint_config must be a mapping, e.g. {checkpoint_frequency: 10}", where)
    for key in ckpt:
        if key not in CHECKPOINT_KEYS:
            raise UserError(f"unknown checkpoint_config key {key!r}{did_you_mean(key, CHECKPOINT_KEYS)}", where)
    ckpt = {**DEFAULT_CHECKPOINT_CONFIG, **ckpt}
    for key in ("checkpoint_frequency", "num_to_keep"):
        value = ckpt[key]
        if value is not None and not (isinstance(value, int) and not isinstance(value, bool) and value >= (0 if key == "checkpoint_frequency" else 1)):
            raise UserError(f"checkpoint_config.{key}={value!r} must be a positive integer", where)
    if not isinstance(ckpt["checkpoint_at_end"], bool):
        raise UserError(f"checkpoint_config.checkpoint_at_end={ckpt['checkpoint_at_end']!r} must be true or false (without quotes)", where)
    order = ckpt.get("checkpoint_score_order")
    if order is not None and order not in ("max", "min"):
        raise UserError(f"checkpoint_config.checkpoint_score_order={order!r}; use 'max' or 'min'", where)
    attribute = ckpt.get("checkpoint_score_attribute")
    if attribute is not None:
        attribute = ckpt["checkpoint_score_attribute"] = LEGACY_METRICS.get(attribute, attribute)
        error = result_key_error(attribute, "checkpoint_config.checkpoint_score_attribute", custom_metrics)
        if error:
            raise UserError(error, where)
    return ckpt


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
    for key in ("log_config", "upload_checkpoints"):
        if key in block and not isinstance(block[key], bool):
            raise UserError(f"wandb.{key}={block[key]!r} must be true or false (without quotes)", where)
    timeout = block.get("upload_timeout")
    if timeout is not None and not (isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and 0 <= timeout < float("inf")):
        raise UserError(f"wandb.upload_timeout={timeout!r} must be a number of seconds >= 0 (default 30)", where)
    if block.get("mode") not in (None, "online", "offline", "disabled"):
        raise UserError(f"wandb.mode={block['mode']!r}; use online, offline or disabled", where)
    return {"project": DEFAULT_WANDB_PROJECT, **_plain(block)}


def _evaluates(config: dict) -> bool:
    """Whether every grid point of ``config`` evaluates (``evaluation_interval`` >= 1): ``evaluation/...`` results."""
    options = grid_options(config.get("evaluation_interval"))
    return all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in options)


def parse_scheduler(block: Any, where: str, *, evaluates: bool = False, custom_metrics: bool = False) -> dict | None:
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
            error = result_key_error(options[key], f"scheduler {key}", custom_metrics)
            if error:
                raise UserError(error, where)
    _check_asha_values(options, where)
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


def _check_asha_values(options: dict, where: str) -> None:
    """ASHA's numbers and mode (Tune checks some of them only when the run starts, after Ray)."""
    mode = options.get("mode")
    if mode is not None and mode not in ("max", "min"):
        raise UserError(f"scheduler mode={mode!r}; use 'max' or 'min' (max for returns)", where)
    for key, hint in (("max_t", " (in units of time_attr, e.g. iterations)"), ("grace_period", " (in units of time_attr)"), ("brackets", "")):
        value = options.get(key, 1)
        if not (isinstance(value, int) and not isinstance(value, bool) and value >= 1):
            raise UserError(f"scheduler {key}={value!r} must be an integer >= 1{hint}", where)
    factor = options.get("reduction_factor")
    if factor is not None and not (isinstance(factor, (int, float)) and not isinstance(factor, bool) and 1 < factor < float("inf")):
        raise UserError(f"scheduler reduction_factor={factor!r} must be > 1 (e.g. 3: keep the top third at each rung)", where)
    grace, max_t = options.get("grace_period", 1), options.get("max_t", 100)
    if isinstance(grace, int) and isinstance(max_t, int) and grace > max_t:
        raise UserError(f"scheduler grace_period={grace} must be <= max_t={max_t}; lower grace_period or raise max_t", where)
    last = options.get("stop_last_trials")
    if last is not None and not isinstance(last, bool):
        raise UserError(f"scheduler stop_last_trials={last!r} must be true or false (without quotes)", where)


# --------------------------------------------------------------------------------------------- grid points

def build_configs(spec: ExperimentSpec) -> list:
    """An AlgorithmConfig per grid point, each validated (``smac_errors()`` first, then RLlib's ``validate()``)."""
    points = num_grid_points(spec.param_space)
    if points * spec.num_samples > MAX_GRID_POINTS:
        raise UserError(
            f"experiment {spec.name!r} has {points:,} grid points x {spec.num_samples} sample(s) = {points * spec.num_samples:,} "
            f"trials, more than {MAX_GRID_POINTS:,}; shorten the grid_search lists or split the sweep into experiments",
            spec.source,
        )
    configs = []
    for variant in grid_variants(spec.param_space, limit=MAX_GRID_POINTS):  # every point, not a sample of them
        with quiet():
            config = spec.algo_class.get_default_config()
            try:
                config.update_from_dict(copy.deepcopy(variant))
            except Exception as e:  # noqa: BLE001 - RLlib raises anything for a bad value
                raise UserError(f"experiment {spec.name!r}: {one_line(e)}", spec.source) from None
            errors = config_errors(config)
            if errors:
                raise UserError(errors[0], _line_of_message(spec, errors[0]))
            try:
                config.validate()
            except Exception as e:  # noqa: BLE001
                message = _RLLIB_SUPPRESS_HINT.sub("", one_line(e))  # not a fix to suggest
                raise UserError(message, _line_of_message(spec, str(e))) from None
        configs.append(config)
    return configs


_RLLIB_SUPPRESS_HINT = re.compile(r"\s*To suppress all validation errors.*$")


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
    ("could not determine a constructor for the tag", "tags like !!python/... are not allowed in a tuned example; write "
     "plain values (numbers, strings, lists, mappings)"),
    ("expected a single document", "the file holds more than one YAML document (a '---' line); keep one YAML document, "
     "with every experiment in it"),
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
