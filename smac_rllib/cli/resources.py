"""What a trial asks for vs what the machine or cluster has, so that no trial waits forever in PENDING.

* GPUs asked for but none usable (no CUDA device for torch locally, no GPU in the Ray cluster): warn once and
  run the learner (and env runners) on CPU, or fail fast with ``--strict-resources``.
* More CPUs per trial than this machine has (a local Ray): start Ray with that many logical CPUs and warn
  that it runs oversubscribed, or fail fast with ``--strict-resources``.
* On an existing cluster, a trial larger than the cluster's current CPUs is only a warning (an autoscaler may
  add nodes).
"""

from __future__ import annotations

import math
import os

import torch

from smac_rllib.core.values import is_real
from smac_rllib.algorithms import config_questions
from smac_rllib.cli.errors import UserError, warn
from smac_rllib.cli.experiment_spec import ExperimentSpec
from smac_rllib.cli.memory import max_steps, memory_error
from smac_rllib.cli.ray_output import quiet
from smac_rllib.cli.checkpoint_disk import check_checkpoint_disk
from smac_rllib.cli.resume_stop import stop_text
from smac_rllib.cli.storage import storage_of
from smac_rllib.cli.yaml_loader import build_configs

GPU_KEYS = ("num_gpus_per_learner", "num_gpus_per_env_runner", "num_gpus", "num_gpus_per_offline_eval_runner")


def trial_request(spec: ExperimentSpec) -> dict[str, float]:
    """The largest {"CPU": .., "GPU": ..} one trial of ``spec`` reserves (RLlib's placement group, all bundles)."""
    need = {"CPU": 0.0, "GPU": 0.0}
    for config in spec.configs:
        asked = _request(spec, config)
        for key in need:
            need[key] = max(need[key], float(asked.get(key, 0.0)))
    return need


def _request(spec: ExperimentSpec, config) -> dict:
    """The resources one trial of ``config`` reserves (RLlib's placement group, all bundles)."""
    with quiet():
        return spec.algo_class.default_resource_request(config).required_resources


def local_gpus() -> int:
    """CUDA devices torch can use here (a GPU torch cannot use would only crash the learner)."""
    try:
        return torch.cuda.device_count() if torch.cuda.is_available() else 0
    except Exception:  # noqa: BLE001
        return 0


def cpu_fallback(spec: ExperimentSpec) -> None:
    """Set every GPU request of ``spec`` to 0 (the learner then runs on CPU) and rebuild its configs."""
    for key in GPU_KEYS:
        if key in spec.param_space:
            spec.param_space[key] = 0
    spec.param_space.pop("cuda_deterministic", None)  # a CUDA learner's switch: nothing to switch on CPU
    if spec.param_space.get("autocast") == "fp16":  # a GPU precision: the CPU learner runs fp32 ("auto")
        spec.param_space.pop("autocast")
    spec.configs = build_configs(spec)


def fit_experiments(specs: list[ExperimentSpec], *, strict: bool, gpus: float) -> None:
    """Make every experiment fit ``gpus`` GPUs: CPU fallback with one warning, or a UserError when strict."""
    warned = False
    for spec in specs:
        need = trial_request(spec)
        if need["GPU"] <= gpus:
            continue
        keys = [k for k in GPU_KEYS if _positive(spec.param_space.get(k))] or ["num_gpus_per_learner"]
        asked = ", ".join(f"{k}={spec.param_space.get(k)}" for k in keys)
        if strict:
            raise UserError(
                f"experiment {spec.name!r} asks for {need['GPU']:g} GPU(s) per trial ({asked}) but {gpus:g} are "
                f"available; run on a GPU machine, or set them to 0 (--config '{{\"{keys[0]}\": 0}}'), or drop "
                "--strict-resources",
                spec.source,
            )
        if not warned:
            warn(
                f"no usable GPU here ({gpus:g} available) but {spec.source} asks for {asked}: running "
                f"{_gpu_users(keys)} on CPU (slower; --strict-resources fails instead)"
            )
            warned = True
        cpu_fallback(spec)


def _gpu_users(keys: list[str]) -> str:
    """``the learner``, ``the env runners``, ... for the GPU keys ``keys`` (num_gpus_per_env_runner, ...)."""
    users = {"num_gpus_per_env_runner": "the env runners", "num_gpus_per_offline_eval_runner": "the offline runners"}
    return " and ".join(dict.fromkeys(users.get(k, "the learner") for k in keys))


OVERSUBSCRIBE_LIMIT = 8  # logical CPUs of a local Ray per physical one, at most


def check_local_cpus(specs: list[ExperimentSpec]) -> None:
    """Before Ray starts: a trial that asks for more than ``OVERSUBSCRIBE_LIMIT`` x this machine's CPUs is refused (each
    env runner is a process: hundreds of them would exhaust the machine); so are more torch threads per process than
    the machine has cores."""
    have = os.cpu_count() or 1
    for spec in specs:
        threads = max((getattr(c, "torch_num_threads", 0) or 0 for c in spec.configs), default=0)
        if threads > have:
            raise UserError(
                f"torch_num_threads={threads}, and this machine has {have} CPU cores: each learner and env runner "
                f"process would run {threads} threads on them (oversubscribed: slower, docs/design.md §3); use at "
                f"most {have} (1, the default, for runners beside a learner)",
                spec.key_lines.get("torch_num_threads", spec.source),
            )
        need = math.ceil(trial_request(spec)["CPU"])
        if need > OVERSUBSCRIBE_LIMIT * have:
            raise UserError(
                f"a trial of {spec.name!r} needs {need} CPUs (env runners + learners + driver) but this machine has "
                f"{have}; a local Ray runs at most {OVERSUBSCRIBE_LIMIT}x oversubscribed: lower num_env_runners (e.g. "
                f"to {max(0, have - 1)}) or run on a Ray cluster (--address)",
                spec.source,
            )
        at_once = max(1, min(have // max(need, 1), spec.max_concurrent_trials or have))
        rounds = math.ceil(spec.num_trials / at_once)
        if rounds > MANY_ROUNDS:  # 100 seeds x a grid on a laptop: weeks of back-to-back runs
            warn(
                f"{spec.name}: {spec.num_trials:,} trials, at most {at_once} at a time on this machine ({need} CPUs "
                f"each, {have} here): {rounds:,} rounds back to back, each to the stop ({stop_text(spec.stop)}); lower "
                "num_samples or the grid, or run on a Ray cluster (--address)"
            )


MANY_ROUNDS = 50  # trials run back to back on this machine above which the sweep is said (the tuned sweep: 27)
SMALL_REQUEST_STEPS = 10  # env steps per sample request to a remote runner below which its Ray round trip dominates


def warn_small_requests(spec: ExperimentSpec) -> None:
    """A remote env runner asked for a handful of env steps per request (``rollout_fragment_length: 1``, a DQN
    habit): every request is a Ray call and a result sent back, a few ms each, against ~1 ms per state env step."""
    for config in spec.configs:
        if not (config.num_env_runners or 0) or config.rollout_fragment_length == "auto":
            continue
        request = config.rollout_fragment_length * (config.num_envs_per_env_runner or 1)
        if request < SMALL_REQUEST_STEPS:
            warn(
                f"{spec.key_lines.get('rollout_fragment_length', spec.source)}: rollout_fragment_length="
                f"{config.rollout_fragment_length} on remote env runners: one Ray round trip per {request} env "
                "step(s), which costs more than the steps (3x slower on a 2-core machine); use 50-125, or "
                "num_env_runners: 0 to sample in the trial's own process"
            )
            return


def check_local_placement(specs: list[ExperimentSpec]) -> None:
    """Before a local Ray (one node): a placement it can never give is refused, instead of a trial PENDING forever
    without a word. STRICT_SPREAD puts each bundle of a trial (driver + learners, each env runner) on its own node."""
    for spec in specs:
        for config in spec.configs:
            with quiet():
                pgf = spec.algo_class.default_resource_request(config)
            bundles = [b for b in pgf.bundles if any(v > 0 for v in b.values())]
            if pgf.strategy == "STRICT_SPREAD" and len(bundles) > 1:
                raise UserError(
                    f"experiment {spec.name!r}: placement_strategy STRICT_SPREAD puts each of a trial's {len(bundles)} "
                    "bundles (driver and learners, each env runner) on its own node, and a local Ray has one node: "
                    "the trial would wait in PENDING forever; use placement_strategy: PACK (or SPREAD), or run on a "
                    f"Ray cluster with at least {len(bundles)} nodes (--address)",
                    spec.source,
                )


def local_cpus_needed(specs: list[ExperimentSpec], *, strict: bool) -> int:
    """Logical CPUs for a local Ray: this machine's, or more when one trial needs more (oversubscribed, warned)."""
    have = os.cpu_count() or 1
    biggest = max((trial_request(s)["CPU"] for s in specs), default=1.0)
    need = math.ceil(biggest)
    if need > have:
        spec = next(s for s in specs if math.ceil(trial_request(s)["CPU"]) == need)
        name, cause = spec.name, _largest_cpu_setting(spec)
        if strict:
            raise UserError(
                f"a trial of {name!r} needs {need} CPUs (env runners + learners + driver) but this machine has {have}; "
                f"lower {cause}, or drop --strict-resources to run oversubscribed"
            )
        warn(
            f"a trial of {name!r} needs {need} CPUs but this machine has {have}: starting Ray with {need} logical CPUs "
            f"(runs oversubscribed, slower; lower {cause} to avoid it)"
        )
    return max(have, need)


# Settings that add CPUs to a trial's request, and the value that adds none (or the fewest).
_CPU_SETTINGS = {
    "num_env_runners": 0, "num_learners": 0, "num_cpus_for_main_process": 1, "num_cpus_per_env_runner": 1,
    "num_cpus_per_learner": 1, "evaluation_num_env_runners": 0,
}  # fmt: skip


def _largest_cpu_setting(spec: ExperimentSpec) -> str:
    """``num_env_runners (now 2; 0 saves 2 of the 4 CPUs)``: the setting whose smallest value saves the most CPUs."""
    config = max(spec.configs, key=lambda c: _cpus(spec, c))
    total, saved, lowest = _cpus(spec, config), {}, {}
    for key, low in _CPU_SETTINGS.items():
        value = getattr(config, key, None)
        for tried in (low, low + 1):  # evaluation_parallel_to_training needs one evaluation runner at least
            if not (isinstance(value, (int, float)) and not isinstance(value, bool) and value > tried):
                break
            try:
                saved[key] = total - _cpus(spec, config.copy(copy_frozen=False).update_from_dict({key: tried}))
            except ValueError:  # a value other settings refuse: the next one up
                continue
            lowest[key] = tried
            break
    if not saved or max(saved.values()) <= 0:
        return "num_env_runners"
    key = max(saved, key=saved.get)
    return f"{key} (now {getattr(config, key)}; {lowest[key]} saves {saved[key]:g} of the {total:g} CPUs)"


def _cpus(spec: ExperimentSpec, config) -> float:
    return float(_request(spec, config).get("CPU", 0.0))


def check_cluster_cpus(specs: list[ExperimentSpec], cluster_cpus: float, *, strict: bool) -> None:
    for spec in specs:
        need = trial_request(spec)["CPU"]
        if need > cluster_cpus:
            message = f"a trial of {spec.name!r} needs {need:g} CPUs but the Ray cluster has {cluster_cpus:g} now"
            if strict:
                raise UserError(message + "; lower num_env_runners or add nodes")
            warn(message + ": it waits until an autoscaler adds nodes")


def custom_resources(specs: list[ExperimentSpec]) -> dict[str, float]:
    """Custom resources one trial asks for (e.g. ``learner_node``/``rollout_node`` from the cluster examples)."""
    need: dict[str, float] = {}
    for spec in specs:
        for config in spec.configs:
            with quiet():
                pgf = spec.algo_class.default_resource_request(config)
            for key, value in pgf.required_resources.items():
                if key not in ("CPU", "GPU", "memory", "object_store_memory") and value > 0:
                    need[key] = max(need.get(key, 0.0), float(value))
    return need


def local_custom_resources(specs: list[ExperimentSpec]) -> dict[str, float]:
    """Grant the custom (placement) resources on this machine, so a cluster example never waits in PENDING."""
    need = custom_resources(specs)
    if need:
        warn(
            f"the experiment places actors by custom resources {sorted(need)} (cluster nodes); "
            "a local run grants them on this machine"
        )
    return {key: float(math.ceil(value)) for key, value in need.items()}


def check_cluster_custom_resources(specs: list[ExperimentSpec], cluster: dict[str, float], *, strict: bool) -> None:
    missing = sorted(k for k in custom_resources(specs) if k not in cluster)
    if missing:
        message = f"no node of the Ray cluster offers the custom resources {missing} the experiment places actors on"
        if strict:
            raise UserError(message + "; start nodes with them (cluster/*.yaml) or remove the custom_resources_* keys")
        warn(message + ": its trials wait until an autoscaler adds such nodes (cluster/README.md)")


def _positive(value) -> bool:
    return is_real(value) and value > 0


IMPRACTICAL_HOURS_PER_10K_FRAMES = 1.0


def cpu_pixel_hours_per_10k_frames(config) -> float | None:
    """Estimated learner hours per 10k frames of a pixel run on a CPU learner; None if not that case (the
    algorithm's own estimate: ``config_questions.cpu_hours_per_10k_frames``)."""
    return config_questions.cpu_hours_per_10k_frames(config)


def check_memory(specs: list[ExperimentSpec], *, gpus: float) -> None:
    """Before Ray starts: a trial whose estimated memory exceeds this machine's is refused in one line
    (cli/memory.py)."""
    for spec in specs:
        steps = max_steps(spec.stop or {})  # a run that stops early never fills a large replay
        for config in spec.configs:
            message = memory_error(config, gpus=gpus, steps=steps)
            if message:
                raise UserError(f"experiment {spec.name!r}: {message}", spec.source)
        check_checkpoint_disk(spec, storage_of(spec))


def warn_impractical(specs: list[ExperimentSpec]) -> None:
    """One warning per experiment whose CPU learner would take hours per 10k frames (else: a silent multi-hour
    iteration)."""
    for spec in specs:
        hours = [h for h in (cpu_pixel_hours_per_10k_frames(c) for c in spec.configs) if h is not None]
        if hours and max(hours) >= IMPRACTICAL_HOURS_PER_10K_FRAMES:
            source, smaller = config_questions.cost_hint(spec.configs[0])
            warn(
                f"{spec.name!r} runs paper-size pixel updates on a CPU learner: about {max(hours):.0f} h per 10k "
                f"frames on a 2-core CPU ({source}); use a GPU learner (num_gpus_per_learner: 1) or {smaller} here"
            )
