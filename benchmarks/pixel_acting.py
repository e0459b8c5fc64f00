"""Vectorized pixel acting: agent steps/s of one SMAC env runner with n envs vs a bare render loop of n envs.

    .venv/bin/python benchmarks/pixel_acting.py --envs 1 4 8 --steps 240 --repeats 5

Both sides run in this process, interleaved (bare n, SMAC n, for every n, ``--repeats`` rounds), so machine noise
hits them alike; the table reports medians of steps/s and the median of the per-round ratios SMAC / bare.

* bare: n ``DMCEnv`` pixel envs (fast render) stepped in a python loop with uniform random actions, what a
  gymnasium SyncVectorEnv does without its batching -- env physics + render only, no policy;
* bare, ``physics.render``: the same, but every frame rendered by dm_control's ``physics.render`` (a new Camera
  and MjvScene per frame: what ``DMCEnv`` did before it kept its camera), the reference the goal was set on;
* SMAC: a local ``SingleAgentEnvRunner`` (``num_envs_per_env_runner`` = n, SYNC vector env) with the pixel
  module (``--preset``, default paper: conv encoder + RSSM filter step + actor) sampling with exploration:
  env-to-module connectors, module forward, module-to-env connectors, episode bookkeeping.

``--profile N`` instead cProfiles one SMAC runner with N envs and prints the top functions.
Writes ``pixel_acting.{csv,md}`` under ``--out``.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from pathlib import Path

import smac_rllib  # noqa: E402,F401 -- sets MUJOCO_GL before anything imports dm_control (smac_rllib.headless_gl)

os.environ.setdefault("RAY_AUTH_MODE", "disabled")

from report import write_csv  # noqa: E402  (benchmarks/ is the script's directory)

ENV = "dmc/cartpole-swingup"
ENV_CONFIG = {"from_pixels": True, "fast_render": True, "seed": 0}


class BareLoop:
    """n pixel envs stepped in turn with random actions (env.step = physics x action repeat + one render)."""

    def __init__(self, num_envs: int, physics_render: bool = False):
        import numpy as np

        from smac_rllib.envs import make_env

        self.envs = [make_env(ENV, dict(ENV_CONFIG, seed=i)) for i in range(num_envs)]
        if physics_render:  # a Camera + MjvScene built per frame, as DMCEnv rendered before it kept one
            for env in self.envs:
                env._render = lambda size, env=env: env.physics.render(height=size, width=size, camera_id=env.camera_id)
        self.rng = np.random.default_rng(0)
        for env in self.envs:
            env.reset()

    def steps_per_s(self, steps: int) -> float:
        shape = self.envs[0].action_space.shape
        rounds = max(1, steps // len(self.envs))
        t0 = time.perf_counter()
        for _ in range(rounds):
            for env in self.envs:
                _, _, term, trunc, _ = env.step(self.rng.uniform(-1, 1, shape).astype("float32"))
                if term or trunc:
                    env.reset()
        return rounds * len(self.envs) / (time.perf_counter() - t0)


class SMACRunner:
    """A local SingleAgentEnvRunner (num_env_runners=0 style) with the SMAC pixel module and n envs."""

    def __init__(self, num_envs: int, preset: str, warmup_steps: int = 20):
        from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner

        from smac_rllib.algorithms import SMACConfig

        config = (
            SMACConfig()
            .environment(ENV, env_config=dict(ENV_CONFIG))
            .env_runners(num_env_runners=0, num_envs_per_env_runner=num_envs)
            .training(world_model_preset=preset)
        )
        self.runner = SingleAgentEnvRunner(config=config)
        self.runner.sample(num_timesteps=warmup_steps, explore=True)  # EGL contexts, torch kernels

    def steps_per_s(self, steps: int) -> float:
        t0 = time.perf_counter()
        episodes = self.runner.sample(num_timesteps=steps, explore=True)
        sampled = sum(len(e) for e in episodes)
        self.runner.get_metrics()  # drop the episodes' metrics so they do not pile up across rounds
        return sampled / (time.perf_counter() - t0)


def measure(envs: list[int], steps: int, repeats: int, preset: str) -> list[dict]:
    bare = {n: BareLoop(n) for n in envs}
    bare_pr = {n: BareLoop(n, physics_render=True) for n in envs}
    smac = {n: SMACRunner(n, preset) for n in envs}
    keys = ("bare", "bare_pr", "smac", "ratio", "ratio_pr")
    rates = {n: {k: [] for k in keys} for n in envs}
    for r in range(repeats):
        for n in envs:
            b, bp, s = bare[n].steps_per_s(steps), bare_pr[n].steps_per_s(steps), smac[n].steps_per_s(steps)
            for key, value in zip(keys, (b, bp, s, s / b, s / bp), strict=True):
                rates[n][key].append(value)
            print(
                f"round {r} envs {n}: bare {b:.1f} bare(physics.render) {bp:.1f} smac {s:.1f} ratio {s / b:.3f} "
                f"ratio vs physics.render {s / bp:.3f}",
                flush=True,
            )
    med = lambda xs, digits=1: round(statistics.median(xs), digits)  # noqa: E731
    return [
        dict(
            envs_per_runner=n,
            bare_steps_per_s=med(v["bare"]),
            smac_steps_per_s=med(v["smac"]),
            ratio=med(v["ratio"], 3),
            bare_physics_render_steps_per_s=med(v["bare_pr"]),
            ratio_vs_physics_render=med(v["ratio_pr"], 3),
        )
        for n, v in rates.items()
    ]


def profile(num_envs: int, steps: int, preset: str, top: int = 45) -> None:
    import cProfile
    import pstats

    runner = SMACRunner(num_envs, preset)
    prof = cProfile.Profile()
    prof.enable()
    rate = runner.steps_per_s(steps)
    prof.disable()
    print(f"envs {num_envs}: {rate:.1f} agent steps/s under cProfile")
    pstats.Stats(prof).sort_stats("tottime").print_stats(top)
    pstats.Stats(prof).sort_stats("cumulative").print_stats(top)


def write_report(rows: list[dict], args: argparse.Namespace) -> None:
    import torch

    args.out.mkdir(parents=True, exist_ok=True)
    write_csv(rows, args.out / "pixel_acting.csv")
    envs = " ".join(map(str, args.envs))
    lines = [
        "# Vectorized pixel acting: SMAC env runner vs bare render loop (cartpole-swingup, 64x64, action repeat 2)",
        "",
        f"Command: `.venv/bin/python benchmarks/pixel_acting.py --envs {envs} --steps {args.steps} "
        f"--repeats {args.repeats} --preset {args.preset}`",
        f"Machine: {os.cpu_count()}-core CPU ({platform.processor() or platform.machine()}), no GPU, Mesa EGL software "
        f"rendering, fast render (no shadows, no MSAA); torch {torch.__version__}, {torch.get_num_threads()} thread.",
        f"Settings: one local SingleAgentEnvRunner (SYNC vector env, explore=True, {args.preset} RSSM + actor) vs n "
        f"DMCEnv stepped in a loop with random actions; {args.steps} agent steps per measurement, interleaved, "
        f"{args.repeats} rounds; medians (ratio = median of per-round SMAC / bare). Bare (physics.render): every frame "
        "through dm_control's `physics.render` (a new Camera + MjvScene per frame, as DMCEnv did before it kept its "
        "camera; same pixels).",
        "",
        "| envs per runner | bare steps/s | SMAC steps/s | ratio | bare (physics.render) steps/s | ratio vs it |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['envs_per_runner']} | {r['bare_steps_per_s']} | {r['smac_steps_per_s']} | {r['ratio']} | "
        f"{r['bare_physics_render_steps_per_s']} | {r['ratio_vs_physics_render']} |"
        for r in rows
    ]
    (args.out / "pixel_acting.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--envs", type=int, nargs="+", default=[1, 4, 8], help="envs per runner")
    parser.add_argument("--steps", type=int, default=240, help="agent steps per measurement")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--preset", default="paper")
    parser.add_argument("--profile", type=int, default=0, help="cProfile one runner with this many envs instead")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)  # one thread per runner (docs/design.md §3); the module sets it too

    smac_rllib.register()
    if args.profile:
        profile(args.profile, args.steps, args.preset)
        return
    write_report(measure(args.envs, args.steps, args.repeats, args.preset), args)


if __name__ == "__main__":
    main()
