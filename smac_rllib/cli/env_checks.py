"""Checks of a tuned example's ``env`` and ``env_config`` before Ray sees them: the env name (``dmc/<domain>-<task>``
or a gymnasium id, with the closest known one), env_config keys and types against ``DMCEnv``'s keyword arguments,
their values (``smac_rllib.envs.validation``) at every grid point, a gymnasium env's action and observation spaces,
and evaluation on the modality the policy was trained on."""

from __future__ import annotations

import difflib
import importlib.util
import os
import re
import typing
from typing import Any

import gymnasium as gym

from smac_rllib.cli.checks import check_type
from smac_rllib.cli.env_config_values import check_env_config_values
from smac_rllib.cli.errors import UserError, did_you_mean, one_line, type_name
from smac_rllib.cli.grids import MAX_GRID_POINTS, grid_options, grid_variants, is_grid
from smac_rllib.cli.ray_output import quiet
from smac_rllib.envs import ENV_CONFIG_KEYS, DMCEnv, env_names, parse_env_name
from smac_rllib.envs.validation import env_config_errors
from smac_rllib.envs.names import respelled


def _check_env_seed(config: dict, env_config: dict, line_of) -> None:
    """env_config.seed beside the run's seed: RLlib's env runners reset every env with seed (+ their index) at the
    first reset, which replaces the env's own seed."""
    if env_config.get("seed") is not None and config.get("seed") is not None:
        raise UserError(
            f"env_config.seed={env_config['seed']!r} is never read: with seed set (seed: {config['seed']!r}), RLlib "
            "seeds every env at its first reset from seed (+ the env runner's index), which replaces env_config.seed; "
            "remove env_config.seed (seed alone makes the run reproducible, and a seed grid varies the envs too)",
            line_of("env_config", "seed"),
        )


def check_env(config: dict, algo_class: type, line_of) -> None:
    env_options = grid_options(config["env"])
    for env in env_options:
        if not isinstance(env, str):
            raise UserError(f"env must be a name like 'dmc/cheetah-run', got {type_name(env)}", line_of("env"))
        _check_env_name(env, line_of("env"))
    if "env_config" in config and config["env_config"] is None:  # `env_config: null`: no settings, as RLlib's {}
        config["env_config"] = {}
    env_config = config.get("env_config")
    if env_config is not None and not isinstance(env_config, dict):
        raise UserError(f"env_config must be a mapping, got {type_name(env_config)}", line_of("env_config"))
    if is_grid(env_config):
        return  # a grid of whole mappings: each checked as its trial (trial_check.py)
    env_config = env_config or {}
    if not all(e.startswith("dmc/") for e in env_options):
        for env in env_options:  # a gymnasium env: its own kwargs
            if not env.startswith("dmc/"):
                check_env_config_values(env, env_config, algo_class, line_of)
                _check_action_space(env, env_config, algo_class, line_of("env"))
        _check_env_seed(config, env_config, line_of)
        return
    hints = typing.get_type_hints(DMCEnv.__init__)
    for key, value in env_config.items():
        if key not in ENV_CONFIG_KEYS:
            hint = _dmc_key_hint(key, algo_class, env_options[0], value)
            raise UserError(
                f"unknown env_config key {key!r}{hint} (valid: {', '.join(ENV_CONFIG_KEYS)})",
                line_of("env_config", key),
            )
        check_type(f"env_config.{key}", value, hints.get(key, Any), line_of("env_config", key), env_config, key)
    _check_env_config_values(env_options, env_config, line_of)
    for env in env_options:
        check_env_config_values(env, env_config, algo_class, line_of)
    _check_env_seed(config, env_config, line_of)


# Other suites' names for our env_config keys (DrQ/gym wrappers, dm_control's own suite.load arguments).
DMC_KEY_SYNONYMS = {
    **dict.fromkeys(("height", "width", "size", "img_size", "resolution", "image_height", "image_width"), "image_size"),
    **dict.fromkeys(("frame_skip", "frameskip", "frame_repeat", "skip_frames", "repeat"), "action_repeat"),
    **dict.fromkeys(("camera", "camera_name", "cam_id"), "camera_id"),
    **dict.fromkeys(("pixels", "from_pixel", "use_pixels", "pixel_obs"), "from_pixels"),
    **dict.fromkeys(("max_episode_steps", "episode_length", "max_steps", "task_kwargs"), "time_limit"),
}


def _dmc_key_hint(key, algo_class, env: str = "dmc/<domain>-<task>", value=None) -> str:
    """``; did you mean 'image_size'?`` from a synonym other suites use or a close spelling; an algorithm's setting
    written into env_config is moved up."""
    if isinstance(key, str) and hasattr(algo_class.get_default_config(), key):
        return (
            f"; {key} is a setting of {algo_class.__name__}, not of the env: move it up into config, beside env_config"
        )
    if key in ("task", "task_name", "domain", "domain_name"):  # the task is the env's name: dmc/<domain>-<task>
        domain, task = env.removeprefix("dmc/").partition("-")[::2]
        named = f"dmc/{domain}-{value}" if key.startswith("task") else f"dmc/{value}-{task}"
        return f"; the {key} is part of the env's name: env: {named} (dmc/<domain>-<task>)"
    if key in DMC_KEY_SYNONYMS:
        unit = " (seconds of simulated time)" if DMC_KEY_SYNONYMS[key] == "time_limit" else ""
        return f"; did you mean {DMC_KEY_SYNONYMS[key]!r}{unit}?"
    return did_you_mean(key, ENV_CONFIG_KEYS)


def _check_env_config_values(env_options: list[str], env_config: dict, line_of) -> None:
    """Ranges and pixel-only keys of every (env, env_config grid point) pair (``smac_rllib.envs.validation``)."""
    seen: set[str] = set()
    for env in env_options:
        for variant in grid_variants(env_config, limit=MAX_GRID_POINTS):
            key = repr((env, sorted(variant.items(), key=repr)))
            if key in seen:
                continue
            seen.add(key)
            errors = env_config_errors(env, variant)
            if errors:
                bad_key, message = errors[0]
                raise UserError(message, line_of("env_config", bad_key))


def _check_action_space(env: str, env_config: dict, algo_class: type, where: str) -> None:
    """Our algorithms act in a continuous space on flat observations: a gymnasium env with a discrete action space,
    or image / dict observations, is refused (pixels come from ``dmc/...`` with ``from_pixels``)."""
    if not algo_class.__module__.startswith("smac_rllib."):
        return  # RLlib's own algorithms say what they support
    if any(is_grid(v) for v in env_config.values()):
        return
    try:
        with quiet():
            made = gym.make(env, **env_config)
    except TypeError as e:  # an env_config key the env does not take: the trial would fail the same way, after Ray
        bad = re.search(r"unexpected keyword argument '([^']+)'", str(e))
        if bad:
            raise UserError(
                f"env_config key {bad.group(1)!r} is not an argument of {env!r} ({one_line(e)}); remove it or "
                "use one of the env's own keyword arguments",
                where,
            ) from None
        return
    except Exception:  # noqa: BLE001 - cannot build it here (missing extra, a class path): RLlib will say why
        return
    try:
        space, observations = made.action_space, made.observation_space
    finally:
        made.close()
    if not isinstance(space, gym.spaces.Box):
        raise UserError(
            f"{algo_class.__name__} needs a continuous (Box) action space, but {env!r} has {space}; use a continuous "
            "env (dmc/<domain>-<task>, e.g. dmc/cartpole-swingup, or Pendulum-v1) or an RLlib algorithm for discrete "
            "actions (run: PPO)",
            where,
        )
    if not (isinstance(observations, gym.spaces.Box) and len(observations.shape) == 1):
        raise UserError(
            f"{algo_class.__name__} learns from a flat vector of observations (a 1-D Box) on gymnasium envs, but "
            f"{env!r} observes {observations}; use a state env (e.g. HalfCheetah-v5, Pendulum-v1) or, for pixels, "
            "dmc/<domain>-<task> with env_config from_pixels: true",
            where,
        )


def _check_env_name(env: str, where: str) -> None:
    if env != env.strip():  # `env: dmc/cartpole-balance ` (quoted) or a pasted name
        raise UserError(f"env {env!r} has a space at its start or end; write env: {env.strip()}", where)
    if env.startswith("dmc/"):
        try:
            parse_env_name(env)
        except ValueError as e:
            raise UserError(one_line(e), where) from None
        return
    spelled = respelled(env)  # `dmc.cartpole-swingup` would pass for a class path below
    if spelled and env not in gym.registry:
        raise UserError(
            f"unknown env {env!r}; did you mean {spelled!r}? (DMC tasks are named dmc/<domain>-<task>)", where
        )
    ids = [spec.id for spec in gym.registry.values() if spec.entry_point == env]
    if ids:  # `module:Class`, the entry point a registration names: gymnasium would look up an id "Class"
        raise UserError(
            f"env {env!r} is the entry point gymnasium registers {ids[0]} with, not an env id; write env: {ids[-1]}",
            where,
        )
    if env in gym.registry or (":" not in env and "." in env.split("/")[-1].split("-v")[0]):  # an id, a class path
        return
    try:
        parse_env_name(env)
    except ValueError:
        pass
    else:
        raise UserError(
            f"unknown env {env!r}; did you mean 'dmc/{env}'? (DMC tasks are named dmc/<domain>-<task>)", where
        )
    module, colon, env_id = env.partition(":")
    if colon and module and _imports_from_here(module, where):
        if env_id in gym.registry:
            return
        raise UserError(
            f"env {env!r}: importing {module} registers no env {env_id!r} (gymnasium's module:EnvId imports the "
            "module, which must call gymnasium.register(id=...) for it); register it there or fix the id",
            where,
        )
    if colon and module in ("gym", "gymnasium", "gym_env") and env_id in gym.registry:  # RLlib's older "gym:" form
        raise UserError(f"env {env!r}: gymnasium's {env_id} is written env: {env_id} here", where)
    if colon and module and importlib.util.find_spec(module.split(".")[0]) is None:  # gymnasium's "module:EnvId"
        raise UserError(
            f"env {env!r} registers {env_id!r} from the Python package {module!r}, which is not installed here; "
            f"install it (e.g. pip install {module.split('.')[0].replace('_', '-')}) or use another env",
            where,
        )
    if env.startswith("ALE/") or "NoFrameskip" in env:  # Atari: ale-py's, not installed, and not for these algorithms
        raise UserError(
            f"env {env!r} is an Atari game (ale-py, not installed here): image observations and discrete actions, "
            "which these continuous-control algorithms do not take; pixels come from dmc/<domain>-<task> with "
            "env_config: {from_pixels: true}",
            where,
        )
    names = env_names() + sorted(gym.registry)
    close = difflib.get_close_matches(env, names, n=1) or difflib.get_close_matches("dmc/" + env, names, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise UserError(f"unknown env {env!r}{hint} (DMC tasks: python -m smac_rllib.envs --list)", where)


def _imports_from_here(module: str, where: str) -> bool:
    """gymnasium's ``module:EnvId`` imports the module (in every env runner): True once imported here; a module that is
    only a file of the current directory (``python train.py`` would find it, ``rllib`` and Ray's workers do not) is
    refused with the fix."""
    top = module.split(".")[0]
    if importlib.util.find_spec(top) is None:
        local = next((p for p in (f"{top}.py", os.path.join(top, "__init__.py")) if os.path.isfile(p)), None)
        if local is None:
            return False
        raise UserError(
            f"env '{module}:...' imports {module}, which is ./{local} in this directory: `rllib` and Ray's workers do "
            f"not import from the current directory; run with PYTHONPATH={os.getcwd()} (a local Ray's workers inherit "
            "it; on a cluster, install the module on every node)",
            where,
        )
    try:
        importlib.import_module(module)
    except Exception as e:  # noqa: BLE001 - the user's module fails on import: its own words
        raise UserError(f"env '{module}:...': importing {module} fails: {one_line(e)}; fix the module", where) from None
    return True


def check_modalities(config: dict, line_of) -> None:
    """Evaluation on pixels while training on states (or the reverse) is refused: the evaluation runners would build
    observations the trained module cannot read (it fails after Ray started, or evaluates a different task)."""
    evaluation = config.get("evaluation_config")
    if not isinstance(evaluation, dict) or not isinstance(evaluation.get("env_config"), dict):
        return
    if "from_pixels" not in evaluation["env_config"]:
        return
    train = config.get("env_config") if isinstance(config.get("env_config"), dict) else {}
    trained, evaluated = train.get("from_pixels", False), evaluation["env_config"]["from_pixels"]
    if is_grid(trained) or is_grid(evaluated) or bool(trained) == bool(evaluated):
        return
    says = ("pixels", "states") if evaluated else ("states", "pixels")
    raise UserError(
        f"evaluation_config.env_config.from_pixels={evaluated!r} evaluates on {says[0]} a policy trained on {says[1]} "
        f"(env_config.from_pixels={trained!r}); remove from_pixels from evaluation_config.env_config (the evaluation "
        "uses the training env_config plus its own overrides)",
        line_of("evaluation_config", "env_config"),
    )
