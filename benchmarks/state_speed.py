"""Speed, state-based: learner updates/s for SMAC (K = 0, 8, 32) and the SAC baseline at the same batch, in one
process and interleaved (ratios are what to read on a noisy machine), beside a plain PyTorch loop with the same
modules and losses (the floor RLlib's learner is held to); replay sample + update per second with
RLlib's episode replay vs our TransitionReplayBuffer; and env steps/s with 1 vs 2 env runners.

    .venv/bin/python benchmarks/state_speed.py --updates 30

Writes state_speed.{csv,md} under ``--out``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

import smac_rllib  # noqa: E402,F401 -- sets MUJOCO_GL before anything imports dm_control (smac_rllib.headless_gl)

os.environ.setdefault("RAY_AUTH_MODE", "disabled")

from runner_rate import sampled_steps_per_s  # noqa: E402  (benchmarks/ is the script's directory)
from report import write_csv  # noqa: E402

ENV = "dmc/cartpole-swingup"


def _spaces():
    import gymnasium as gym
    import numpy as np
    from ray.rllib.core import DEFAULT_MODULE_ID

    obs, act = gym.spaces.Box(-np.inf, np.inf, (5,), np.float32), gym.spaces.Box(-1, 1, (1,), np.float32)
    return {"__env__": (obs, act), DEFAULT_MODULE_ID: (obs, act)}


def _smac_config(k: int, batch: int):
    from ray.rllib.core import DEFAULT_MODULE_ID

    from smac_rllib.algorithms import SMACConfig

    obs, act = _spaces()[DEFAULT_MODULE_ID]
    return (
        SMACConfig()
        .training(num_particles=k, train_batch_size_per_learner=batch)
        .environment(observation_space=obs, action_space=act)
    )


def learners(batch: int):
    from ray.rllib.core import DEFAULT_MODULE_ID

    from smac_rllib.algorithms import SACBaselineConfig

    obs, act = _spaces()[DEFAULT_MODULE_ID]
    configs = {f"SMAC K={k}": _smac_config(k, batch) for k in (0, 8, 32)}
    configs["SAC baseline (width 400)"] = (
        SACBaselineConfig()
        .environment(observation_space=obs, action_space=act)
        .training(train_batch_size_per_learner=batch)
    )
    return {name: c.build_learner(spaces=_spaces()) for name, c in configs.items()}


def plain_loops(batch: int) -> dict:
    """``PlainLoop`` for K = 0, 8, 32, with torch's default Adam and with the fused one."""
    return {
        f"SMAC K={k}, plain loop{', fused Adam' if fused else ''}": PlainLoop(_smac_config(k, batch), _spaces(), fused)
        for k in (0, 8, 32)
        for fused in (False, True)
    }


class PlainLoop:
    """SMAC's update as a plain PyTorch loop writes it: ``smac_rllib/objectives/state_update.py: StateUpdate.step`` (the
    reference the RLlib learner is held equal to), with torch's default Adam or the ``fused`` one; the batch arrives as
    numpy, as from a replay."""

    def __init__(self, config, spaces, fused: bool):
        import torch
        from ray.rllib.core import DEFAULT_MODULE_ID

        from smac_rllib.objectives.state_update import StateUpdate

        obs_space, act_space = spaces[DEFAULT_MODULE_ID]
        self.module = config.get_multi_rl_module_spec(spaces=spaces).build()[DEFAULT_MODULE_ID]
        self.module.make_target_networks()  # as the learner does (TargetNetworkAPI)
        make = (
            (lambda ps, lr: torch.optim.Adam(ps, lr=lr, fused=True))
            if fused
            else (lambda ps, lr: torch.optim.Adam(ps, lr=lr))
        )
        self.reference = StateUpdate.from_config(self.module, config, act_space.shape[0], make_optimizer=make)

    def update(self, batch_np: dict) -> None:
        import torch

        self.reference.step({k: torch.as_tensor(v) for k, v in batch_np.items()})


def transitions_batch(batch: int):
    import numpy as np
    from ray.rllib.core import DEFAULT_MODULE_ID
    from ray.rllib.policy.sample_batch import MultiAgentBatch, SampleBatch

    rng = np.random.default_rng(0)
    data = {
        "obs": rng.normal(size=(batch, 5)).astype(np.float32),
        "new_obs": rng.normal(size=(batch, 5)).astype(np.float32),
        "actions": rng.uniform(-1, 1, (batch, 1)).astype(np.float32),
        "rewards": rng.uniform(size=batch).astype(np.float32),
        "terminateds": np.zeros(batch, bool),
        "truncateds": np.zeros(batch, bool),
        "weights": np.ones(batch, np.float32),
        "n_step": np.ones(batch, np.int64),
    }
    return MultiAgentBatch({DEFAULT_MODULE_ID: SampleBatch(data)}, env_steps=batch)


def filled_replays(num_episodes: int = 20, length: int = 1000):
    """RLlib's EpisodeReplayBuffer and our TransitionReplayBuffer holding the same random cartpole-shaped episodes."""
    import numpy as np
    from ray.rllib.env.single_agent_episode import SingleAgentEpisode
    from ray.rllib.utils.replay_buffers.episode_replay_buffer import EpisodeReplayBuffer

    from smac_rllib.training.replay import TransitionReplayBuffer

    rng = np.random.default_rng(0)
    episodes = [
        SingleAgentEpisode(
            observations=list(rng.normal(size=(length + 1, 5)).astype(np.float32)),
            actions=list(rng.uniform(-1, 1, (length, 1)).astype(np.float32)),
            rewards=list(rng.uniform(size=length)),
            truncated=True,
            len_lookback_buffer=0,
        ).to_numpy()
        for _ in range(num_episodes)
    ]
    episode_replay, transition_replay = (
        EpisodeReplayBuffer(capacity=10**6),
        TransitionReplayBuffer(capacity=10**6, seed=0),
    )
    episode_replay.add(episodes)
    transition_replay.add(episodes)
    return episode_replay, transition_replay


def sample_and_update_rates(ls: dict, batch: int, updates: int) -> list[dict]:
    """The full learner step of the off-policy loop (replay sample + update), RLlib's replay path vs ours."""
    from ray.rllib.policy.sample_batch import SampleBatch

    episode_replay, transition_replay = filled_replays()
    ts = {"num_env_steps_sampled_lifetime": 10**6}
    paths = {
        "RLlib episode replay + learner connector": lambda learner: learner.update(
            episodes=episode_replay.sample(num_items=batch, n_step=1, gamma=0.99, sample_episodes=True), timesteps=ts
        ),
        "TransitionReplayBuffer batch": lambda learner: learner.update(
            batch=SampleBatch(transition_replay.sample(batch)).as_multi_agent(), timesteps=ts
        ),
    }
    chosen = {n: ls[n] for n in ("SMAC K=8", "SAC baseline (width 400)")}
    times = {(n, p): 0.0 for n in chosen for p in paths}
    for rep in range(updates + 3):
        for (name, path), _ in times.items():
            t0 = time.perf_counter()
            paths[path](chosen[name])
            if rep >= 3:
                times[(name, path)] += time.perf_counter() - t0
    rows = []
    for (name, path), t in times.items():
        episode_time = times[(name, "RLlib episode replay + learner connector")]
        rows.append(
            dict(
                what=f"replay sample + update/s, batch {batch}",
                variant=f"{name}: {path}",
                rate=round(updates / t, 2),
                ratio_to_sac=f"{episode_time / t:.2f}x the episode path",
            )
        )
    return rows


def env_steps_per_s(num_runners: int, steps: int) -> float:
    from smac_rllib.algorithms import SMACConfig

    config = SMACConfig().environment(ENV).env_runners(num_env_runners=num_runners, num_cpus_per_env_runner=1)
    return sampled_steps_per_s(config, steps, warmup_steps=100)


def ratio_interval(
    ours_s: list[float], theirs_s: list[float], resamples: int = 2000, seed: int = 0
) -> tuple[float, float]:
    """95% bootstrap interval of median(theirs) / median(ours), the rate ratio of two variants, from their per-update
    seconds (resampled independently). It covers this run's per-update noise, not drift between runs."""
    import numpy as np

    rng = np.random.default_rng(seed)
    ours, theirs = np.asarray(ours_s), np.asarray(theirs_s)
    ratios = np.median(rng.choice(theirs, (resamples, len(theirs))), axis=1) / np.median(
        rng.choice(ours, (resamples, len(ours))), axis=1
    )
    return float(np.quantile(ratios, 0.025)), float(np.quantile(ratios, 0.975))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--updates", type=int, default=30, help="timed updates per learner (after 3 warm-up)")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--env-steps", type=int, default=2000)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = parser.parse_args()
    import ray
    import torch

    torch.set_num_threads(1)

    smac_rllib.register()
    batch = transitions_batch(args.batch)
    batch_np = dict(batch.policy_batches["default_policy"])
    ls = learners(args.batch)
    plain = plain_loops(args.batch)
    ts = {"num_env_steps_sampled_lifetime": 10**6}
    # As the training loop calls it: metrics reduced once per iteration (``_no_metrics_reduce``),
    # the reduce timed below.
    steps = {
        name: (lambda learner=learner: learner.update(batch=batch, timesteps=ts, _no_metrics_reduce=True))
        for name, learner in ls.items()
    }
    steps |= {name: (lambda loop=loop: loop.update(batch_np)) for name, loop in plain.items()}
    times = {name: [] for name in steps}
    for rep in range(args.updates + 3):
        for name, step in steps.items():  # interleaved: machine noise hits every variant alike
            t0 = time.perf_counter()
            step()
            if rep >= 3:
                times[name].append(time.perf_counter() - t0)
    for name, learner in ls.items():  # one iteration's reduce, charged to these --updates updates (the loop: ~1000)
        t0 = time.perf_counter()
        learner.metrics.reduce()
        times[name].append(time.perf_counter() - t0)
    # Per-update median (this 2-core machine has hiccups that a mean charges to whichever variant they hit), plus
    # the learners' once-per-iteration reduce spread over these --updates updates.
    reduce_s = {name: times[name].pop() for name in ls}
    rate = {name: 1.0 / (statistics.median(t) + reduce_s.get(name, 0.0) / args.updates) for name, t in times.items()}
    mean_rate = {name: len(t) / (sum(t) + reduce_s.get(name, 0.0)) for name, t in times.items()}
    base = rate["SAC baseline (width 400)"]
    rows = [
        dict(
            what=f"learner updates/s, batch {args.batch}", variant=n, rate=round(r, 2), ratio_to_sac=round(r / base, 3)
        )
        for n, r in rate.items()
        if "plain loop" not in n
    ]
    for k in (0, 8, 32):  # the RLlib learner against the plain loop, side by side (goal: ratio >= 1.0)
        ours = rate[f"SMAC K={k}"]
        for suffix in ("", ", fused Adam"):
            name = f"SMAC K={k}, plain loop{suffix}"
            low, high = ratio_interval(times[f"SMAC K={k}"], times[name])
            rows.append(
                dict(
                    what=f"plain PyTorch loop updates/s, batch {args.batch}",
                    variant=name,
                    rate=round(rate[name], 2),
                    ratio_to_sac=f"RLlib learner / plain loop = {ours / rate[name]:.3f} [{low:.3f}, {high:.3f}] "
                    f"(with means: {mean_rate[f'SMAC K={k}'] / mean_rate[name]:.3f})",
                )
            )
    rows += sample_and_update_rates(ls, args.batch, args.updates)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    for n in (1, 2):
        rows.append(
            dict(
                what="env steps/s (sampling only)",
                variant=f"{n} env runner(s), state {ENV}",
                rate=round(env_steps_per_s(n, args.env_steps), 1),
                ratio_to_sac="",
            )
        )
    ray.shutdown()
    args.out.mkdir(parents=True, exist_ok=True)
    write_csv(rows, args.out / "state_speed.csv")
    lines = [
        "# State-based speed: SMAC vs the SAC baseline",
        "",
        f"Command: `.venv/bin/python benchmarks/state_speed.py --updates {args.updates} --batch {args.batch} "
        f"--env-steps {args.env_steps}`",
        "Machine: 2-core CPU, torch 1 thread, local learners, one process, variants interleaved; load average at "
        f"start {os.getloadavg()[0]:.1f}. SMAC: latent 16, width 256, mlmc; SAC: width 400. Rates: 1 / (median seconds "
        f"per update + the learner's once-per-iteration metrics reduce / {args.updates}).",
        "",
        "| measure | variant | rate | ratio (to SAC; plain-loop rows: our learner's rate / the loop's [95% bootstrap "
        "interval of the ratio of median update times, this run's updates]; replay rows: to the episode path) |",
        "|---|---|---|---|",
    ]
    lines += [f"| {r['what']} | {r['variant']} | {r['rate']} | {r['ratio_to_sac']} |" for r in rows]
    (args.out / "state_speed.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
