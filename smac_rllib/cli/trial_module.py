"""The envs and the module of one trial, as the dry run builds them (``trial_check.py``): every env the trial makes
(training; evaluation where it differs) built once, the algorithm's RLModule built for its spaces on PyTorch's
``meta`` device (exact shapes, no weights), and the evaluation's module against the trained one."""

from __future__ import annotations

import traceback
from typing import Any

import gymnasium as gym
import torch

from smac_rllib.cli.errors import one_line
from smac_rllib.cli.ray_output import quiet
from smac_rllib.cli.trial_envs import TrialError, check_target_entropy, env_spaces


def _algo(config) -> str:
    return type(config).__name__.removesuffix("Config")


def _evaluation_overrides_env(config) -> bool:
    overrides = config.evaluation_config if config.evaluation_interval else None
    return isinstance(overrides, dict) and ("env" in overrides or "env_config" in overrides)


def check_envs_and_module(config):
    """Every env the trial makes (training; evaluation where it differs) built once, the module built for it.
    Returns the evaluation's config where its env or env_config differs from training's, else None."""
    spaces = env_spaces(config.env, config.env_config)
    other = None
    if _evaluation_overrides_env(config):
        with quiet():
            evaluation = config.get_evaluation_config_object()
        if (evaluation.env, evaluation.env_config) != (config.env, config.env_config):
            try:
                evaluated = env_spaces(evaluation.env, evaluation.env_config)
            except TrialError as e:
                raise TrialError(f"evaluation_config: the evaluation {e}", "evaluation_config") from None
            _check_same_spaces(config.env, spaces, evaluation.env, evaluated)
            other = evaluation
    if spaces is not None:
        check_module_spaces(config, *spaces)
        check_target_entropy(config, spaces[1])
        _check_evaluation_module(config, *spaces)
    return other


def _check_evaluation_module(config, observation_space, action_space) -> None:
    """The evaluation runners build their module from the evaluation config and load the trained weights into it: a
    module setting in ``evaluation_config`` that changes a weight's shape fails the first evaluation, after a whole
    interval of training (a setting that keeps the shapes runs, as RLlib allows)."""
    if not config.evaluation_interval or not isinstance(config.evaluation_config, dict):
        return
    with quiet():
        evaluation = config.get_evaluation_config_object()
    trained, evaluated = config.model_config, evaluation.model_config
    if trained == evaluated:
        return
    with quiet(), torch.device("meta"):
        modules = [_spec_for(c, observation_space, action_space).build() for c in (config, evaluation)]
    shapes = [{name: tuple(p.shape) for name, p in m.state_dict().items()} for m in modules]
    if shapes[0] == shapes[1]:
        return
    changed = [k for k in sorted(set(trained) | set(evaluated)) if trained.get(k) != evaluated.get(k)]
    key = changed[0] if changed else "model_config"
    weight = next((n for n in shapes[1] if shapes[0].get(n) != shapes[1][n]), next(iter(shapes[0]), ""))
    raise TrialError(
        f"evaluation_config: {key}={evaluated.get(key)!r} (training: {trained.get(key)!r}) builds the evaluation's "
        f"module with other weight shapes ({weight}: {shapes[1].get(weight)} vs the trained {shapes[0].get(weight)}), "
        f"and the evaluation runs the trained weights; set {key} in config, not in evaluation_config",
        "evaluation_config",
    )


def _spec_for(config, observation_space, action_space):
    """The algorithm's RLModule spec for these spaces (a copy of the config, the spaces set)."""
    config = config.copy(copy_frozen=False).environment(observation_space=observation_space, action_space=action_space)
    return config.get_rl_module_spec()


def _check_same_spaces(env: Any, spaces: tuple | None, evaluated_env: Any, evaluated: tuple | None) -> None:
    """The evaluation runs the trained module (its weights synced to the evaluation runners): its env's observation
    and action spaces are the training env's, else the first evaluation fails after a whole interval of training."""
    if spaces is None or evaluated is None or tuple(spaces) == tuple(evaluated):
        return
    raise TrialError(
        f"evaluation_config: the evaluation env {evaluated_env!r} (observations {evaluated[0]}, actions "
        f"{evaluated[1]}) has other spaces than the training env {env!r} (observations {spaces[0]}, actions "
        f"{spaces[1]}): the evaluation runs the trained module; evaluate on an env with the same spaces (e.g. "
        "another task of the same domain) or make a separate experiment",
        "evaluation_config",
    )


_MODULES: set[str] = set()  # module specs already built (a seed grid builds its module once)


def check_module_spaces(config, observation_space, action_space) -> None:
    """The algorithm's RLModule built for these spaces on the meta device (exact shapes, nothing allocated), once per
    distinct (algorithm, spaces, model_config): all its module spec is built from."""
    try:
        with quiet():
            key = repr((type(config), observation_space, action_space, config.model_config))
            if key in _MODULES:
                return
            with torch.device("meta"):
                _spec_for(config, observation_space, action_space).build()
            _MODULES.add(key)
    except Exception as raised:  # noqa: BLE001 - the module's own words name what it needs
        e = _module_error(raised, config, action_space)
        pixels = len(getattr(observation_space, "shape", ()) or ()) == 3
        named = [k for k, v in (config._model_config or {}).items() if f"({v})" in str(e) or repr(v) in str(e)]
        fix = (
            f"fix model_config.{named[0]} (the module reads it as written)"
            if named
            else "drop from_pixels (this algorithm learns from states) or run an algorithm that learns from pixels"
            if pixels
            else "use an env whose observations and actions this algorithm takes"
        )
        if named:
            raise TrialError(
                f"model_config.{named[0]}: {_algo(config)}'s module: {one_line(e)}; {fix}", "_model_config"
            ) from None
        raise TrialError(
            f"{_algo(config)}'s module cannot be built for {config.env!r} (observations {observation_space}, "
            f"actions {action_space}): {one_line(e)}; {fix}",
            "env_config" if pixels else "env",
        ) from None


def _module_error(raised: Exception, config, action_space) -> Exception:
    """The module's own error: RLlib re-raises any error of a module's constructor as a notice that the old
    constructor is deprecated, so the first error of the chain that is not such a notice. A catalog that reads
    ``action_space.n`` (gymnasium's count of discrete actions: DQN's Q-head, one output per action) on an action space
    without one is RLlib's rule that the algorithm takes discrete actions only: refused as such."""
    chain: list[BaseException] = []
    error: BaseException | None = raised
    while error is not None and error not in chain:
        chain.append(error)
        error = error.__cause__ or error.__context__
    own = [c for c in chain if "has been deprecated" not in str(c)]
    for c in own:
        frames = traceback.extract_tb(c.__traceback__)
        if isinstance(c, AttributeError) and frames and "action_space.n" in (frames[-1].line or ""):
            if not isinstance(action_space, gym.spaces.Discrete):
                kind = "continuous actions" if isinstance(action_space, gym.spaces.Box) else "actions"
                raise TrialError(
                    f"{_algo(config)} takes discrete actions only (its module has one output per action, "
                    f"action_space.n); {config.env} has {kind} {action_space}; use SAC/SMAC (continuous) or a "
                    "discrete env",
                    "env",
                ) from None
    return own[0] if own else raised
