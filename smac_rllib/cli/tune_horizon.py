"""Tune's side of the arithmetic against the stop (``horizon.py`` counts the iterations and env steps): rules 6 and 7
of its docstring, the ASHA scheduler and the checkpoints.

6. An ASHA ``max_t`` (default 100) below the stop, in the scheduler's ``time_attr`` units: every trial is cut at
   ``max_t``; a ``grace_period`` at or past the stop: ASHA never compares trials. A stop in other units than
   ``time_attr`` cannot be compared: ASHA's default ``max_t`` is refused there (an explicit one is the user's cut).
   ASHA over trials that differ only in their seeds: it stops the unluckiest seeds, and the mean over the survivors
   is biased upward; over an env grid: it ranks returns of different tasks together. ASHA's rungs on an
   ``evaluation/`` metric at iterations that do not evaluate. Rungs in seconds against a stop in iterations or env
   steps: compared once the run measured its pace (``seconds_rung_past_stop``).
7. ``checkpoint_frequency`` past the stop with ``checkpoint_at_end: false``: no checkpoint; checkpoints ranked on an
   ``evaluation/`` metric that all come before the first evaluation, or at iterations that do not evaluate (ranked
   by an earlier evaluation's score).
"""

from __future__ import annotations

import math

from smac_rllib.cli.episode_bounds import fixed_length
from smac_rllib.cli.errors import UserError
from smac_rllib.cli.errors import yaml_number as _num
from smac_rllib.cli.experiment_spec import ExperimentSpec
from smac_rllib.cli.grids import grid_variants
from smac_rllib.cli.results import ENV_STEP_KEYS, lookup
from smac_rllib.cli.same_trials import flatten, varying_paths

ASHA_DEFAULT_MAX_T = 100  # ray.tune.schedulers.AsyncHyperBandScheduler(max_t=100)


def check_scheduler_trials(spec: ExperimentSpec) -> None:
    """Rule 6, on the experiment's trials: ASHA over trials that differ only in their seeds (a seed grid, or samples
    of one configuration) stops the unluckiest seeds, and the mean over the seeds it kept is biased upward."""
    if (spec.scheduler or {}).get("type") != "ASHA" or spec.num_trials < 2:
        return
    variants = grid_variants(spec.param_space, limit=spec.num_trials)
    varying = set(varying_paths([flatten(v) for v in variants]))
    metric = str(spec.scheduler.get("metric", "return"))
    if "env" in varying and "return" in metric:  # one ranking over several tasks: their returns are on other scales
        envs = ", ".join(dict.fromkeys(str(v["env"]) for v in variants))
        raise UserError(
            f"scheduler ASHA ranks all trials on {metric} together, across the "
            f"envs of the grid ({envs}), whose returns are not on one scale: it would stop the harder task's trials "
            "for that alone; write one experiment per env (sharing a template: `<<: *defaults`), each with its own "
            "scheduler",
            spec.key_lines.get("env", spec.source),
        )
    if varying - {"seed"}:
        return  # settings to choose between
    seeds = "seed: {grid_search: ...}" if varying else f"num_samples: {spec.num_samples}"
    raise UserError(
        f"scheduler ASHA over trials that differ only in their seeds ({seeds}): ASHA would stop the unluckiest seeds "
        "early, and a mean over the seeds it kept is biased upward; drop the scheduler for a study over seeds, or "
        "sweep a setting (grid_search) for ASHA to choose between",
        spec.key_lines.get("seed", spec.source),
    )


def check_scheduler(spec: ExperimentSpec, config, iterations: int | None, steps: int | None) -> None:
    block = spec.scheduler or {}
    if block.get("type") != "ASHA":
        return
    attr = block.get("time_attr", "training_iteration")
    horizon, unit = _scheduler_horizon(spec.stop, attr, iterations, steps)
    if horizon is None:
        if "max_t" not in block:  # the stop is in other units: ASHA's 100 is a cut nobody chose
            stop = ", ".join(f"{k}: {_num(v)}" for k, v in spec.stop.items())
            units = [k for k in spec.stop if k in ("training_iteration", "time_total_s", *ENV_STEP_KEYS)]
            match = f" or time_attr: {units[0]} (the stop's units)" if units else ""
            raise UserError(
                f"scheduler time_attr: {attr}, and ASHA's default max_t={ASHA_DEFAULT_MAX_T} is in {attr} units: "
                f"every trial ends at {ASHA_DEFAULT_MAX_T} {unit}, whatever the stop ({stop}) allows; set an explicit "
                f"max_t in {attr} units{match}",
                spec.source,
            )
        return  # an explicit max_t in other units than the stop: the user's own cut
    max_t, grace = block.get("max_t", ASHA_DEFAULT_MAX_T), block.get("grace_period", 1)
    default = "" if "max_t" in block else ", ASHA's default"
    at, cut, first = _num(horizon), _num(max_t), _num(grace)
    if max_t < horizon:
        raise UserError(
            f"scheduler max_t={cut} ({attr}{default}) is before the stop at {at} {unit}: ASHA ends every trial at "
            f"{cut} and the run reads as finished; set scheduler max_t: {at} or lower the stop to {cut} {unit}",
            spec.source,
        )
    if grace >= horizon:
        raise UserError(
            f"scheduler grace_period={first} ({attr}) is not before the stop at {at} {unit}: ASHA would never compare "
            f"trials; lower grace_period to < {at} or drop the scheduler",
            spec.source,
        )
    _check_first_rung_after_warm_up(spec, config, block, grace, steps)
    if attr == "training_iteration":
        _check_rungs_between_evaluations(spec, config, block, min(max_t, horizon))


def _check_first_rung_after_warm_up(spec: ExperimentSpec, config, block: dict, grace: float, steps: int | None) -> None:
    """Rule 6: ASHA's first rung at or before the end of the uniform random warm-up cuts trials on the returns of
    random actions, before any gradient update. On an ``evaluation/`` metric the rung waits for the first evaluation
    (a result without the metric is passed over)."""
    if not hasattr(config, "async_learning") or len(spec.configs) * spec.num_samples < 2:
        return  # RLlib's own algorithms; one trial, which ASHA never stops (a warning of its own)
    warm_up, attr = config.resolved("num_steps_sampled_before_learning_starts"), block.get("time_attr")
    per_unit = 1 if attr in ENV_STEP_KEYS else (steps if attr in (None, "training_iteration") else None)
    first = grace * per_unit if per_unit else None
    if first and str(block.get("metric")).startswith("evaluation/") and config.evaluation_interval and steps:
        first = max(first, config.evaluation_interval * steps)
    if not (first and warm_up and first <= warm_up):
        return
    last = warm_up // per_unit  # the warm-up's end in attr units
    raise UserError(
        f"ASHA's first rung (scheduler grace_period={_num(grace)} {attr or 'training_iteration'}) compares trials at "
        f"{_num(first)} env steps, inside the {warm_up:,}-step uniform random warm-up "
        "(num_steps_sampled_before_learning_starts): ASHA would cut trials on the returns of random actions, before "
        f"any update; set grace_period above {last:,} (past the warm-up)",
        spec.source,
    )


def asha_rungs(block: dict) -> list[float]:
    """ASHA's milestones (one bracket, as ``ray.tune.schedulers.async_hyperband._Bracket``): grace_period x
    reduction_factor^k below max_t."""
    max_t, grace = block.get("max_t", ASHA_DEFAULT_MAX_T), block.get("grace_period", 1)
    rf = block.get("reduction_factor", 4)
    if not (grace > 0 and rf > 1 and max_t >= grace):
        return []
    count = int(math.log(max_t / grace) / math.log(rf) + 1)
    return [grace * rf**k for k in range(count)]


def _check_rungs_between_evaluations(spec: ExperimentSpec, config, block: dict, horizon: float) -> None:
    """Rule 6: ASHA comparing trials on an ``evaluation/`` metric at an iteration that does not evaluate (after the
    first evaluation) compares an earlier evaluation's score (RLlib repeats the last one), as checkpoints ranked
    there would (rule 7)."""
    metric, interval = block.get("metric"), config.evaluation_interval
    if not (isinstance(metric, str) and metric.startswith("evaluation/") and interval):
        return
    if spec.num_trials < 2:
        return  # nothing to compare (a warning says so)
    # before the first evaluation the metric is missing and ASHA waits for it (its rungs are ">="): not stale
    stale = [r for r in asha_rungs(block) if interval < r < horizon and r % interval]
    if stale:
        grace, factor = block.get("grace_period", 1), block.get("reduction_factor", 4)
        fix = f"set grace_period to a multiple of evaluation_interval (e.g. {interval * max(1, -(-grace // interval))})"
        if factor != int(factor):
            fix += " and reduction_factor to an integer"
        raise UserError(
            f"scheduler ASHA compares trials on {metric} at iteration(s) {', '.join(map(_num, stale[:4]))}, but "
            f"evaluation runs every {interval}: there it reads an earlier evaluation's score; {fix}",
            spec.source,
        )


def _scheduler_horizon(stop: dict, attr: str, iterations: int | None, steps: int | None) -> tuple[float | None, str]:
    """(the stop in the scheduler's ``time_attr`` units, their name); None where the stop is in other units."""
    if attr == "training_iteration":
        return iterations, "iterations"
    if attr in ENV_STEP_KEYS:
        counted = [stop[k] for k in ENV_STEP_KEYS if k in stop]  # single-agent: one count
        return (iterations * steps if iterations and steps else min(counted, default=None)), "env steps"
    return stop.get(attr), "seconds" if attr == "time_total_s" else attr


def check_checkpoints(spec: ExperimentSpec, config, iterations: int, at_stop: str) -> None:
    ckpt = spec.checkpoint_config
    score = ckpt.get("checkpoint_score_attribute")
    if isinstance(score, str) and score.endswith("episode_len_mean") and fixed_length(config.env):
        raise UserError(
            f"checkpoint_config ranks on {score}, which is the same for every checkpoint: {config.env}'s episodes "
            "always run to the time limit, so the ranking keeps an arbitrary one; rank on a return "
            "(checkpoint_score_attribute: evaluation/env_runners/episode_return_mean)",
            spec.source,
        )
    every, at_end = ckpt.get("checkpoint_frequency") or 0, ckpt.get("checkpoint_at_end")
    _check_ranked_between_evaluations(spec, config, iterations)
    if at_end or not every:
        return  # an end checkpoint; or none asked for (checkpoint_frequency: 0)
    if every > iterations:
        raise UserError(
            f"checkpoint_config.checkpoint_frequency={every} with checkpoint_at_end: false saves no checkpoint: "
            f"{at_stop}; lower checkpoint_frequency to <= {iterations} or set checkpoint_at_end: true",
            spec.source,
        )
    score, interval = ckpt.get("checkpoint_score_attribute"), config.evaluation_interval
    last = iterations // every * every
    if isinstance(score, str) and score.startswith("evaluation/") and interval and last < interval:
        raise UserError(
            f"checkpoint_config ranks on {score}, but every checkpoint (every {every} iteration(s) up to iteration "
            f"{last}) comes before the first evaluation at iteration {interval}; set checkpoint_at_end: true or "
            f"checkpoint_frequency: {interval}",
            spec.source,
        )


def _check_ranked_between_evaluations(spec: ExperimentSpec, config, iterations: int) -> None:
    """Rule 7: checkpoints ranked on an evaluation metric at iterations that do not evaluate carry an earlier
    evaluation's score (RLlib repeats the last one), so ``num_to_keep`` may keep the wrong ones."""
    ckpt = spec.checkpoint_config
    every, score, interval = ckpt.get("checkpoint_frequency") or 0, ckpt.get("checkpoint_score_attribute"), None
    if isinstance(score, str) and score.startswith("evaluation/"):
        interval = config.evaluation_interval
    end = ckpt.get("checkpoint_at_end") and interval and iterations > interval and iterations % interval
    if end and not (every and iterations % every == 0):  # the end checkpoint, of an iteration that did not evaluate
        raise UserError(
            f"checkpoint_config ranks on {score} and saves at the end (iteration {iterations}, the stop), which does "
            f"not evaluate (evaluation every {interval}): that checkpoint carries iteration "
            f"{iterations // interval * interval}'s score and may displace the one evaluated; make the stop a multiple "
            f"of {interval} iterations (e.g. training_iteration: {-(-iterations // interval) * interval}) or set "
            "evaluation_interval: 1",
            spec.source,
        )
    if not (every and interval and every % interval):
        return
    stale = [i for i in range(every, iterations + 1, every) if i % interval and i >= interval]
    if stale:
        raise UserError(
            f"checkpoint_config ranks on {score} every {every} iteration(s), but evaluation runs every {interval}: the "
            f"checkpoints of iteration(s) {', '.join(map(str, stale[:4]))} carry an earlier evaluation's score; set "
            f"checkpoint_frequency to a multiple of {interval}",
            spec.source,
        )


def seconds_rung_past_stop(block: dict | None, stop: dict, result: dict) -> str | None:
    """Rule 6 at run time: ASHA's first rung in seconds (``time_attr: time_total_s``) against a stop in iterations or
    env steps, projected at this trial's pace (from its second result; the first holds the start-up): a warning when
    the stop comes before half the rung, where ASHA would stop no trial."""
    iteration, seconds = result.get("training_iteration"), result.get("time_total_s")
    if (block or {}).get("time_attr") != "time_total_s" or "time_total_s" in stop or not iteration or iteration < 2:
        return None
    steps = lookup(result, "env_runners/num_env_steps_sampled_lifetime") or result.get("num_env_steps_sampled_lifetime")
    at_stop = [stop["training_iteration"]] if "training_iteration" in stop else []
    if isinstance(steps, (int, float)) and steps > 0:
        at_stop += [stop[k] * iteration / steps for k in ENV_STEP_KEYS if k in stop]
    grace = block.get("grace_period", 1)
    if not at_stop or not isinstance(seconds, (int, float)):
        return None
    projected = seconds / iteration * min(at_stop)
    if projected >= grace / 2:
        return None
    pace, criteria = seconds / iteration, ", ".join(f"{k}: {_num(v)}" for k, v in stop.items())
    return (
        f"scheduler ASHA's first rung is at grace_period={_num(grace)} s of time_total_s, but at {pace:.1f} s per "
        f"iteration the stop ({criteria}) comes at ~{projected:,.0f} s: ASHA will stop no trial; lower grace_period "
        f"below ~{projected / 2:,.0f} s, or set time_attr: training_iteration with grace_period and max_t in iterations"
    )


def time_stop_before_evaluation(stop: dict, result: dict) -> str | None:
    """Rule 4 at run time: a stop in seconds (``time_total_s``) that, at this trial's pace (from its second result),
    ends the run before its first evaluation (``evaluation_interval`` of the result's config): a warning."""
    iteration, seconds = result.get("training_iteration"), result.get("time_total_s")
    interval = (result.get("config") or {}).get("evaluation_interval")
    if "time_total_s" not in stop or not iteration or iteration < 2 or not isinstance(seconds, (int, float)):
        return None
    if not isinstance(interval, int) or interval <= iteration or seconds <= 0:
        return None
    pace = seconds / iteration
    at_stop = [stop["time_total_s"] / pace] + ([stop["training_iteration"]] if "training_iteration" in stop else [])
    projected = min(at_stop)
    if projected >= interval:
        return None
    return (
        f"evaluation_interval={interval}, but at {pace:.2f} s per iteration the stop (time_total_s: "
        f"{_num(stop['time_total_s'])}) comes at ~iteration {projected:,.0f}: no evaluation will run; lower "
        f"evaluation_interval below {max(1, math.floor(projected)):,}, or raise time_total_s past "
        f"~{math.ceil(interval * pace * 1.2):,}"
    )
