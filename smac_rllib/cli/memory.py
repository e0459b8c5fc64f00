"""Will a trial fit in this machine's memory? A rough per-trial estimate, checked before Ray starts (local runs).

Terms (bytes): the networks' parameters with their gradients, Adam's two moments and the target critics (counted by
building the RLModule on PyTorch's ``meta`` device: exact counts, nothing allocated); the replay buffer (capacity x
one agent step: the observation at its dtype, twice where the algorithm stores (x, x') transitions); the activations of
one update where the algorithm estimates them (pixel SMAC: the actor and critics over (K+1) x B x T latent rows, the
world model over B x T frames). What depends on the algorithm comes from ``algorithms/config_questions.py``. A trial
whose estimate exceeds the share of physical memory Ray lets processes use (its memory monitor kills workers past
``RAY_memory_usage_threshold``, 95%) cannot run: the CLI says so in one line, naming the largest term
and the setting to lower, instead of a 70-line allocator traceback after Ray started.
"""

from __future__ import annotations

import functools
import os

import torch

from smac_rllib.algorithms import config_questions
from smac_rllib.cli.ray_output import quiet
from smac_rllib.envs.registry import make_env

GiB = 2**30


def physical_memory() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


@functools.lru_cache(maxsize=32)
def _spaces(env: str, env_config_items: tuple):
    made = make_env(env, dict(env_config_items))
    try:
        return made.observation_space, made.action_space
    finally:
        made.close()


def _param_count(config, observation_space, action_space) -> int:
    """Parameters of ``config``'s RLModule, built on the meta device (no memory, exact shapes)."""
    config = config.copy(copy_frozen=False).environment(observation_space=observation_space, action_space=action_space)
    with quiet(), torch.device("meta"):  # RLlib's deprecation chatter stays out of the user's terminal
        module = config.get_rl_module_spec().build()
    return sum(p.numel() for p in module.parameters())


STEPS_PER_ITERATION_BOUND = 10_000  # a generous bound on one iteration's sampled steps, for iteration-count stops


def max_steps(stop: dict) -> int | None:
    """The most agent steps a run with these ``stop`` criteria can store (None: not bounded by them)."""
    for key in ("env_runners/num_env_steps_sampled_lifetime", "num_env_steps_sampled_lifetime", "timesteps_total"):
        if isinstance(stop.get(key), (int, float)):
            return int(stop[key])
    if isinstance(stop.get("training_iteration"), (int, float)):
        return int(stop["training_iteration"]) * STEPS_PER_ITERATION_BOUND
    return None


def estimate(config, *, learner_on_gpu: bool = False, steps: int | None = None) -> dict[str, tuple[float, str]]:
    """{term: (bytes, the setting that scales it)} of host memory for one trial of ``config``; {} where it cannot
    tell. ``learner_on_gpu``: the networks and the update's activations live in GPU memory, only the replay here.
    ``steps``: the most steps the run stores (its stop criterion); the replay never holds more than that."""
    env = config.env if isinstance(config.env, str) else None
    if env is None:
        return {}
    try:
        items = tuple(sorted((config.env_config or {}).items(), key=repr))
        observation_space, action_space = _spaces(env, items)
    except Exception:  # noqa: BLE001 - an env that cannot be built here: RLlib will say why
        return {}
    terms: dict[str, tuple[float, str]] = {}
    try:
        if learner_on_gpu:
            raise LookupError  # not host memory
        params = _param_count(config, observation_space, action_space)
        width = config_questions.network_size_keys(config)
        terms[f"the networks ({params:,} parameters, with gradients, Adam state and target critics)"] = (
            params * 4 * 5,
            width,
        )
    except Exception:  # noqa: BLE001
        pass
    capacity = (getattr(config, "replay_buffer_config", None) or {}).get("capacity")  # PPO has none
    if isinstance(capacity, (int, float)) and capacity > 0:
        shape = getattr(observation_space, "shape", None) or (1,)
        itemsize = getattr(getattr(observation_space, "dtype", None), "itemsize", 4) or 4
        # an episode buffer (pixels, RLlib's algorithms) keeps each observation once; our state replay keeps x and x'
        copies = config_questions.observations_per_replay_step(config)
        per_step = copies * itemsize * int(max(1, _prod(shape)))
        stored = int(min(capacity, steps)) if steps is not None else int(capacity)
        terms[f"the replay buffer ({stored:,} steps)"] = (stored * per_step, "replay_buffer_config.capacity")
    if not learner_on_gpu:
        terms.update(config_questions.update_memory_terms(config))
    return terms


def _prod(shape) -> int:
    out = 1
    for n in shape:
        out *= int(n)
    return out


def memory_error(config, available: int | None = None, *, gpus: float = 0, steps: int | None = None) -> str | None:
    """One line when one trial of ``config`` cannot fit in ``available`` bytes (default: physical memory); else None.
    ``gpus``: GPUs this machine has (a learner asking for one keeps its networks there)."""
    terms = estimate(
        config, learner_on_gpu=bool(gpus) and bool(getattr(config, "num_gpus_per_learner", 0)), steps=steps
    )
    if not terms:
        return None
    if available is None:
        limit, physical = ray_memory_threshold(), physical_memory()
        available = limit * physical
        machine = (
            f"the {available / GiB:,.1f} GiB Ray lets this machine's processes use ({limit:.0%} of "
            f"{physical / GiB:,.1f} GiB: past that its memory monitor kills workers)"
        )
    else:
        machine = f"this machine's {available / GiB:,.1f} GiB"
    total = sum(b for b, _ in terms.values())
    if total <= available:
        return None
    term, (largest, key) = max(terms.items(), key=lambda kv: kv[1][0])
    return (
        f"one trial needs ~{total / GiB:,.1f} GiB, more than {machine}: the largest term is {term}, "
        f"~{largest / GiB:,.1f} GiB; lower {key}"
    )


def ray_memory_threshold() -> float:
    """The share of the node's memory past which Ray's memory monitor kills workers (``RAY_memory_usage_threshold``,
    0.95 by default)."""
    try:
        return min(1.0, max(0.1, float(os.environ.get("RAY_memory_usage_threshold", "0.95"))))
    except ValueError:
        return 0.95
