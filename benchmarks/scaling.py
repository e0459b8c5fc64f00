"""Rollout scaling on a local multi-node Ray cluster: env steps/s vs number of env runners (1, 2, 4).

    .venv/bin/python benchmarks/scaling.py                     # ~10 min on the 2-core machine

The cluster mirrors cluster/aws.yaml on one machine (``ray.cluster_utils.Cluster``): a head "learner" node
(the driver) and a "rollout" node with ``--num-cpus`` logical CPUs; env runners ask for ``rollout_node`` and
land there. Each env runner samples ``--state-steps`` / ``--pixel-steps`` agent steps with its policy
(SMAC's inference module), all runners in parallel, after a warm-up (EGL context, torch); the rate is
``runners x steps / wall time``. Tasks:

* states: ``dmc/cheetah-run`` low-dimensional observations, SMAC's latent policy (default sizes);
* pixels: ``dmc/cheetah-run`` 64x64 frames, action repeat 2, ``fast_render``, the ``small`` world model (RSSM
  filter + actor on every step);
* for the cluster projection (cluster/README.md): one runner with the paper-size world model and the default
  (paper-faithful) render, and the bare render cost per frame (no Ray, no policy) at both render settings.

Writes ``scaling.csv`` and ``scaling.md`` under ``--out``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import time
from pathlib import Path

from report import write_csv  # benchmarks/ is the script's directory

import smac_rllib  # noqa: E402,F401 -- sets MUJOCO_GL before anything imports dm_control (smac_rllib.headless_gl)

os.environ.setdefault("RAY_AUTH_MODE", "disabled")
os.environ.setdefault("LP_NUM_THREADS", "1")  # one llvmpipe render thread per process, as on cluster/ rollout nodes

ENV = "dmc/cheetah-run"
ROLLOUT_RESOURCE = "rollout_node"


def render_ms_per_frame(frames: int, fast_render: bool) -> tuple[float, float]:
    """(wall ms, CPU ms) per rendered 64x64 frame of a bare dm_control loop (physics included, ~0.05 ms a step)."""
    import numpy as np

    from smac_rllib.envs import make_env

    env = make_env(ENV, {"from_pixels": True, "fast_render": fast_render, "action_repeat": 1, "seed": 0})
    rng = np.random.default_rng(0)
    env.reset()
    for _ in range(10):  # warm-up: EGL context, first renders
        env.step(rng.uniform(-1, 1, env.action_space.shape).astype(np.float32))
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(frames):
        _, _, term, trunc, _ = env.step(rng.uniform(-1, 1, env.action_space.shape).astype(np.float32))
        if term or trunc:
            env.reset()
    wall_ms, cpu_ms = 1000 * (time.perf_counter() - t0) / frames, 1000 * (time.process_time() - c0) / frames
    env.close()
    return wall_ms, cpu_ms


def _timed_sample(runner, steps: int) -> float:
    """CPU ms per agent step of this env runner process (all its threads), while sampling ``steps``."""
    c0 = time.process_time()
    runner.sample(num_timesteps=steps)
    return 1000 * (time.process_time() - c0) / steps


def sampling_rate(
    task: str, num_runners: int, steps: int, preset: str = "small", fast_render: bool = True
) -> tuple[float, float]:
    """(agent steps/s of ``num_runners`` env runners sampling in parallel, mean CPU ms per agent step)."""
    from smac_rllib.algorithms import SMACConfig

    env_config = {"seed": 0}
    training = dict(num_steps_sampled_before_learning_starts=10**9)
    if task == "pixels":
        env_config.update(from_pixels=True, fast_render=fast_render)
        training.update(world_model_preset=preset)
    config = (
        SMACConfig()
        .environment(ENV, env_config=env_config)
        .env_runners(
            num_env_runners=num_runners,
            num_cpus_per_env_runner=1,
            custom_resources_per_env_runner={ROLLOUT_RESOURCE: 0.01},
        )
        .training(**training)
    )
    algo = config.build_algo()
    try:
        group = algo.env_runner_group
        group.foreach_env_runner(lambda r: r.sample(num_timesteps=20), local_env_runner=False)  # warm up
        t0 = time.perf_counter()
        cpu_ms = group.foreach_env_runner(lambda r: _timed_sample(r, steps), local_env_runner=False)
        return num_runners * steps / (time.perf_counter() - t0), sum(cpu_ms) / len(cpu_ms)
    finally:
        algo.stop()


def start_cluster(rollout_cpus: int):
    """Head (driver) + rollout node on this machine; leaves /tmp/ray/ray_current_cluster as it was."""
    import ray
    from ray._common import utils as ray_utils
    from ray.cluster_utils import Cluster

    address_file = ray_utils.get_ray_address_file(None)
    previous = Path(address_file).read_text() if os.path.exists(address_file) else None
    cluster = Cluster(
        initialize_head=True, head_node_args=dict(num_cpus=1, resources={"learner_node": 1}, include_dashboard=False)
    )
    if previous is None:
        ray_utils.reset_ray_address()
    else:
        Path(address_file).write_text(previous)
    cluster.add_node(num_cpus=rollout_cpus, resources={ROLLOUT_RESOURCE: 1})
    ray.init(address=cluster.address, log_to_driver=False, configure_logging=False)
    return cluster, previous, address_file


def load_note() -> str:
    try:
        uptime = subprocess.run(["uptime"], capture_output=True, text=True, check=True).stdout.strip()
    except Exception:  # noqa: BLE001
        return "load unknown"
    load1 = float(uptime.rsplit("load average:", 1)[1].split(",")[0])
    cores = os.cpu_count() or 1
    busy = (
        f"under load (1-min load average {load1:.1f} on {cores} cores: other jobs were running)"
        if load1 > cores
        else "on an idle machine"
    )
    return f"{busy}; `uptime`: {uptime}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runners", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--state-steps", type=int, default=2000, help="agent steps per runner, states")
    parser.add_argument("--pixel-steps", type=int, default=300, help="agent steps per runner, pixels")
    parser.add_argument("--render-frames", type=int, default=300)
    parser.add_argument("--num-cpus", type=int, default=4, help="logical CPUs of the rollout node")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = parser.parse_args()

    import ray
    import torch

    torch.set_num_threads(1)

    smac_rllib.register()
    load_before = load_note()
    render = {fast: render_ms_per_frame(args.render_frames, fast) for fast in (False, True)}
    cluster, previous, address_file = start_cluster(args.num_cpus)
    smac_rllib.register()
    rows = []
    try:
        for task, steps, action_repeat in (("states", args.state_steps, 1), ("pixels", args.pixel_steps, 2)):
            base = None
            for n in args.runners:
                rate, cpu_ms = sampling_rate(task, n, steps)
                base = base or rate / n
                what = "states, latent policy" if task == "states" else "pixels 64x64, small RSSM + actor, fast render"
                rows.append(
                    dict(
                        task=what,
                        env_runners=n,
                        agent_steps_per_s=round(rate, 1),
                        frames_per_s=round(rate * action_repeat, 1),
                        per_runner=round(rate / n, 1),
                        speedup=round(rate / base, 2),
                        cpu_ms_per_agent_step=round(cpu_ms, 2),
                        cores_used=round(rate * cpu_ms / 1000, 2),
                    )
                )
                print(rows[-1], flush=True)
        rate, cpu_ms = sampling_rate("pixels", 1, args.pixel_steps // 2, preset="paper", fast_render=False)
        rows.append(
            dict(
                task="pixels 64x64, paper RSSM + actor, default render",
                env_runners=1,
                agent_steps_per_s=round(rate, 1),
                frames_per_s=round(2 * rate, 1),
                per_runner=round(rate, 1),
                speedup=1.0,
                cpu_ms_per_agent_step=round(cpu_ms, 2),
                cores_used=round(rate * cpu_ms / 1000, 2),
            )
        )
        print(rows[-1], flush=True)
    finally:
        ray.shutdown()
        cluster.shutdown()
        if previous is not None:
            Path(address_file).write_text(previous)
    load_after = load_note()

    args.out.mkdir(parents=True, exist_ok=True)
    write_csv(rows, args.out / "scaling.csv")
    lines = [
        "# Rollout scaling: env steps/s vs env runners on a local multi-node Ray cluster (cheetah-run)",
        "",
        f"Command: `.venv/bin/python benchmarks/scaling.py --runners {' '.join(map(str, args.runners))} "
        f"--state-steps {args.state_steps} --pixel-steps {args.pixel_steps} --num-cpus {args.num_cpus}`",
        f"Machine: {os.cpu_count()}-core CPU, no GPU, Mesa EGL software rendering (llvmpipe), torch 1 thread per "
        f"process; env runners on a `ray.cluster_utils.Cluster` rollout node with {args.num_cpus} logical CPUs, 1 CPU "
        "per runner.",
        f"Taken {load_before} (before) / {load_after} (after): absolute rates are lower and noisier than on an idle "
        "machine.",
        "",
        "Agent steps are env steps of the policy; pixels use action repeat 2, so frames/s = 2 x agent steps/s.",
        "",
        "CPU ms per agent step is the runner process's CPU time (all threads) per step: it depends much less on",
        "other load than the wall rates do (it still rises ~20% under heavy load: shared caches and cores), and",
        "1000 / it is what one dedicated core delivers. Cores used = agent steps/s x CPU s per step: how much CPU",
        "the env runners actually got together.",
        "",
        "| task | env runners | agent steps/s | frames/s | per runner | speed-up vs 1 | CPU ms per agent step | cores "
        "used |",
        "|---|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['task']} | {r['env_runners']} | {r['agent_steps_per_s']} | {r['frames_per_s']} | {r['per_runner']} | "
        f"{r['speedup']} | {r['cpu_ms_per_agent_step']} | {r['cores_used']} |"
        for r in rows
    ]
    lines += [
        "",
        f"Bare render cost per 64x64 frame (one process, no Ray, no policy; wall / CPU ms): default "
        f"{render[False][0]:.1f} / {render[False][1]:.1f} ms, fast_render {render[True][0]:.1f} / "
        f"{render[True][1]:.1f} ms.",
        "",
    ]
    for what in dict.fromkeys(r["task"] for r in rows):
        scan = [r for r in rows if r["task"] == what]
        if len(scan) > 1:
            best = max(scan, key=lambda r: r["agent_steps_per_s"])
            lines.append(
                f"* {what}: highest rate with {best['env_runners']} env runner(s), "
                f"{best['speedup']}x the 1-runner rate."
            )
    most = max(r["cores_used"] for r in rows)
    lines += [
        "",
        f"This machine has {os.cpu_count()} cores for everything (the raylets, the driver, every env runner and any "
        f"other job); the env runners together never got more than {most} of them, so more runners mostly add "
        "contention: the table shows where one small shared machine saturates, not how a rollout node scales. On a "
        "cluster each rollout node adds its own cores; cluster/README.md projects how many one GPU learner needs "
        "from the CPU ms per agent step.",
    ]
    (args.out / "scaling.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
