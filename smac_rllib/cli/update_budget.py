"""What the run's gradient updates amount to, said before Ray starts (warnings: each file is runnable), and TD3's
``policy_delay`` against them (``check_actor_updates``: an actor that would hardly ever learn is refused).

* Many updates per env step on a CPU learner (REDQ/DroQ-style ratios, ``MANY_CPU_UPDATES_PER_ENV_STEP``): every
  iteration waits for its updates; said with the run's count.
* A state run whose updates would take more than ``LONG_CPU_HOURS`` on a CPU learner (the measured cost of one
  update, scaled with the particles K + 1 and the batch).
* A warm-up (``num_steps_sampled_before_learning_starts``, uniform random actions) longer than half of a real run
  (``REAL_RUN_ENV_STEPS`` or more): the policy learns on the rest only. It counts agent steps, while the reference
  code's ``start_steps`` and the paper's budgets count env frames (``action_repeat`` per agent step), so a warm-up
  copied from them is ``action_repeat`` times too long. Under the file's own stop only (``--stop`` shortens runs for a
  smoke test).

The counts are ``cli/horizon.py``'s (``env_steps_at_stop``, ``updates_at_stop``).
"""

from __future__ import annotations

from smac_rllib.cli.errors import UserError, warn
from smac_rllib.cli.errors import yaml_number as _num
from smac_rllib.cli.experiment_spec import ExperimentSpec
from smac_rllib.cli.horizon import env_steps_at_stop, updates_at_stop
from smac_rllib.cli.results import action_repeat
from smac_rllib.core.values import is_int, is_number

MANY_CPU_UPDATES_PER_ENV_STEP = 4  # REDQ/DroQ-style ratios (10-20) are GPU settings; the paper's is 1
STATE_S_PER_UPDATE = 0.05  # SMAC from states, K=16, batch 256, hidden 256, 1 thread (tuned_examples/smac_state.yaml)
LONG_CPU_HOURS = 100  # the tuned 1M-step state runs take ~14-27 h of updates on a CPU learner
REAL_RUN_ENV_STEPS = 10_000  # shorter runs are smoke tests, whose warm-up may well be most of them


FEW_ACTOR_UPDATES = 10


def check_actor_updates(spec: ExperimentSpec) -> None:
    """TD3 updates its actor and targets once per ``policy_delay`` critic updates: a delay of 10 or more that leaves
    the run fewer than ``FEW_ACTOR_UPDATES`` actor updates (a count meant in env steps?) trains a near-random actor."""
    for config in spec.configs:
        delay = getattr(config, "policy_delay", None)
        updates = updates_at_stop(spec.stop, config) if is_int(delay) and delay >= 10 else None
        if updates is not None and updates // delay < FEW_ACTOR_UPDATES:
            raise UserError(
                f"policy_delay={delay:,}: the run's ~{updates:,} critic updates update the actor (and the targets) "
                f"{updates // delay} time(s); TD3's delay is 2 critic updates per actor update: lower policy_delay, "
                "or raise the stop",
                spec.key_lines.get("policy_delay", spec.source),
            )


def warn_update_budget(spec: ExperimentSpec, own_stop: bool) -> None:
    """The module docstring's warnings, each at most once per experiment; ``own_stop``: the file's stop is the run's."""
    _warn_many_cpu_updates(spec)
    _warn_long_state_run(spec)
    if own_stop:
        _warn_warm_up_share(spec)


def _warn_many_cpu_updates(spec: ExperimentSpec) -> None:
    """A high update-to-data ratio on a CPU learner: every iteration waits for its updates, said once with the count."""
    for config in spec.configs:
        if not hasattr(config, "async_learning") or (config.num_gpus_per_learner or 0) > 0:
            continue
        ratio = config.resolved("updates_per_env_step")
        if not (is_number(ratio) and ratio > MANY_CPU_UPDATES_PER_ENV_STEP):
            continue
        updates, steps = updates_at_stop(spec.stop, config), env_steps_at_stop(spec.stop, config)
        total = f": ~{updates:,} updates for the run's {steps:,} env steps" if updates and steps else ""
        warn(
            f"{spec.name}: updates_per_env_step={_num(ratio)} on a CPU learner{total}; each iteration of "
            f"{config.min_sample_timesteps_per_iteration or 1:,} env steps waits for its updates (the live line shows "
            "done/planned updates and s/update); such ratios (REDQ's, DroQ's) suit a GPU learner "
            "(num_gpus_per_learner: 1)"
        )
        return


def _warn_long_state_run(spec: ExperimentSpec) -> None:
    """A state run whose updates, at the measured cost scaled with K + 1 and the batch, take days on a CPU learner."""
    for config in spec.configs:
        cost = getattr(config, "cost_particles", None)
        if cost is None or getattr(config, "is_pixels", True) or (config.num_gpus_per_learner or 0) > 0:
            continue
        updates, particles = updates_at_stop(spec.stop, config), cost() + 1
        batch = config.train_batch_size_per_learner or 256
        per_update = STATE_S_PER_UPDATE * particles / 17 * batch / 256
        hours = (updates or 0) * per_update / 3600
        if hours > LONG_CPU_HOURS:
            warn(
                f"{spec.name}: ~{updates:,} updates of K+1 = {particles} particles x {batch} transitions on a CPU "
                f"learner: ~{per_update:.2g} s each, ~{hours:,.0f} h to the stop (scaled from {STATE_S_PER_UPDATE} s "
                "at K=16, batch 256, measured on a 2-core CPU); a GPU learner (num_gpus_per_learner: 1), fewer "
                "num_particles or a shorter stop"
            )
            return


def _warn_warm_up_share(spec: ExperimentSpec) -> None:
    """Most of a real run spent in the uniform random warm-up; with an action repeat, the frames reading is named."""
    for config in spec.configs:
        if not hasattr(config, "async_learning"):
            continue
        steps, warm_up = (
            env_steps_at_stop(spec.stop, config),
            config.resolved("num_steps_sampled_before_learning_starts"),
        )
        if not steps or steps < REAL_RUN_ENV_STEPS or not is_number(warm_up) or not steps / 2 < warm_up < steps:
            continue
        repeat = action_repeat({"env_config": config.env_config or {}})
        frames = (
            f"; it counts agent steps, {warm_up * repeat:,} frames at action_repeat {repeat} (a warm-up of "
            f"{_num(warm_up)} frames is {_num(warm_up // repeat)} agent steps)"
            if repeat > 1
            else ""
        )
        warn(
            f"{spec.key_lines.get('num_steps_sampled_before_learning_starts', spec.name)}: "
            f"num_steps_sampled_before_learning_starts={_num(warm_up)} is {warm_up / steps:.0%} of the run's "
            f"{steps:,} env steps: the policy acts uniformly at random for them and learns on the last "
            f"{steps - warm_up:,} only{frames}"
        )
        return
