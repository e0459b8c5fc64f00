"""What ``rllib train`` says about its experiments before Ray starts: ``--dry-run``'s description (trials, resources
per trial, stop, the evaluation schedule) and the warnings (ASHA on a single trial, ASHA rungs at iterations that do not
evaluate, a first evaluation hundreds of thousands of env steps away, the algorithm's own)."""

from __future__ import annotations

from smac_rllib.algorithms import config_questions
from smac_rllib.cli.errors import warn
from smac_rllib.cli.experiment_spec import ExperimentSpec
from smac_rllib.cli.horizon import steps_per_iteration
from smac_rllib.cli.resources import trial_request
from smac_rllib.cli.results import EVAL_RETURN, action_repeat


def print_dry_run(specs: list[ExperimentSpec]) -> None:
    """``--dry-run``: per experiment its algorithm, env, trials, resources per trial, stop and evaluation."""
    for spec in specs:
        need = trial_request(spec)
        print(
            f"{spec.name}: {spec.run} on {describe_env(spec.param_space['env'])}, {spec.num_trials} trial(s), "
            f"{need['CPU']:g} CPU + {need['GPU']:g} GPU per trial, stop {spec.stop}"
        )
        if spec.configs:
            print(f"  {describe_evaluation(spec.configs[0])}")


def describe_env(env) -> str:
    return " | ".join(env["grid_search"]) if isinstance(env, dict) and "grid_search" in env else str(env)


def describe_evaluation(config) -> str:
    """``evaluation every 5 iterations (~5,000 agent steps = 10,000 frames): 5 episodes, deterministic policy, ...``"""
    interval = config.evaluation_interval
    if not interval:
        return "no evaluation (add evaluation_interval, evaluation_duration, evaluation_config: {explore: false})"
    eval_config = config.get_evaluation_config_object()
    steps = interval * config.min_sample_timesteps_per_iteration
    repeat = action_repeat({"env_config": config.env_config if isinstance(config.env_config, dict) else {}})
    every = f"~{steps:,} agent steps = {steps * repeat:,} frames" if repeat != 1 else f"~{steps:,} env steps"
    policy = "exploring policy" if eval_config.explore else "deterministic policy"
    runners = config.evaluation_num_env_runners
    where = f"{runners} eval env runner(s)" if runners else "a local eval env runner in the trial process"
    return (
        f"evaluation every {interval} iteration(s) ({every}): {config.evaluation_duration} "
        f"{config.evaluation_duration_unit}, {policy}, on {where} -> {EVAL_RETURN}"
    )


def warn_asha_one_trial(spec: ExperimentSpec) -> None:
    """ASHA stops the worse trials of a sweep: on one trial it never acts (``tune_horizon.py`` checks its rungs)."""
    if (spec.scheduler or {}).get("type") == "ASHA" and spec.num_trials == 1:
        warn(
            f"{spec.name}: scheduler ASHA stops the worse trials of a sweep, and this experiment has one trial: ASHA "
            "never stops it (the run is a plain one); sweep values or seeds (grid_search), or drop the scheduler"
        )


FAR_EVALUATION_STEPS = 100_000


def warn_far_first_evaluation(spec: ExperimentSpec) -> None:
    """``evaluation_interval`` counts iterations: one of 1,000 (meant in env steps?) puts the first evaluation, and the
    first chance for a stop on an evaluation metric, 1,000 iterations away."""
    stops = [key for key in spec.stop if key.startswith("evaluation/")]
    config = spec.configs[0] if spec.configs and stops else None
    interval, steps = (config.evaluation_interval, steps_per_iteration(config)) if config else (None, None)
    if interval and steps and interval >= 100 and interval * steps >= FAR_EVALUATION_STEPS:
        warn(
            f"{spec.name}: evaluation_interval: {interval:,} counts iterations: the first evaluation, the first chance "
            f"for the stop on {stops[0]}, comes after ~{interval * steps:,} env steps; for an evaluation every "
            f"{interval:,} env steps write evaluation_interval: {max(1, interval // steps)}"
        )


def warn_algorithm(spec: ExperimentSpec) -> None:
    """The algorithm's own warnings about this experiment (``config_questions.warnings``), the first one only."""
    for config in spec.configs:
        messages = config_questions.warnings(config)
        if messages:
            warn(f"{spec.name}: {messages[0]}")
            return
