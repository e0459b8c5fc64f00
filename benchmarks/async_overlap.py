"""Sync vs async actor-learner (docs/design.md §8), side by side in one run, same seeds and settings.

    .venv/bin/python benchmarks/async_overlap.py                      # both configurations, 2 repeats
    .venv/bin/python benchmarks/async_overlap.py --only balanced --repeats 3

Configurations:
- ``balanced``: state SMAC K=8 (width 256, batch 256) on cartpole-swingup, 1 env runner, the learner in the
  driver process, ``updates_per_env_step`` chosen so acting and learning cost about the same per env step
  (both costs are measured and reported);
- ``pixels_paper``: pixel SMAC with the paper RSSM at B x T = 16 x 32 on cheetah-run, 0.2 updates per agent
  step, 1 env runner (learner-bound on a CPU): learner utilization sync vs async.

Each run warms up (uniform actions, no updates), then times a phase of a fixed number of env steps and all the
updates they grant (the async run waits for its learner to finish them). Runs are interleaved (sync, async,
sync, async, ...). Learner utilization = time inside updates / phase wall time (sync: measured around
``learner_group.update``; async: the learner's own ``async/learner_utilization`` over the phase).
Writes ``async_overlap.{csv,md}`` under ``--out``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

import smac_rllib  # noqa: E402,F401 -- sets MUJOCO_GL before anything imports dm_control (smac_rllib.headless_gl)

os.environ.setdefault("RAY_AUTH_MODE", "disabled")
os.environ.setdefault("WANDB_MODE", "disabled")

from report import write_csv  # noqa: E402  (benchmarks/ is the script's directory)

CONFIGS = {
    "balanced": dict(env="dmc/cartpole-swingup", pixels=False, warm_up=1000, phase_steps=6000, ratio=0.05, fragment=50),
    "pixels_paper": dict(
        env="dmc/cheetah-run", pixels=True, warm_up=500, phase_steps=250, ratio=0.2, fragment=50, repeats=1
    ),
}


def build(name: str, mode: str, seed: int):
    from smac_rllib.algorithms import SMACConfig

    c = CONFIGS[name]
    config = (
        SMACConfig()
        .environment(
            c["env"], env_config={"seed": seed} | ({"from_pixels": True, "fast_render": True} if c["pixels"] else {})
        )
        .env_runners(num_env_runners=1, rollout_fragment_length=c["fragment"], num_cpus_per_env_runner=1)
        .learners(num_learners=0)
        .training(
            async_learning=mode == "async",
            updates_per_env_step=c["ratio"],
            num_steps_sampled_before_learning_starts=c["warm_up"],
            **(
                {"num_particles": 8, "world_model_preset": "paper", "batch_size_B": 16, "batch_length_T": 32}
                if c["pixels"]
                else {"num_particles": 8, "train_batch_size_per_learner": 256}
            ),
        )
        .reporting(min_sample_timesteps_per_iteration=c["fragment"])
        .debugging(seed=seed)
    )
    return config.build_algo()


def run_once(name: str, mode: str, seed: int) -> dict:
    c = CONFIGS[name]
    algo = build(name, mode, seed)
    busy = [0.0]
    if mode == "sync":  # time inside the learner's updates (async: the learner thread measures it itself)
        update = algo.learner_group.update

        def timed_update(*args, **kwargs):
            start = time.perf_counter()
            try:
                return update(*args, **kwargs)
            finally:
                busy[0] += time.perf_counter() - start

        algo.learner_group.update = timed_update
    try:
        while algo.env_steps_stored < c["warm_up"]:
            algo.train()
        driver = algo._async
        steps0, start = algo.env_steps_stored, time.perf_counter()
        if driver:
            driver._report()  # the phase starts with a fresh learner period
            busy0, updates0 = driver.learner_busy_s_total, driver.updates_done
        else:
            updates0 = _granted(algo, c)
        while algo.env_steps_stored < c["warm_up"] + c["phase_steps"]:
            algo.train()
        if driver:
            driver.quiesce()  # the phase includes every update its env steps granted
            driver._report()
            busy_s, updates = driver.learner_busy_s_total - busy0, driver.updates_done - updates0
        else:
            busy_s, updates = busy[0], _granted(algo, c) - updates0
        wall = time.perf_counter() - start
        steps = algo.env_steps_stored - steps0
        return {
            "config": name,
            "mode": mode,
            "seed": seed,
            "env_steps": steps,
            "updates": updates,
            "wall_s": round(wall, 2),
            "env_steps_per_s": round(steps / wall, 1),
            "updates_per_s": round(updates / wall, 3),
            "learner_utilization": round(busy_s / wall, 3),
            "learn_s_per_env_step": round(busy_s / steps, 5),
        }
    finally:
        algo.stop()


def _granted(algo, c) -> int:
    import math

    return math.floor(c["ratio"] * max(0, algo.env_steps_stored - c["warm_up"]) + 1e-9)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(CONFIGS), action="append")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results"))
    args = parser.parse_args()
    import ray
    import torch

    torch.set_num_threads(1)
    smac_rllib.register()
    ray.init(num_cpus=3, include_dashboard=False, log_to_driver=False, configure_logging=False)
    rows = []
    for name in args.only or list(CONFIGS):
        for repeat in range(CONFIGS[name].get("repeats", args.repeats)):
            for mode in ("sync", "async"):  # interleaved: the machine's drift hits both
                row = run_once(name, mode, seed=repeat)
                print(row, flush=True)
                rows.append(row)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_csv(rows, out / "async_overlap.csv")
    (out / "async_overlap.md").write_text(markdown(rows, args))
    print((out / "async_overlap.md").read_text())


def markdown(rows: list[dict], args) -> str:
    lines = [
        "# Sync vs async actor-learner (benchmarks/async_overlap.py)",
        "",
        f"Machine: {os.cpu_count()}-core CPU, no GPU, torch 1 thread per process; 1 env runner, the learner in the "
        f"driver process (num_learners=0). {args.repeats} interleaved repeats per mode; medians. Command: "
        f"`.venv/bin/python benchmarks/async_overlap.py{' --only ' + ' --only '.join(args.only) if args.only else ''} "
        f"--repeats {args.repeats}`.",
        "",
        "| config | mode | env steps | updates | wall s | env steps/s | learner utilization | speed-up (sync wall / "
        "async wall) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name in dict.fromkeys(r["config"] for r in rows):
        med = {}
        for mode in ("sync", "async"):
            rs = [r for r in rows if r["config"] == name and r["mode"] == mode]
            med[mode] = {
                k: statistics.median(r[k] for r in rs)
                for k in ("env_steps", "updates", "wall_s", "env_steps_per_s", "learner_utilization")
            }
        for mode in ("sync", "async"):
            m = med[mode]
            speed = f"{med['sync']['wall_s'] / med['async']['wall_s']:.2f}x" if mode == "async" else ""
            lines.append(
                f"| {name} | {mode} | {m['env_steps']:.0f} | {m['updates']:.0f} | {m['wall_s']:.1f} | "
                f"{m['env_steps_per_s']:.1f} | {m['learner_utilization']:.2f} | {speed} |"
            )
    lines += [
        "",
        "Per-run rows: async_overlap.csv (learn_s_per_env_step = update seconds per env step: the learning cost "
        "that acting is balanced against).",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
