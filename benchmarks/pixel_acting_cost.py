"""Acting cost of pixel SMAC: agent steps/s of env runners (RSSM filter + actor on CPU) vs a bare render loop.

    .venv/bin/python benchmarks/pixel_acting_cost.py --steps 400

Rows: a bare dm_control loop (DMCEnv pixels, random actions) at default and fast render; one remote
SingleAgentEnvRunner with the paper-size inference module (encoder + RSSM + actor), default and fast render;
and 1 vs 2 env runners (fast render). Action repeat 2, so frames/s = 2 x agent steps/s.
Writes pixel_acting_cost.{csv,md} under ``--out``.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import smac_rllib  # noqa: E402,F401 -- sets MUJOCO_GL before anything imports dm_control (smac_rllib.headless_gl)

os.environ.setdefault("RAY_AUTH_MODE", "disabled")

from runner_rate import sampled_steps_per_s  # noqa: E402  (benchmarks/ is the script's directory)
from report import write_csv  # noqa: E402

ENV = "dmc/cartpole-swingup"


def bare_loop(steps: int, fast_render: bool) -> float:
    import numpy as np

    from smac_rllib.envs import make_env

    env = make_env(ENV, {"from_pixels": True, "fast_render": fast_render, "seed": 0})
    rng = np.random.default_rng(0)
    env.reset()
    t0 = time.perf_counter()
    for _ in range(steps):
        _, _, term, trunc, _ = env.step(rng.uniform(-1, 1, env.action_space.shape).astype(np.float32))
        if term or trunc:
            env.reset()
    rate = steps / (time.perf_counter() - t0)
    env.close()
    return rate


def runner_rate(steps: int, fast_render: bool, num_runners: int, preset: str) -> float:
    from smac_rllib.algorithms import SMACConfig

    config = (
        SMACConfig()
        .environment(ENV, env_config={"from_pixels": True, "fast_render": fast_render, "seed": 0})
        .env_runners(num_env_runners=num_runners, num_cpus_per_env_runner=1)
        .training(world_model_preset=preset, num_steps_sampled_before_learning_starts=10**9)
    )
    return sampled_steps_per_s(config, steps, warmup_steps=20)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=400, help="agent steps per measurement")
    parser.add_argument("--preset", default="paper")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = parser.parse_args()
    import ray
    import torch

    torch.set_num_threads(1)

    smac_rllib.register()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    rows = []
    for fast in (False, True):
        rows.append(
            dict(
                what="bare dm_control render loop",
                render="fast" if fast else "default",
                env_runners=0,
                agent_steps_per_s=round(bare_loop(args.steps, fast), 1),
            )
        )
    for fast in (False, True):
        rows.append(
            dict(
                what=f"env runner, {args.preset} RSSM + actor",
                render="fast" if fast else "default",
                env_runners=1,
                agent_steps_per_s=round(runner_rate(args.steps, fast, 1, args.preset), 1),
            )
        )
    rows.append(
        dict(
            what=f"env runners, {args.preset} RSSM + actor",
            render="fast",
            env_runners=2,
            agent_steps_per_s=round(runner_rate(args.steps, True, 2, args.preset), 1),
        )
    )
    ray.shutdown()
    args.out.mkdir(parents=True, exist_ok=True)
    write_csv(rows, args.out / "pixel_acting_cost.csv")
    lines = [
        "# Pixel acting cost (64x64, action repeat 2, cartpole-swingup)",
        "",
        f"Command: `.venv/bin/python benchmarks/pixel_acting_cost.py --steps {args.steps} --preset {args.preset}`",
        "Machine: 2-core CPU, Mesa EGL software rendering, torch 1 thread per process.",
        "",
        "| what | render | env runners | agent steps/s | frames/s |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['what']} | {r['render']} | {r['env_runners']} | {r['agent_steps_per_s']} | "
        f"{round(2 * r['agent_steps_per_s'], 1)} |"
        for r in rows
    ]
    (args.out / "pixel_acting_cost.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
