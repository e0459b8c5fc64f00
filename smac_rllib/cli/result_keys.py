"""Which keys a result of our algorithms (and RLlib's) holds: stop criteria, a scheduler's metric and the checkpoint
score must name one, else they never trigger (``result_key_error``, used by cli/experiment_parts.py)."""

from __future__ import annotations

from typing import Any

from smac_rllib.cli.errors import did_you_mean

# What a result of our algorithms (and RLlib's) holds, "a/b" = result["a"]["b"]: stop criteria, the scheduler's
# metric and the checkpoint score must be one of these (or lie under an open prefix), else they never trigger.
_RUNNER_KEYS = (
    "episode_return_mean", "episode_return_max", "episode_return_min", "episode_len_mean", "episode_len_max",
    "episode_len_min", "episode_duration_sec_mean", "num_episodes", "num_episodes_lifetime", "num_env_steps_sampled",
    "num_env_steps_sampled_lifetime", "env_reset_timer", "env_step_timer", "sample", "time_between_sampling",
    "rlmodule_inference_timer", "weights_seq_no", "num_env_steps_sampled_lifetime_throughput",
)  # fmt: skip
RESULT_KEYS: tuple[str, ...] = (
    "training_iteration", "time_total_s", "time_this_iter_s", "time_since_restore", "iterations_since_restore",
    "timesteps_since_restore", "timestamp", "num_env_steps_sampled_lifetime", "num_env_steps_stored_lifetime",
    "num_agent_steps_sampled_lifetime", "num_env_steps_trained_lifetime", "num_training_step_calls_per_iteration",
    "num_updates_lifetime", "done",
    *(f"env_runners/{k}" for k in _RUNNER_KEYS),
    *(f"evaluation/env_runners/{k}" for k in _RUNNER_KEYS),
    # the asynchronous loop's own (training/async_driver.py: AsyncDriver._report)
    "async/learner_utilization", "async/observed_updates_per_env_step", "async/policy_lag_updates",
    "async/staging_s_per_batch", "async/updates_per_s",
)  # fmt: skip
# Subtrees whose keys depend on the module ids, the learner or the run: anything below them is accepted.
RESULT_PREFIXES = (
    "learners/", "timers/", "perf/", "fault_tolerance/", "info/", "config/", "env_runner_group/",
    "env_runners/module_episode_return_mean/", "env_runners/agent_episode_return_mean/",
    "env_runners/num_agent_steps_sampled", "env_runners/num_module_steps_sampled",
    "env_runners/env_to_module_connector/", "env_runners/module_to_env_connector/", "env_runners/env_to_module_sum",
    "env_runners/num_env_steps_sampled_lifetime_throughput/", "evaluation/num_", "evaluation/actor_manager",
)  # fmt: skip


LEARNER_MODULE_IDS = ("default_policy", "__all_modules__")  # learners/<module id>/...: RLlib's single-agent ids


def result_key_error(key: Any, what: str, custom_metrics: bool = False) -> str | None:
    """None when ``key`` can be in a result; else a message with the closest key (``training_iterations``).

    ``custom_metrics``: the config has callbacks, which may log anything under ``env_runners/``."""
    if not isinstance(key, str):
        return f"{what} {key!r} is not a result key; use one like training_iteration or env_runners/episode_return_mean"
    body = key[len("evaluation/") :] if key.startswith("evaluation/env_runners/") else key
    parts = key.split("/")
    if parts[0] == "learners" and len(parts) > 2 and parts[1] not in LEARNER_MODULE_IDS:
        return (
            f"{what} {key!r} names learner module {parts[1]!r}, which no result holds (single-agent runs report "
            f"{' and '.join(LEARNER_MODULE_IDS)}){did_you_mean(parts[1], LEARNER_MODULE_IDS)}"
        )
    if key in RESULT_KEYS or key.startswith(RESULT_PREFIXES) or body.startswith(RESULT_PREFIXES):
        return None
    if custom_metrics and body.startswith("env_runners/"):
        return None
    hint = did_you_mean(key, RESULT_KEYS) or "; use e.g. training_iteration, env_runners/num_env_steps_sampled_lifetime"
    return (
        f"{what} {key!r} is never in a result, so it would never trigger{hint} "
        "(keys: a result.json under ~/ray_results; a/b = result['a']['b'])"
    )


_METRIC_WORDS = ("return", "reward", "loss", "episode_len", "alpha", "entropy")


def time_attr_error(attr: Any, per_iteration: dict) -> str | None:
    """ASHA's ``time_attr`` must grow with the run: not a count each result restarts, not a metric that goes up and
    down (a return: its rungs would be points in return, not in time)."""
    if attr in per_iteration:
        return (
            f"scheduler time_attr {attr} is a count of one iteration (each result restarts it), so ASHA's time never "
            f"passes its rungs; write time_attr: {per_iteration[attr]}"
        )
    if isinstance(attr, str) and any(word in attr.rsplit("/", 1)[-1] for word in _METRIC_WORDS):
        return (
            f"scheduler time_attr {attr} is a metric, not a time: ASHA's rungs (grace_period, max_t) are points on a "
            f"growing count; write time_attr: training_iteration (or env_runners/num_env_steps_sampled_lifetime, "
            f"time_total_s), and keep ranking on the return with metric: {attr}"
        )
    return None
