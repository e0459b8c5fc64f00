"""One experiment's settings measured against its stop and its task, before Ray starts.

The arithmetic (closed form, no env is built; what an episode allows is ``cli/episode_bounds.py``'s):

* ``steps_per_iteration(config)``: env (= agent) steps of one iteration of our off-policy loop. RLlib repeats
  ``training_step`` until ``min_sample_timesteps_per_iteration`` steps are sampled; each ``training_step`` samples
  one round, ``rollout_fragment_length x num_envs_per_env_runner`` per env runner (the synchronous loop: every
  runner at once; the asynchronous loop: one runner's request at a time). So an iteration is the first whole number
  of rounds at or above the minimum. Nominal: the warm-up's last round is cut to what it misses, and a runner's late
  request may land in the next iteration (both less than one round). None (unknown) for RLlib's own algorithms and
  where ``min_time_s_per_iteration`` makes iterations last a time instead.
* ``iterations_at_stop(stop, config)``: the last iteration the stop allows: ``training_iteration``, the env-step
  keys (``ceil(steps / steps_per_iteration)``) and episode counts (``episode_stop_steps``), the smallest of them;
  ``time_total_s`` and return thresholds only end a run earlier, so they are left out (None: nothing bounds it).
* ``env_steps_at_stop(stop, config)``: ``iterations_at_stop x steps_per_iteration``.
* ``updates_at_stop(stop, config)``: the gradient updates those steps grant, by the loop's own rule
  (``training/rate_limiter.py: SampleToInsertRatio.granted_updates``: ``updates_per_env_step`` per env step stored
  after ``num_steps_sampled_before_learning_starts``).
* ``episode_steps(env, env_config)``: agent steps of one episode (DMC: the time limit's control steps / action_repeat,
  rounded up; gymnasium: ``env_config.max_episode_steps`` or the registered one).
* ``episode_return_range(env, env_config)``: the lowest and highest episode return (DMC: rewards are in [0, 1] per
  control step and action_repeat sums them; gymnasium: ``GYM_STEP_REWARDS`` x the episode's steps where the reward
  is bounded, e.g. Pendulum-v1 <= 0; else unknown).

The rules (``check_horizon``: every grid point; the first contradiction is a one-line ``UserError``):

1. ``num_samples > 1`` with a fixed ``seed`` (or a seed grid): identical trials; use a seed grid, num_samples 1.
2. A return threshold in ``stop`` at or above the task's bound is (all but) never reached; nor is an episode length
   (``*episode_len_*``) above the task's episode (``episode_steps``). A return threshold at or below the lowest
   return (DMC: 0) is met by every episode: the run would stop at its first result.
3. The stop's env steps never pass the warm-up: no gradient update. A deliberate warm-up-only run says
   ``warm_up_only: true`` (experiment key); with it, a stop past the warm-up is refused instead.
4. ``evaluation_interval`` above the stop's iterations: no evaluation.
5. ``evaluation_duration`` in timesteps that completes no episode on any eval env (no return is reported), or an
   evaluation of more than ``EVALUATION_FACTOR`` times the env steps trained between two evaluations: an evaluation
   step costs a training step without its updates, so it takes longer than the training between evaluations unless
   one env step's updates cost ~10 env steps (the tuned examples evaluate at most 1x what they train).
6. The ASHA scheduler against the stop, and 7. the checkpoints against the stop and the evaluations:
   ``tune_horizon.py``.
8. One update's batch (``train_batch_size_per_learner`` transitions; pixels: B x T sequence steps) above all the
   env steps the stop lets the run collect: every update replays the whole run's data several times over.
9. A stop on a loss: Tune stops at result >= value, so it ends the run at once instead of when the loss falls.
10. One sample request (``rollout_fragment_length`` x envs per runner) or one iteration's minimum
    (``min_sample_timesteps_per_iteration``) above the stop's env steps: the first iteration samples past the stop;
    a request over ``LONG_REQUEST`` env steps and 10x the iteration's minimum (a fragment meant as an episode).
11. ``min_time_s_per_iteration`` of a minute or more on our loop (its iterations end on env steps).
12. ``target_network_update_freq`` past the env steps the run updates in: the targets are never updated after the first;
    beside a soft ``tau`` (a DQN habit): the targets move less than half way to the critics over the whole run.
"""

from __future__ import annotations

import json
import math

from smac_rllib.algorithms import config_questions
from smac_rllib.cli.errors import UserError, warn
from smac_rllib.cli.errors import yaml_number as _num  # short: it sits inside many messages
from smac_rllib.cli.experiment_spec import ExperimentSpec
from smac_rllib.cli import tune_horizon
from smac_rllib.cli.experiment_parts import COUNTING_STOP_KEYS
from smac_rllib.cli.episode_bounds import EPISODE_COUNT_KEYS, check_episode_stops, episode_steps, episode_stop_steps
from smac_rllib.cli.results import ENV_STEP_KEYS
from smac_rllib.core.values import is_int, is_number
from smac_rllib.training.rate_limiter import SampleToInsertRatio

MAX_ITERATION_S = 60  # rule 11: a longer minimum per iteration is a setting written for another
LONG_REQUEST = 1000  # rule 10: env steps of one sample request above which it must be near an iteration's minimum
EVALUATION_FACTOR = 10  # rule 5: evaluation env steps per evaluation <= 10 x the env steps trained in between


# --------------------------------------------------------------------------------------------- arithmetic


def steps_per_iteration(config) -> int | None:
    """Env steps of one iteration of our off-policy loop (module docstring); None when not known."""
    if not (callable(getattr(config, "resolved", None)) and hasattr(config, "async_learning")):
        return None  # RLlib's own algorithms count their iterations their own way
    if config.min_time_s_per_iteration:
        return None
    request = config.get_rollout_fragment_length() * config.num_envs_per_env_runner
    round_steps = request * (1 if config.async_learning else max(1, config.num_env_runners or 0))
    minimum = max(int(config.min_sample_timesteps_per_iteration or 0), 1)
    return -(-minimum // round_steps) * round_steps


def iterations_at_stop(stop: dict, config) -> int | None:
    """The last iteration the stop allows (a stop fires at the first result at or above its value)."""
    candidates = []
    if "training_iteration" in stop:
        candidates.append(math.ceil(stop["training_iteration"]))
    steps = steps_per_iteration(config)
    if steps:
        candidates += [math.ceil(stop[key] / steps) for key in ENV_STEP_KEYS if key in stop]
        if most := episode_stop_steps(stop, config):
            candidates.append(math.ceil(most / steps))
    return max(1, min(candidates)) if candidates else None


def env_steps_at_stop(stop: dict, config) -> int | None:
    iterations, steps = iterations_at_stop(stop, config), steps_per_iteration(config)
    return iterations * steps if iterations and steps else None


def update_rule(config) -> SampleToInsertRatio:
    return SampleToInsertRatio(
        updates_per_env_step=config.resolved("updates_per_env_step"),
        learning_starts=config.resolved("num_steps_sampled_before_learning_starts"),
        max_lead_env_steps=1,
    )


def updates_at_stop(stop: dict, config) -> int | None:
    steps = env_steps_at_stop(stop, config)
    return None if steps is None else update_rule(config).granted_updates(steps)


# --------------------------------------------------------------------------------------------- the rules


def check_horizon(spec: ExperimentSpec) -> None:
    """Every rule of the module docstring for every grid point of ``spec``; the first contradiction raises."""
    check_seeds(spec)
    _check_falling_stops(spec)
    tune_horizon.check_scheduler_trials(spec)
    for config in spec.configs:
        _check_config(spec, config)
    _warn_dropped_stop(spec)  # the warnings once nothing is refused
    _warn_uncapped_stop(spec)


def _warn_dropped_stop(spec: ExperimentSpec) -> None:
    """``--stop`` replaces the file's stop: one warning when a criterion it drops would have ended the run sooner (a
    cap meant to be added would lengthen the run); a shorter ``--stop`` (the usual smoke test) says nothing."""
    if not spec.dropped_stop or not spec.configs:
        return
    sooner, later = (iterations_at_stop(stop, spec.configs[0]) for stop in (spec.dropped_stop, spec.stop))
    if sooner is None or (later is not None and later <= sooner):
        return
    both = json.dumps({**spec.dropped_stop, **spec.stop})
    warn(
        f"{spec.name}: --stop replaces the file's stop, so {json.dumps(spec.dropped_stop)} (iteration {sooner}) no "
        f"longer ends the run, only {json.dumps(spec.stop)} does; to add a criterion to the file's, pass both: "
        f"--stop '{both}'"
    )


def _warn_uncapped_stop(spec: ExperimentSpec) -> None:
    """A stop of thresholds only (a return to reach): if it is never reached the run never ends; said once. An episode
    count caps the run where every episode has a time limit."""
    if any(key in COUNTING_STOP_KEYS for key in spec.stop):
        return
    bounded = spec.configs and all(episode_steps(c.env, c.env_config) for c in spec.configs)
    if bounded and any(key in EPISODE_COUNT_KEYS for key in spec.stop):
        return
    named = ", ".join(f"{k}: {_num(v)}" for k, v in spec.stop.items())
    warn(
        f"{spec.name}: the stop ({named}) has no cap in iterations, env steps or time: if it is never reached the run "
        "never ends; add one beside it, e.g. training_iteration: 1000 (the first criterion met ends the run)"
    )


def check_seeds(spec: ExperimentSpec) -> None:
    seed, n = spec.param_space.get("seed"), spec.num_samples
    if n <= 1 or seed is None:
        return
    where = spec.key_lines.get("seed", spec.source)
    if isinstance(seed, dict) and "grid_search" in seed:
        seeds, more = list(seed["grid_search"]), list(range(len(seed["grid_search"]) * n))
        raise UserError(
            f"num_samples: {n} repeats each seed of seed: {{grid_search: {seeds}}}: {n} identical trials per seed "
            f"(an interval over seeds drawn from repeats); write seed: {{grid_search: {more}}} with num_samples: 1",
            where,
        )
    raise UserError(
        f"num_samples: {n} with seed: {seed} runs {n} identical trials (a '95% interval over seeds' over one seed); "
        f"write seed: {{grid_search: {list(range(n))}}} with num_samples: 1, or drop seed",
        where,
    )


def _check_config(spec: ExperimentSpec, config) -> None:
    stop = spec.stop
    check_episode_stops(spec, config, env_steps_at_stop(stop, config))
    iterations, steps = iterations_at_stop(stop, config), steps_per_iteration(config)
    at_stop = _describe_stop(stop, iterations, steps)
    if steps:
        _check_fragment(spec, config)
    _check_iteration_time(spec, config, iterations)
    if steps and iterations:
        _check_warm_up(spec, config, iterations, steps, at_stop)
        _check_batch(spec, config, iterations * steps, at_stop)
        _check_target_updates(spec, config, iterations * steps, at_stop)
    if iterations:
        _check_evaluation_cadence(spec, config, iterations, steps, at_stop)
        tune_horizon.check_checkpoints(spec, config, iterations, at_stop)
    if steps:
        _check_evaluation_length(spec, config, steps)
    tune_horizon.check_scheduler(spec, config, iterations, steps)


def _check_fragment(spec: ExperimentSpec, config) -> None:
    """Rule 10: a sample request, or an iteration's minimum of env steps, longer than the whole run the stop allows."""
    stops = {key: spec.stop[key] for key in ENV_STEP_KEYS if key in spec.stop}
    fragment, envs = config.get_rollout_fragment_length(), config.num_envs_per_env_runner
    minimum = int(config.min_sample_timesteps_per_iteration or 0)
    if not stops or max(fragment * envs, minimum) <= min(stops.values()):
        _check_request_size(spec, fragment, envs, minimum)
        return
    key, at = min(stops.items(), key=lambda item: item[1])
    setting, fix = "min_sample_timesteps_per_iteration", f"lower it to <= {int(at):,}"
    what = f"{setting}: {minimum:,} env steps per iteration"
    if fragment * envs > at:
        setting, fix = "rollout_fragment_length", f"lower rollout_fragment_length to <= {int(at) // envs:,}"
        what = f"{setting}: {fragment:,} x {envs} env(s) per runner = {fragment * envs:,} env steps per sample request"
    raise UserError(
        f"{what}, past the stop ({key}: {_num(at)}): the first iteration samples "
        f"{max(fragment * envs, minimum) / at:.3g}x the run; {fix} or raise the stop",
        spec.key_lines.get(setting, spec.source),
    )


def _check_request_size(spec: ExperimentSpec, fragment: int, envs: int, minimum: int) -> None:
    """Rule 10's second half: a sample request far longer than an iteration's minimum."""
    request = fragment * envs
    if request > LONG_REQUEST and request >= 10 * max(minimum, 1):  # a fragment meant as an episode, or in frames
        raise UserError(
            f"rollout_fragment_length: {fragment:,} x {envs} env(s) per runner = {request:,} env steps per sample "
            f"request, {request / max(minimum, 1):.0f}x min_sample_timesteps_per_iteration ({minimum:,}): every "
            "iteration samples at least that much, and shows its progress only at the end; it is a runner's steps per "
            "request, not an episode's: lower it (the tuned examples: 50-250)",
            spec.key_lines.get("rollout_fragment_length", spec.source),
        )


def _check_iteration_time(spec: ExperimentSpec, config, iterations: int | None) -> None:
    """Rule 11: ``min_time_s_per_iteration`` of minutes on a loop whose iterations end on env steps (written for
    ``min_sample_timesteps_per_iteration``, whose name it shares)."""
    seconds = getattr(config, "min_time_s_per_iteration", None)
    if not (hasattr(config, "async_learning") and is_number(seconds) and seconds >= MAX_ITERATION_S):
        return
    total = f" (the stop's {iterations} iterations: >= {seconds * iterations / 60:,.0f} min)" if iterations else ""
    raise UserError(
        f"min_time_s_per_iteration={_num(seconds)} makes every iteration last at least {_num(seconds)} seconds, "
        f"whatever it samples{total}; the env steps of an iteration are min_sample_timesteps_per_iteration: lower "
        f"min_time_s_per_iteration to < {MAX_ITERATION_S} (0: no minimum) or set that one",
        spec.key_lines.get("min_time_s_per_iteration", spec.source),
    )


def _check_target_updates(spec: ExperimentSpec, config, total: int, at_stop: str) -> None:
    """Rule 12: ``target_network_update_freq`` (env steps between target updates) past the env steps the run updates
    in: the targets are set at the first update and never again."""
    every = getattr(config, "target_network_update_freq", 0) or 0
    warm_up = update_rule(config).learning_starts if hasattr(config, "async_learning") else 0
    if not (is_int(every) and every > 0 and hasattr(config, "async_learning")):
        return
    tau, count = getattr(config, "tau", 1.0), (total - warm_up) // every
    moved = 1 - (1 - tau) ** count if is_number(tau) and 0 < tau < 1 else 1.0
    if every > 1 and count >= 1 and moved < 0.5:
        raise UserError(
            f"target_network_update_freq={every:,} env steps with tau={_num(tau)}: the run's {count:,} target updates "
            f"each move the target critics {_num(tau)} of the way (a Polyak step, not a copy), {moved:.1%} in all; "
            "write target_network_update_freq: 0 (a Polyak step at every update, the paper's) or tau: 1.0 (a hard "
            f"copy every {every:,} env steps, DQN's)",
            spec.key_lines.get("target_network_update_freq", spec.source),
        )
    if every < total - warm_up:
        return
    raise UserError(
        f"target_network_update_freq={every:,} env steps: {at_stop}, and updates start after the warm-up's "
        f"{warm_up:,}: the target critics are set at the first update and never again; lower "
        "target_network_update_freq (0: Polyak averaging at every update, by tau) or raise the stop",
        spec.key_lines.get("target_network_update_freq", spec.source),
    )


def _describe_stop(stop: dict, iterations: int | None, steps: int | None) -> str:
    """``the stop (env_runners/num_env_steps_sampled_lifetime: 5000) ends at iteration 5 x 1,000 = 5,000 env steps``"""
    counting = ("training_iteration", *ENV_STEP_KEYS, *EPISODE_COUNT_KEYS)
    named = ", ".join(f"{k}: {_num(v)}" for k, v in stop.items() if k in counting)
    if iterations is None:
        return f"the stop ({named})"
    if steps is None:
        return f"the stop ({named}) ends at iteration {iterations}"
    return f"the stop ({named}) ends at iteration {iterations} x {steps:,} = {iterations * steps:,} env steps"


def _check_falling_stops(spec: ExperimentSpec) -> None:
    """Rule 9: a stop on a loss. Tune stops when a result is >= the stop value: a loss stop ends the run while the
    loss is still above it (at the first update), never when the loss falls to it."""
    for key, value in spec.stop.items():
        if "loss" in key.rsplit("/", 1)[-1]:
            raise UserError(
                f"stop criterion {key}={_num(value)}: Tune stops a run when a result is >= its stop value, so a loss "
                "stop ends the run while the loss is still above it, never when it falls to it; stop on "
                f"training_iteration or env steps, and keep the lowest-loss checkpoint with checkpoint_config "
                f"checkpoint_score_attribute: {key}, checkpoint_score_order: min",
                spec.source,
            )


def _check_batch(spec: ExperimentSpec, config, total: int, at_stop: str) -> None:
    """Rule 8: one update's batch larger than all the env steps the run collects."""
    batch, name = config_questions.replay_batch(config)
    if not batch or batch <= total:
        return
    key = "batch_size_B" if name.startswith("batch_size_B") else "train_batch_size_per_learner"
    raise UserError(
        f"one update replays {batch:,} env steps ({name}), more than the run ever collects: {at_stop}; every "
        f"update would draw each step ~{batch / total:.1f} times; lower the batch to <= {total:,} env steps or raise "
        f"the stop past {batch:,} env steps",
        spec.key_lines.get(key, spec.source),
    )


def _check_warm_up(spec: ExperimentSpec, config, iterations: int, steps: int, at_stop: str) -> None:
    rule = update_rule(config)
    updates = rule.granted_updates(iterations * steps)
    warm_up = rule.learning_starts
    where = spec.key_lines.get("num_steps_sampled_before_learning_starts", spec.source)
    if getattr(spec, "warm_up_only", False):
        if updates:
            raise UserError(
                f"warm_up_only: true, but {at_stop}, past num_steps_sampled_before_learning_starts={warm_up:,}: "
                f"{updates:,} gradient updates would run; lower the stop to {warm_up:,} env steps or drop warm_up_only",
                where,
            )
        return
    if updates:
        return
    after = 1  # env steps past the warm-up that grant the first update
    while not rule.granted_updates(warm_up + after):
        after += 1
    lower = iterations * steps - after
    fix = f"lower num_steps_sampled_before_learning_starts to <= {lower:,} or " if lower >= 0 else ""
    raise UserError(
        f"{at_stop}, never past num_steps_sampled_before_learning_starts={warm_up:,}: no gradient update would run; "
        f"{fix}raise the stop to {_stop_at(math.ceil((warm_up + after) / steps), steps)} (or set warm_up_only: true "
        "for a run without updates)",
        where,
    )


def _stop_at(iterations: int, steps: int | None) -> str:
    """``6 iterations (6,000 env steps)``: a stop in both units."""
    return f"{iterations} iterations" + (f" ({iterations * steps:,} env steps)" if steps else "")


def _check_evaluation_cadence(spec: ExperimentSpec, config, iterations: int, steps: int | None, at_stop: str) -> None:
    interval = config.evaluation_interval
    if interval and interval > iterations:
        raise UserError(
            f"evaluation_interval: {interval} is never reached: {at_stop}; no evaluation would run; lower "
            f"evaluation_interval to <= {iterations} or raise the stop to {_stop_at(interval, steps)}",
            spec.key_lines.get("evaluation_interval", spec.source),
        )


def _check_evaluation_length(spec: ExperimentSpec, config, steps: int) -> None:
    interval, duration = config.evaluation_interval, config.evaluation_duration
    if not interval or not is_int(duration):
        return  # no evaluation, or "auto"
    eval_config = config.get_evaluation_config_object()  # its env_config may set another time limit
    length = episode_steps(eval_config.env, eval_config.env_config)
    where = spec.key_lines.get("evaluation_duration", spec.source)
    unit = config.evaluation_duration_unit
    if unit == "timesteps":
        envs = max(1, eval_config.num_env_runners or 0) * max(1, eval_config.num_envs_per_env_runner or 1)
        if length and eval_config.evaluation_force_reset_envs_before_iteration and -(-duration // envs) < length:
            raise UserError(
                f"evaluation_duration: {duration:,} timesteps over {envs} eval env(s) never completes one "
                f"{length:,}-step episode of {config.env}: no evaluation return would be reported; use "
                f"evaluation_duration_unit: episodes or evaluation_duration >= {length * envs:,}",
                where,
            )
        evaluated = duration
    elif length:
        evaluated = duration * length
    else:
        return
    trained = interval * steps
    if evaluated > EVALUATION_FACTOR * trained:
        if unit == "timesteps":
            fix = f"lower evaluation_duration to <= {EVALUATION_FACTOR * trained:,} timesteps"
        elif length > EVALUATION_FACTOR * trained:  # one episode is already too long
            own = "env_config.max_episode_steps" if "max_episode_steps" in (config.env_config or {}) else "its limit"
            fix = f"one episode is {length:,} steps: shorten the episodes ({own})"
        else:
            fix = f"lower evaluation_duration to <= {EVALUATION_FACTOR * trained // length:,} episodes"
        raise UserError(
            f"evaluation_duration: {duration:,} {unit} = {evaluated:,} env steps every {interval} iteration(s) is "
            f"more than {EVALUATION_FACTOR}x the {trained:,} env steps trained in between (evaluating would take "
            f"longer than training); {fix} or raise evaluation_interval to >= "
            f"{-(-evaluated // (EVALUATION_FACTOR * steps))}",
            where,
        )
