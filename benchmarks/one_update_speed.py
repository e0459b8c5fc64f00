"""Speed of the one update against the learner path it replaced, side by side in one run.

    .venv/bin/python benchmarks/one_update_speed.py --old-ref fbc20d7 --rounds 3

Two code versions cannot share one process, so each measurement is a short subprocess that imports ``smac_rllib`` from
one tree (``--old-ref`` checked out as a git worktree under /tmp, or this checkout), builds a learner with
``config.build_learner`` on the CPU (one torch thread) and times ``learner.update`` on a fixed replay-shaped batch:
``--warmup`` updates, then ``--updates`` timed ones, the median kept. Versions alternate within each round (old, new,
old, new, ...), so slow drifts of a shared machine hit both; the ratio old / new per round is what to read (> 1: the
one update is faster). Also, in the new tree, the update function alone (``StateUpdate.step`` on the learner's own
module and optimizers, no RLlib shell): the shell's cost.

Cases: state SMAC (batch 256, cartpole-sized, width 256, latent 16) at K = 0 / 8 / 32; pixel SMAC (preset small,
B x T 16 x 32) at K = 0 and K = 8 history. Writes ``one_update_speed.{csv,md}`` under ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from report import write_csv  # benchmarks/ is the script's directory

ROOT = Path(__file__).resolve().parent.parent

TIMER = r'''
import json, os, sys, time
import numpy as np, torch
torch.set_num_threads(1)
import smac_rllib
from ray.rllib.core import DEFAULT_MODULE_ID
from ray.rllib.policy.sample_batch import MultiAgentBatch, SampleBatch
import gymnasium as gym
from smac_rllib.algorithms import SMACConfig
case, k, warmup, updates, what = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
rng = np.random.default_rng(0)
if case == "state":
    obs, act = gym.spaces.Box(-np.inf, np.inf, (5,), np.float32), gym.spaces.Box(-1, 1, (1,), np.float32)
    config = SMACConfig().environment(observation_space=obs, action_space=act).training(
        num_particles=k, train_batch_size_per_learner=256, async_learning=False)
    n = 256
    data = {"obs": rng.normal(size=(n, 5)).astype(np.float32), "new_obs": rng.normal(size=(n, 5)).astype(np.float32),
            "actions": rng.uniform(-1, 1, (n, 1)).astype(np.float32), "rewards": rng.uniform(size=n).astype(np.float32),
            "terminateds": np.zeros(n, bool), "truncateds": np.zeros(n, bool)}
    env_steps = n
else:
    obs = gym.spaces.Box(0, 255, (64, 64, 3), np.uint8)
    act = gym.spaces.Box(-1, 1, (1,), np.float32)
    B, T = 16, 32
    config = SMACConfig().environment(
        observation_space=obs, action_space=act, env_config={"from_pixels": True}).training(
        num_particles=k, particle_mode="history", world_model_preset="small", batch_size_B=B, batch_length_T=T,
        async_learning=False)
    is_first = np.zeros((B, T), bool); is_first[:, 0] = True
    data = {"obs": rng.integers(0, 255, (B, T, 64, 64, 3), dtype=np.uint8),
            "actions": rng.uniform(-1, 1, (B, T, 1)).astype(np.float32),
            "rewards": rng.uniform(size=(B, T)).astype(np.float32),
            "is_first": is_first, "is_terminated": np.zeros((B, T), bool)}
    env_steps = B * T
spaces = {"__env__": (obs, act), DEFAULT_MODULE_ID: (obs, act)}
learner = config.build_learner(spaces=spaces)
ts = {"num_env_steps_sampled_lifetime": 10_000}
if what == "step":  # the update function alone, on the learner's own module and optimizers
    update = learner.make_update(DEFAULT_MODULE_ID)
    columns = {k_: torch.from_numpy(v) for k_, v in data.items()}
    run = lambda: update.step(columns)
else:
    batch = MultiAgentBatch({DEFAULT_MODULE_ID: SampleBatch(dict(data))}, env_steps=env_steps)
    run = lambda: learner.update(batch=batch, timesteps=ts)
for _ in range(warmup):
    run()
times = []
for _ in range(updates):
    t0 = time.perf_counter(); run(); times.append(time.perf_counter() - t0)
print("RESULT " + json.dumps({"s_per_update": sorted(times)[len(times) // 2]}))
'''


def old_tree(ref: str) -> Path:
    path = Path("/tmp") / f"smac_rllib_{ref}"
    if not path.exists():
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(path), ref], cwd=ROOT, check=True, capture_output=True
        )
    return path


def measure(tree: Path, case: str, k: int, warmup: int, updates: int, what: str = "learner") -> float:
    env = dict(
        os.environ,
        PYTHONPATH=str(tree),
        OMP_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
        RAY_AUTH_MODE="disabled",
        WANDB_MODE="disabled",
        MUJOCO_GL=os.environ.get("MUJOCO_GL", "egl"),
    )
    out = subprocess.run(
        [sys.executable, "-c", TIMER, case, str(k), str(warmup), str(updates), what],
        cwd=str(tree),
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    lines = [line for line in out.stdout.splitlines() if line.startswith("RESULT ")]
    if out.returncode != 0 or not lines:
        raise RuntimeError(f"{tree} {case} K={k} {what}: {out.stderr[-1500:]}")
    return json.loads(lines[-1][len("RESULT ") :])["s_per_update"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--old-ref", default="fbc20d7", help="the commit whose learner path the one update replaced")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--cases", default="state:0,state:8,state:32,pixel:0,pixel:8")
    p.add_argument("--state-updates", type=int, default=60)
    p.add_argument("--pixel-updates", type=int, default=6)
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = p.parse_args()
    old = old_tree(args.old_ref)
    rows = []
    for case_k in args.cases.split(","):
        case, k = case_k.split(":")
        updates = args.state_updates if case == "state" else args.pixel_updates
        warmup = 5 if case == "state" else 2
        for r in range(args.rounds):
            t_old = measure(old, case, int(k), warmup, updates)
            t_new = measure(ROOT, case, int(k), warmup, updates)
            t_step = measure(ROOT, case, int(k), warmup, updates, what="step")
            row = {
                "case": case,
                "K": int(k),
                "round": r,
                "old_s": round(t_old, 5),
                "new_s": round(t_new, 5),
                "step_only_s": round(t_step, 5),
                "old_over_new": round(t_old / t_new, 3),
                "new_over_step": round(t_new / t_step, 3),
            }
            print(row, flush=True)
            rows.append(row)
    args.out.mkdir(parents=True, exist_ok=True)
    write_csv(rows, args.out / "one_update_speed.csv")
    lines = [
        "# The one update vs the learner path it replaced (CPU, one torch thread)",
        "",
        f"`.venv/bin/python benchmarks/one_update_speed.py --old-ref {args.old_ref} --rounds {args.rounds}`: each cell "
        "the median of the timed updates of one subprocess; versions alternate within a round. old = the learner "
        f"at {args.old_ref} (RLlib's TorchLearner path with the lean-update overrides); new = the learner running "
        "the one update; step = the update function alone (no RLlib shell).",
        "",
        "| case | K | old s/update (median of rounds) | new | step only | old / new per round | new / step per round |",
        "|---|---|---|---|---|---|---|",
    ]
    for case_k in args.cases.split(","):
        case, k = case_k.split(":")
        rs = [r for r in rows if r["case"] == case and r["K"] == int(k)]

        def med(key, rs=rs):
            return statistics.median(r[key] for r in rs)

        lines.append(
            f"| {case} | {k} | {med('old_s'):.4f} | {med('new_s'):.4f} | {med('step_only_s'):.4f} | "
            + ", ".join(f"{r['old_over_new']:.3f}" for r in rs)
            + " | "
            + ", ".join(f"{r['new_over_step']:.3f}" for r in rs)
            + " |"
        )
    (args.out / "one_update_speed.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
