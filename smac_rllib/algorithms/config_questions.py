"""What the command line asks of one built config of any algorithm, answered by the algorithm (so that ``cli/``
names none): its own errors and warnings, the steps one update replays, the numeric ranges of its settings, the
defaults to fill in before the config is built, and the hours a CPU learner would take.

Ours answer through their config classes (``config_errors()``, ``replay_batch()``, ``cpu_hours_per_10k_frames()``,
``COST_HINT``); RLlib's DreamerV3 through ``baselines/dreamerv3.py``; any other RLlib algorithm gets the neutral
answer (no errors of ours, its train batch, no estimate).
"""

from __future__ import annotations

import functools

from smac_rllib import algorithms
from smac_rllib.algorithms import pixel_run
from smac_rllib.algorithms.baselines import dreamerv3
from smac_rllib.core.values import Range
from smac_rllib.training.step_learner import StepLearnerMixin


def fill_defaults(config: dict, algo_class) -> None:
    """Defaults that depend on the algorithm, set on an experiment's config mapping before it is built."""
    if dreamerv3.is_dreamerv3(algo_class):
        dreamerv3.fill_env_config(config)


def errors(config) -> list[str]:
    """The algorithm's own one-line errors for this config (each naming the fix)."""
    if dreamerv3.is_dreamerv3(config):
        return dreamerv3.errors(config)
    own = getattr(config, "config_errors", None)  # training/fields.py: FieldTableConfig
    return own() if own else []


# RLlib settings its new API stack keeps for the old one: our algorithms never read them (key -> what to write instead)
OLD_STACK_KEYS = {
    "num_gpus": "num_gpus_per_learner (a GPU learner: num_gpus_per_learner: 1)",
    "train_batch_size": "train_batch_size_per_learner (pixels: batch_size_B x batch_length_T)",
    "model": "the algorithm's own size settings (hidden_dim, latent_dim, pixel_hidden_dim, ...)",
    "q_model_config": "the algorithm's own size settings (critic_hidden_dim, num_hidden_layers, ...)",
    "policy_model_config": "the algorithm's own size settings (hidden_dim, num_hidden_layers, ...)",
    "observation_filter": "nothing: the networks take the env's observations as they are (the paper's setting; the new "
    "stack's MeanStdFilter is an env-to-module connector these algorithms do not build)",
    "remote_worker_envs": "gym_env_vectorize_mode: async with num_envs_per_env_runner > 1 (each env in its own "
    "process; the new stack's env runners vectorize with gymnasium)",
    "remote_env_batch_wait_ms": "nothing: the new stack's env runners step their gymnasium vector env in lockstep",
    "optimization": "actor_lr, critic_lr and alpha_lr beside the other keys (the old stack's actor_learning_rate, "
    "critic_learning_rate and entropy_learning_rate)",
    "exploration_config": "the algorithm's own exploration (the stochastic policy; explore: false in evaluation_config "
    "for the deterministic one)",
}


# RLlib settings that only its old API stack (or its own learners) read: refused when switched on.
OLD_STACK_SWITCHES = {
    "clip_rewards": "is read by RLlib's old API stack only: the new stack's env runners pass the env's rewards as they "
    "are (DMC: in [0, 1] per step)",
    "compress_observations": "is read by RLlib's old-stack SAC replay only: this replay stores observations as they "
    "are (pixels as uint8 frames already)",
    "render_env": "renders nothing on RLlib's new API stack (training runs headless); record a trained policy with "
    "rllib evaluate CHECKPOINT --video eval.mp4",
    "learner_config_dict": "is read by custom RLlib learners only; this algorithm's learner takes its settings from "
    "the config itself (e.g. actor_lr: 0.001 beside the other keys)",
}


_OFFLINE_PREFIXES = ("input", "output", "offline", "prelearner", "materialize", "ope_", "off_policy")
_OFFLINE_KEYS = (
    "dataset_num_iters_per_learner", "actions_in_input_normalized", "postprocess_inputs", "shuffle_buffer_size",
    "ignore_final_observation", "map_batches_kwargs", "iter_batches_kwargs",
)  # fmt: skip
_TENSORFLOW_KEYS = (
    "eager_tracing", "eager_max_retraces", "tf_session_args", "local_tf_session_args",
    "_tf_policy_handles_more_than_one_loss",
)  # fmt: skip
_OLD_STACK_ONLY = (  # read by RLlib's old API stack (RolloutWorker, Policy; its SAC policy's private switches) only
    "enable_tf1_exec_eagerly", "keep_per_episode_custom_metrics", "export_native_model_files", "fake_sampler",
    "create_env_on_driver", "policy_map_capacity", "sampler_perf_stats_ema_coef", "preprocessor_pref",
    "replay_sequence_length", "_disable_preprocessor_api", "_disable_action_flattening",
    "_disable_execution_plan_api", "_disable_initialize_loss_from_dummy_batch", "_enable_rl_module_api",
    "_deterministic_loss", "_use_beta_distribution",
)  # fmt: skip


def _never_read(key: str) -> str | None:
    """Why our algorithms never read ``key`` (RLlib's settings of other stacks), or None."""
    if key in _TENSORFLOW_KEYS:
        return "is a TensorFlow setting, and this algorithm runs on PyTorch"
    if key in _OLD_STACK_ONLY:
        return "is read by RLlib's old API stack only (its RolloutWorkers and Policies), never on the new one"
    if "offline" in key or key.startswith(_OFFLINE_PREFIXES) or key in _OFFLINE_KEYS:
        return (
            "is a setting of RLlib's offline RL (learning from or recording datasets), which this algorithm never "
            "reads: it learns online from its env runners' samples"
        )
    return None


def _one_step_learner(config) -> bool:
    """Whether the algorithm's learner runs its own one update (``training/step_learner.py``), which replaces RLlib's
    gradient pipeline (``postprocess_gradients``: grad_clip_by, torch_skip_nan_gradients)."""
    try:
        return issubclass(config.learner_class, StepLearnerMixin)
    except Exception:  # noqa: BLE001 - an algorithm whose learner cannot be named here answers no
        return False


def _set(key: str, value, default) -> bool:
    """Whether a never-read key was set: another stack's switch written at all (its default too: ``preprocessor_pref:
    deepmind`` asks for a preprocessing this stack never does), an offline-RL setting other than its default."""
    if key in _TENSORFLOW_KEYS + _OLD_STACK_ONLY:
        return value is not None
    return value != default


@functools.cache
def _defaults(config_class: type) -> dict:
    """A fresh config's ``to_dict()`` (once per class)."""
    return config_class().to_dict()


@functools.cache
def _default_replay_type(config_class: type):
    """The replay type a config class sets by default (once per class, not per grid point)."""
    return (config_class().replay_buffer_config or {}).get("type")


def unused_keys(config, written: dict) -> list[str]:
    """One message per key the user wrote that this algorithm and run would silently ignore, naming what to write.

    ``written`` is the grid point's own mapping (defaults are not the user's). Ours: RLlib's old-stack keys, a
    replay buffer type other than the one the algorithm builds, TensorFlow, offline-RL and old-stack-only settings,
    multi-agent counting, RLlib's gradient pipeline that the one update replaces, and the algorithm's own modality rules
    (``config.unused_keys``); RLlib's algorithms say what they ignore themselves."""
    if not type(config).__module__.startswith("smac_rllib."):  # RLlib's algorithms: what RLlib never says itself
        old_model = "model" in written and getattr(config, "enable_rl_module_and_learner", False)
        return [
            f"model={written['model']!r} is RLlib's old-API-stack model config, which {type(config).__name__[:-6]} "
            f"on the new stack never reads; write model_config: {written['model']!r}"
        ] if old_model else []  # fmt: skip
    found = [
        f"{key}={written[key]!r} is an RLlib old-API-stack setting this algorithm never reads; use {use}"
        for key, use in OLD_STACK_KEYS.items()
        if key in written
    ]
    old_switches = [k for k in ("enable_rl_module_and_learner", "enable_env_runner_and_connector_v2") if k in written]
    if any(written[k] is False for k in old_switches):
        found.append(
            f"{old_switches[0]}: false asks for RLlib's old API stack; {type(config).__name__.removesuffix('Config')} "
            "runs on the new API stack only: remove enable_rl_module_and_learner and enable_env_runner_and_connector_v2"
        )
    found += [
        f"{key}={written[key]!r} is an on-policy setting (epochs of minibatches over a sampled batch) that this "
        f"off-policy loop never reads; each update draws train_batch_size_per_learner transitions from the replay, "
        "updates_per_env_step sets how many"
        for key in ("num_epochs", "minibatch_size", "shuffle_batch_per_epoch")
        if key in written
    ]
    if "training_intensity" in written:
        found.append(
            f"training_intensity={written['training_intensity']!r} is RLlib SAC's replay ratio, which this loop "
            "never reads; use updates_per_env_step (gradient updates per env step stored)"
        )
    compile_keys = [key for key in written if key.startswith(("torch_compile_learner", "torch_compile_worker"))]
    algo = type(config).__name__.removesuffix("Config")
    if compile_keys:
        found.append(
            f"{compile_keys[0]}={written[compile_keys[0]]!r} is RLlib's torch.compile switch for its own modules, "
            f"never read by {algo}'s learner, which runs its one update eagerly or, on a CUDA pixel "
            "learner, as learner_capture says ('graph', 'graph+compile'); remove the torch_compile keys"
        )
    found += [
        f"{key}={written[key]!r} {why}; remove {key}"
        for key, why in OLD_STACK_SWITCHES.items()
        if written.get(key) not in (None, False, 0, {})
    ]
    if written.get("n_step", 1) != 1:
        found.append(
            f"n_step={written['n_step']!r} cannot be honoured: the replay stores 1-step transitions (the "
            "paper's TD target, training/replay.py); remove n_step"
        )
    buffer = written.get("replay_buffer_config")
    default_type = _default_replay_type(type(config))
    if isinstance(buffer, dict) and "type" in buffer and buffer["type"] != default_type:
        pixels = bool(getattr(config, "is_pixels", False))
        found.append(
            f"replay_buffer_config.type={buffer['type']!r} is not read: {type(config).__name__} builds its own "
            f"replay ({'RLlib EpisodeReplayBuffer of B x T sequences' if pixels else 'uniform transitions'}, "
            "training/replay.py); remove type (capacity is read)"
        )
    defaults = _defaults(type(config))
    found += [
        f"{key}={written[key]!r} {why}; remove {key}"
        for key in written
        if (why := _never_read(key)) and key in defaults and _set(key, written[key], defaults[key])
    ]
    if written.get("num_aggregator_actors_per_learner"):
        found.append(
            f"num_aggregator_actors_per_learner={written['num_aggregator_actors_per_learner']!r} starts RLlib's actors "
            "that batch env runners' episodes for its own learners (IMPALA, APPO, PPO); this algorithm's learner "
            "draws its batches from its own replay; remove num_aggregator_actors_per_learner"
        )
    if written.get("count_steps_by", "env_steps") != "env_steps":
        found.append(
            f"count_steps_by={written['count_steps_by']!r} counts the agents of a multi-agent env; in this "
            "single-agent env an agent step is an env step (frames = env steps x action_repeat, inside the env), so "
            "nothing changes; remove count_steps_by"
        )
    if _one_step_learner(config):
        if written.get("grad_clip_by", "global_norm") != "global_norm":
            found.append(
                f"grad_clip_by={written['grad_clip_by']!r} is never read: this learner's one update clips each "
                "optimizer's gradients by their global norm (grad_clip); remove grad_clip_by"
            )
        if written.get("torch_skip_nan_gradients"):
            found.append(
                "torch_skip_nan_gradients=True is never read: this learner's one update skips a step whose gradients "
                "are not finite by itself (and stops after max_consecutive_nonfinite_updates); remove it"
            )
    if written.get("twin_q") is False and not getattr(config, "READS_TWIN_Q", True):
        found.append(
            f"twin_q=False is never read: {type(config).__name__.removesuffix('Config')} builds its critics from its "
            "own settings (always two Q networks, the clipped double-Q target); remove twin_q"
        )
    own = getattr(config, "unused_keys", None)
    return found + (own(written) if own else [])


def replay_keys_read(config) -> dict | None:
    """{replay_buffer_config key: an example value} of the keys the algorithm's replay reads (ours build their own:
    ``training/replay.py`` reads type and capacity); None: RLlib's, whose buffer class takes its own arguments."""
    if not type(config).__module__.startswith("smac_rllib."):
        return None
    return {"type": _default_replay_type(type(config)), "capacity": 1_000_000}


def builds_own_model_config(config) -> bool:
    """True for this package's algorithms (DreamerV3 aside): their module's ``model_config`` is made from their own
    settings (``_model_config_auto_includes``), so a file's ``model_config`` key is either unread (RLlib's
    ``fcnet_*``) or a setting changed behind the loss's back (``num_particles``)."""
    return type(config).__module__.startswith("smac_rllib.") and not dreamerv3.is_dreamerv3(config)


def warnings(config) -> list[str]:
    """What a run will do that its user may not mean: RLlib's DreamerV3's, or the config's own ``run_warnings()``."""
    if dreamerv3.is_dreamerv3(config):
        return dreamerv3.warnings(config)
    own = getattr(config, "run_warnings", None)
    return own() if callable(own) else []


def replay_batch(config) -> tuple[int | None, str]:
    """(env steps one update replays, how the config names them); (None, "") when it cannot tell."""
    if dreamerv3.is_dreamerv3(config):
        return pixel_run.sequence_batch(config.batch_size_B, config.batch_length_T)
    own = getattr(config, "replay_batch", None)
    if own:
        return own()
    try:
        batch = config.train_batch_size_per_learner
    except (AttributeError, ValueError):  # RLlib raises when neither batch size is set
        batch = None
    return (batch if isinstance(batch, int) else None), "train_batch_size_per_learner"


_DREAMERV3_RANGES = {key: Range(*bounds) for key, bounds in dreamerv3.RANGES.items()}


def ranges(algo_class: type | None = None) -> dict[str, Range]:
    """Numeric settings of algorithms not in RLlib's common set: key -> allowed numbers (``core/values.py``), from
    the field tables of our configs (``training/fields.py``) and RLlib's DreamerV3: ``algo_class``'s own (an
    algorithm or its config class), or every algorithm's when None."""
    if algo_class is not None:
        if dreamerv3.is_dreamerv3(algo_class):
            return _DREAMERV3_RANGES
        own = getattr(algo_class, "field_ranges", None) or getattr(
            algo_class.get_default_config(), "field_ranges", None
        )
        return own() if own else {}
    found = dict(_DREAMERV3_RANGES)
    for name in reversed(algorithms.__all__):  # a name several algorithms share keeps SMAC's row (listed first)
        if name.endswith("Config"):
            found |= getattr(algorithms, name).field_ranges()
    return found


def network_size_keys(config) -> str:
    """The settings that size the networks (named when they do not fit in memory)."""
    return getattr(config, "NETWORK_SIZE_KEYS", None) or (
        "pixel_hidden_dim / world_model_preset" if getattr(config, "is_pixels", False) else "hidden_dim"
    )


def observations_per_replay_step(config) -> int:
    """2 where the replay stores (x, x') per transition (our state runs: training/replay.py), else 1 (episodes)."""
    return 2 if type(config).__module__.startswith("smac_rllib.") and not getattr(config, "is_pixels", False) else 1


def update_memory_terms(config) -> dict[str, tuple[float, str]]:
    """{term: (bytes, the setting that scales it)} of one update's activations on a CPU learner, where the algorithm
    estimates them (``config.update_memory_terms``); {} otherwise."""
    own = getattr(config, "update_memory_terms", None)
    return own() if own else {}


def cpu_hours_per_10k_frames(config) -> float | None:
    """Estimated learner hours per 10k frames on a CPU learner, for the slow pixel cases; None otherwise."""
    own = getattr(config, "cpu_hours_per_10k_frames", None)
    return own() if own else None


def cost_hint(config) -> tuple[str, str]:
    """(where the cost was measured, what to run instead on a CPU) for the impractical-run warning."""
    return getattr(config, "COST_HINT", ("benchmarks/results/", "a smaller preset"))
