"""A dry run of every trial before Ray: the search space resolved into its concrete trials, and each
distinct one checked as it will run, so that a mistake is one line naming the trial instead of a traceback after Ray.

Per distinct trial (identical grid points once): the keys of its nested mappings read or refused
(``replay_buffer_config``, ``model_config``; ``env_config`` and ``evaluation_config`` by ``env_checks``/``checks``
again where a grid's values are whole mappings), their values type-checked, the evaluation config RLlib derives,
every env the trial makes (training, and evaluation where it differs) built once and closed (``trial_envs.py``,
cached per env and env_config: a gymnasium env whose optional extra is missing says which), and the algorithm's
RLModule built for that env's spaces on PyTorch's ``meta`` device (no weights): pixels given to a state-only
algorithm fail here.

Training never renders videos (``rllib evaluate --video`` does): the renderer is built with the env where env_config
asks for it (``from_pixels``, ``render_mode``), since the env checks the GL backend when it is made.
"""

from __future__ import annotations

import contextlib

import dataclasses
import functools
import inspect
import re
from typing import Any

from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
from ray.rllib.utils import replay_buffers

from smac_rllib.algorithms import config_questions
from smac_rllib.core.values import is_real
from smac_rllib.cli.checks import check_config, check_type, type_of_default
from smac_rllib.cli.env_checks import check_env, check_modalities
from smac_rllib.cli.errors import UserError, did_you_mean, warn
from smac_rllib.cli.experiment_spec import ExperimentSpec
from smac_rllib.cli.grids import is_grid
from smac_rllib.cli.horizon import env_steps_at_stop
from smac_rllib.cli.ray_output import quiet
from smac_rllib.cli.results import action_repeat
from smac_rllib.cli.same_trials import check_same_trials
from smac_rllib.cli.trial_module import _algo, _evaluation_overrides_env, check_envs_and_module
from smac_rllib.cli.trial_envs import (
    TrialError,
    check_return_stop_after_warm_up,
    env_values,
)


# --------------------------------------------------------------------------------------------- trials


def has_mapping_grid(value: Any) -> bool:
    """A ``grid_search`` whose values are whole mappings (checked per trial, not per key)."""
    if is_grid(value):
        return any(isinstance(o, dict) for o in value["grid_search"]) or any(
            has_mapping_grid(o) for o in value["grid_search"]
        )
    if isinstance(value, dict):
        return any(has_mapping_grid(v) for v in value.values())
    return False


def check_grid_point(spec: ExperimentSpec, label: str, variant: dict) -> None:
    """The key-by-key checks (names, types, modalities) on one grid point, where the loader's checks saw a grid in
    place of a mapping; run before the point's config is built, so that a wrong type is named before what the
    config would make of it (``from_pixels: "false"`` is a true string: the run would be read as a pixel run)."""
    if not has_mapping_grid(spec.param_space):
        return
    concrete = dict(variant)  # check_type converts 1e6 -> 1000000 in place
    with _located(spec, label):
        check_env(concrete, spec.algo_class, _line_of(spec))
        check_config(concrete, spec.algo_class, _line_of(spec))
        check_modalities(concrete, _line_of(spec))


def check_trials(spec: ExperimentSpec, trials: list[tuple[str, dict, Any]]) -> None:
    """Every distinct trial of ``spec`` (label, its grid point's mapping, its validated AlgorithmConfig), as it runs."""
    check_same_trials(spec, trials, lambda config: _values_as_run(spec, config))  # no two trials alike
    for label, variant, config in trials:
        with _located(spec, label):
            check_nested_keys(variant, config)
            _check_evaluation_env(spec, config)
            evaluation = check_envs_and_module(config)
            check_return_stop_after_warm_up(spec.stop, config)
            if evaluation is not None:  # a trial that builds: what its evaluation measures
                _warn_other_evaluation(spec.key_lines.get("evaluation_config", spec.source), config, evaluation)


def _values_as_run(spec: ExperimentSpec, config) -> dict[str, tuple]:
    """What the env's spaces, the run's length and the algorithm itself make of written values (same_trials.py)."""
    own = getattr(config, "values_as_run", lambda: {})()
    return env_values(config) | _length_values(spec, config) | own


def _length_values(spec: ExperimentSpec, config) -> dict[str, tuple]:
    """A replay at least as large as every env step the run stores holds them all: such capacities run alike."""
    buffer = getattr(config, "replay_buffer_config", None)
    capacity = buffer.get("capacity") if isinstance(buffer, dict) else None
    steps = env_steps_at_stop(spec.stop, config) if hasattr(config, "async_learning") else None
    if not (is_real(capacity) and steps and capacity >= steps):
        return {}
    return {"replay_buffer_config.capacity": ("all", f"at least the run's {steps:,} env steps (it keeps every one)")}


@contextlib.contextmanager
def _located(spec: ExperimentSpec, label: str):
    """A mistake of the trial ``label`` as one line: its file location (the key's line), the label, the message."""
    try:
        yield
    except TrialError as e:
        where = spec.key_lines.get(e.key) or line_of_message(spec, str(e))
        raise UserError(in_trial(label, f"{where}: {e}")) from None
    except UserError as e:
        raise UserError(in_trial(label, str(e))) from None


def in_trial(label: str, message: str) -> str:
    """``file:12: trial num_particles=8: <message>`` (the label after the location, if there is one)."""
    return _after_location(message, f"trial {label}: ") if label else message


def _after_location(message: str, text: str) -> str:
    match = re.match(r"^(\S+:\d+|\S+\.ya?ml(?: \([^)]*\))?): ", message)
    where, rest = (match.group(1) + ": ", message[match.end() :]) if match else ("", message)
    return f"{where}{text}{rest}"


def _check_evaluation_env(spec: ExperimentSpec, config) -> None:
    """The evaluation's env and env_config (the training one plus evaluation_config's overrides), key by key."""
    if not _evaluation_overrides_env(config):
        return
    with quiet():
        evaluation = config.get_evaluation_config_object()
    mapping = {"env": evaluation.env, "env_config": dict(evaluation.env_config or {})}
    where = spec.key_lines.get("evaluation_config", spec.source)
    suites = ["DeepMind Control" if str(e).startswith("dmc/") else "gymnasium" for e in (config.env, evaluation.env)]
    if suites[0] != suites[1]:  # dmc/pendulum-swingup vs Pendulum-v1: another task under a similar name
        raise UserError(
            f"{where}: evaluation_config evaluates on {evaluation.env}, a {suites[1]} env, a policy trained on "
            f"{config.env}, a {suites[0]} task: another task (its observations, actions and rewards mean other "
            "things); remove env from evaluation_config"
        )
    try:
        check_env(mapping, spec.algo_class, lambda key, sub=None: where)
    except UserError as e:
        raise UserError(_after_location(str(e), "evaluation_config: ")) from None


_WARNED: set[str] = set()


def _warn_other_evaluation(where: str, config, evaluation) -> None:
    """An evaluation of another task of the same spaces, of a DMC task at another action repeat, time limit or
    rendering, or of a gymnasium env with other keyword arguments than training: it runs, but its returns are not
    those of the task (or frames) the policy learned."""
    if evaluation.env != config.env:
        differ = [f"another task, {evaluation.env} (training: {config.env})"]
    elif isinstance(config.env, str) and config.env.startswith("dmc/"):
        train, evaluated = dict(config.env_config or {}), dict(evaluation.env_config or {})
        shown = {
            "action_repeat": lambda c: action_repeat({"env_config": c}),
            "time_limit": lambda c: c.get("time_limit", "the task's"),
            "fast_render": lambda c: c.get("fast_render", False),
            "camera_id": lambda c: c.get("camera_id", "the default"),
        }
        differ = [f"{k} {f(evaluated)} (training: {f(train)})" for k, f in shown.items() if f(train) != f(evaluated)]
    else:  # a gymnasium env's own keyword arguments (a reward weight, a limit): another task under the same name
        train, evaluated = dict(config.env_config or {}), dict(evaluation.env_config or {})
        differ = [
            f"{k}={evaluated.get(k, 'the default')!r} (training: {train.get(k, 'the default')!r})"
            for k in sorted(set(train) | set(evaluated), key=str)
            if train.get(k) != evaluated.get(k) and k not in ("render_mode", "seed")
        ]
    message = (
        f"{where}: evaluation_config runs {' and '.join(differ)}: the policy is evaluated on another task, control "
        "rate, episode length or rendering than it learned, so evaluation returns are not training's task; remove "
        "that from evaluation_config unless it is the experiment"
    )
    if differ and message not in _WARNED:
        _WARNED.add(message)
        warn(message)


def _line_of(spec: ExperimentSpec):
    return lambda key, sub=None: spec.key_lines.get(key, f"{spec.source} (experiment {spec.name!r})")


def line_of_message(spec: ExperimentSpec, message: str) -> str:
    """``file:line`` of the key a message starts with (``num_particles=6 must be ...``), else of the first key it
    names, else the experiment."""
    match = re.match(r"\W*(\w+)\s*[=.]", message)
    if match and match.group(1) in spec.key_lines:
        return spec.key_lines[match.group(1)]
    for key, where in spec.key_lines.items():
        if re.search(rf"\b{re.escape(str(key))}\b", message):
            return where
    return f"{spec.source} (experiment {spec.name!r})"


# --------------------------------------------------------------------------------------------- nested keys


def check_nested_keys(variant: dict, config) -> None:
    """``replay_buffer_config`` and ``model_config``: every key read by this algorithm or refused, values typed."""
    buffer = variant.get("replay_buffer_config")
    if isinstance(buffer, dict):
        _check_block(buffer, "replay_buffer_config", "replay_buffer_config", replay_keys(config), f"{_algo(config)}")
    model = variant.get("_model_config")
    if isinstance(model, dict) and not variant.get("_rl_module_spec") and not variant.get("rl_module_spec"):
        if model and config_questions.builds_own_model_config(config):
            _refuse_own_model_config(model, config)
        _check_block(model, "model_config", "_model_config", model_keys(config), f"{_algo(config)}'s module")


def _refuse_own_model_config(model: dict, config) -> None:
    """Our algorithms read no ``model_config`` from the file: say what sets the thing instead."""
    key = next(iter(model))
    name = f"model_config.{key}"
    if key in config.to_dict() and key not in DEFAULT_MODEL_KEYS:
        fix = f"set {key} in config (the module's model_config is made from it, and the loss reads it there)"
    else:
        fix = f"size its networks with {config_questions.network_size_keys(config)} in config"
    raise TrialError(
        f"{name}: {_algo(config)} makes its module's model_config from its own settings and reads none from the "
        f"file; {fix}, and remove model_config",
        "_model_config",
    )


def _check_block(block: dict, name: str, attr: str, known: dict[str, Any], reader: str) -> None:
    """Every key of ``block`` one that ``reader`` reads (else a did-you-mean naming what it reads), values typed."""
    for key, value in block.items():
        if key not in known:
            reads = f" (it reads {', '.join(sorted(known))})" if len(known) <= 12 else ""
            raise TrialError(
                f"{name}.{key}={value!r} is never read by {reader}{did_you_mean(key, known)}{reads}; remove {key} "
                "or fix its name",
                attr,
            )
        _check_type(f"{name}.{key}", value, known[key], attr)


def _check_type(name: str, value: Any, expected: Any, key: str) -> None:
    if expected is int and is_real(value) and float(value).is_integer():
        return  # a size: memory.py judges it against the run (a capacity the run never fills is fine)
    try:
        check_type(name, value, expected, "", {}, "value")
    except UserError as e:
        raise TrialError(str(e), key) from None


def replay_keys(config) -> dict[str, Any]:
    """{replay_buffer_config key the algorithm reads: its type}: the algorithm's own answer, else the keys of the
    buffer class RLlib builds (its constructor's named arguments; RLlib passes the rest on, unread)."""
    defaults = config_questions.replay_keys_read(config) or _default_buffer(type(config))
    known: dict[str, Any] = {key: type_of_default(value) for key, value in defaults.items()}
    known["type"] = Any
    buffer_class = defaults.get("type")
    if isinstance(buffer_class, str):
        buffer_class = getattr(replay_buffers, buffer_class, None)
    if inspect.isclass(buffer_class) and config_questions.replay_keys_read(config) is None:
        for klass in buffer_class.__mro__:
            init = vars(klass).get("__init__")
            if init is None:
                continue
            for pname, p in inspect.signature(init).parameters.items():
                if pname != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
                    known.setdefault(pname, p.annotation if p.annotation is not p.empty else Any)
    return known


@functools.cache
def _default_buffer(config_class: type) -> dict:
    return dict(config_class().replay_buffer_config or {})


DEFAULT_MODEL_KEYS = frozenset(f.name for f in dataclasses.fields(DefaultModelConfig))


def model_keys(config) -> dict[str, Any]:
    """{model_config key a default RLModule reads: its type}: RLlib's DefaultModelConfig and the algorithm's own."""
    known: dict[str, Any] = {f.name: f.type for f in dataclasses.fields(DefaultModelConfig)}
    try:
        own = config._model_config_auto_includes
    except Exception:  # noqa: BLE001 - a config that cannot say: the defaults only
        own = {}
    for key, value in (own or {}).items():
        known.setdefault(key, type_of_default(value))
    return {k: (Any if isinstance(v, str) else v) for k, v in known.items()}  # string annotations: cannot tell
