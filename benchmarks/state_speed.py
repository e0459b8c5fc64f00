"""Speed, state-based: learner updates/s for SMAC (K = 0, 8, 32) and the SAC baseline at the same batch, in one
process and interleaved (ratios are what to read on a noisy machine); replay sample + update per second with
RLlib's episode replay vs our TransitionReplayBuffer; and env steps/s with 1 vs 2 env runners.

    .venv/bin/python benchmarks/state_speed.py --updates 30

Writes state_speed.{csv,md} under ``--out``.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")

from runner_rate import sampled_steps_per_s  # noqa: E402  (benchmarks/ is the script's directory)
from report import write_csv  # noqa: E402
ENV = "dmc/cartpole-swingup"


def learners(batch: int):
    import gymnasium as gym
    import numpy as np
    from ray.rllib.core import DEFAULT_MODULE_ID

    from smac_rllib.algorithms import SACBaselineConfig, SMACConfig

    obs, act = gym.spaces.Box(-np.inf, np.inf, (5,), np.float32), gym.spaces.Box(-1, 1, (1,), np.float32)
    spaces = {"__env__": (obs, act), DEFAULT_MODULE_ID: (obs, act)}
    configs = {f"SMAC K={k}": SMACConfig().training(num_particles=k) for k in (0, 8, 32)}
    configs["SAC baseline (width 400)"] = SACBaselineConfig()
    return {name: c.environment(observation_space=obs, action_space=act).training(train_batch_size_per_learner=batch)
            .build_learner(spaces=spaces) for name, c in configs.items()}


def transitions_batch(batch: int):
    import numpy as np
    from ray.rllib.core import DEFAULT_MODULE_ID
    from ray.rllib.policy.sample_batch import MultiAgentBatch, SampleBatch

    rng = np.random.default_rng(0)
    data = {"obs": rng.normal(size=(batch, 5)).astype(np.float32), "new_obs": rng.normal(size=(batch, 5)).astype(np.float32),
            "actions": rng.uniform(-1, 1, (batch, 1)).astype(np.float32), "rewards": rng.uniform(size=batch).astype(np.float32),
            "terminateds": np.zeros(batch, bool), "truncateds": np.zeros(batch, bool),
            "weights": np.ones(batch, np.float32), "n_step": np.ones(batch, np.int64)}
    return MultiAgentBatch({DEFAULT_MODULE_ID: SampleBatch(data)}, env_steps=batch)


def filled_replays(num_episodes: int = 20, length: int = 1000):
    """RLlib's EpisodeReplayBuffer and our TransitionReplayBuffer holding the same random cartpole-shaped episodes."""
    import numpy as np
    from ray.rllib.env.single_agent_episode import SingleAgentEpisode
    from ray.rllib.utils.replay_buffers.episode_replay_buffer import EpisodeReplayBuffer

    from smac_rllib.replay import TransitionReplayBuffer

    rng = np.random.default_rng(0)
    episodes = [SingleAgentEpisode(observations=list(rng.normal(size=(length + 1, 5)).astype(np.float32)),
                                   actions=list(rng.uniform(-1, 1, (length, 1)).astype(np.float32)),
                                   rewards=list(rng.uniform(size=length)), truncated=True, len_lookback_buffer=0).to_numpy()
                for _ in range(num_episodes)]
    episode_replay, transition_replay = EpisodeReplayBuffer(capacity=10**6), TransitionReplayBuffer(capacity=10**6, seed=0)
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
            episodes=episode_replay.sample(num_items=batch, n_step=1, gamma=0.99, sample_episodes=True), timesteps=ts),
        "TransitionReplayBuffer batch": lambda learner: learner.update(
            batch=SampleBatch(transition_replay.sample(batch)).as_multi_agent(), timesteps=ts),
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
        rows.append(dict(what=f"replay sample + update/s, batch {batch}", variant=f"{name}: {path}",
                         rate=round(updates / t, 2), ratio_to_sac=f"{episode_time / t:.2f}x the episode path"))
    return rows


def env_steps_per_s(num_runners: int, steps: int) -> float:
    from smac_rllib.algorithms import SMACConfig

    config = SMACConfig().environment(ENV).env_runners(num_env_runners=num_runners, num_cpus_per_env_runner=1)
    return sampled_steps_per_s(config, steps, warmup_steps=100)


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
    import smac_rllib

    smac_rllib.register()
    batch = transitions_batch(args.batch)
    ls = learners(args.batch)
    times = {name: 0.0 for name in ls}
    ts = {"num_env_steps_sampled_lifetime": 10**6}
    for rep in range(args.updates + 3):
        for name, learner in ls.items():  # interleaved: machine noise hits every variant alike
            t0 = time.perf_counter()
            learner.update(batch=batch, timesteps=ts)
            if rep >= 3:
                times[name] += time.perf_counter() - t0
    base = args.updates / times["SAC baseline (width 400)"]
    rows = [dict(what=f"learner updates/s, batch {args.batch}", variant=n, rate=round(args.updates / t, 2),
                 ratio_to_sac=round(args.updates / t / base, 3)) for n, t in times.items()]
    rows += sample_and_update_rates(ls, args.batch, args.updates)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    for n in (1, 2):
        rows.append(dict(what="env steps/s (sampling only)", variant=f"{n} env runner(s), state {ENV}",
                         rate=round(env_steps_per_s(n, args.env_steps), 1), ratio_to_sac=""))
    ray.shutdown()
    args.out.mkdir(parents=True, exist_ok=True)
    write_csv(rows, args.out / "state_speed.csv")
    lines = ["# State-based speed: SMAC vs the SAC baseline", "",
             f"Command: `.venv/bin/python benchmarks/state_speed.py --updates {args.updates} --batch {args.batch} --env-steps {args.env_steps}`",
             f"Machine: 2-core CPU, torch 1 thread, local learners, one process, variants interleaved; load average at start "
             f"{os.getloadavg()[0]:.1f}. SMAC: latent 16, width 256, mlmc; SAC: width 400.", "",
             "| measure | variant | rate | ratio (to SAC; replay rows: to the episode path) |", "|---|---|---|---|"]
    lines += [f"| {r['what']} | {r['variant']} | {r['rate']} | {r['ratio_to_sac']} |" for r in rows]
    (args.out / "state_speed.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
