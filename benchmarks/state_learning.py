"""Learning benchmark, state-based: SMAC vs the SAC baseline on dm_control, same budget, several seeds.

    .venv/bin/python benchmarks/state_learning.py --env dmc/cartpole-swingup --steps 50000 --seeds 0 1

Each (algorithm, seed) run is its own process with its own local Ray (num_env_runners=0, local learner,
torch 1 thread), so two runs use the two cores. Every ``--eval-every`` env steps the deterministic policy is
evaluated on ``--eval-episodes`` fresh episodes. Writes ``state_learning.csv``, ``state_learning.md`` and
``state_learning.png`` under ``--out``.
"""

from __future__ import annotations

import argparse
import csv
import multiprocessing as mp
import os
import time
from pathlib import Path

from report import write_csv  # benchmarks/ is the script's directory

ALGOS = ("SMAC", "SAC")


def make_config(algo: str, env: str, seed: int, num_particles: int, updates_per_env_step: float):
    from smac_rllib.algorithms import SACBaselineConfig, SMACConfig

    if algo == "SMAC":
        config = SMACConfig().training(num_particles=num_particles, updates_per_env_step=updates_per_env_step)
    else:
        config = SACBaselineConfig().training(updates_per_env_step=updates_per_env_step)
    return (
        config.environment(env, env_config={"seed": seed})
        .env_runners(num_env_runners=0)
        .reporting(min_sample_timesteps_per_iteration=1000)
        .debugging(seed=seed)
    )


def evaluate(module, env_name: str, episodes: int, seed: int) -> float:
    import numpy as np
    import torch
    from ray.rllib.core.columns import Columns

    from smac_rllib.envs import make_env

    env = make_env(env_name, {"seed": seed})
    returns = []
    for ep in range(episodes):
        obs, _ = env.reset(seed=10_000 + 1000 * seed + ep)
        done, total = False, 0.0
        while not done:
            with torch.no_grad():
                out = module.forward_inference({Columns.OBS: torch.as_tensor(obs, dtype=torch.float32)[None]})
            action = out[Columns.ACTIONS][0].numpy() if Columns.ACTIONS in out else _sac_mean_action(module, out)
            obs, reward, terminated, truncated, _ = env.step(np.clip(action, -1, 1))
            total += reward
            done = terminated or truncated
        returns.append(total)
    env.close()
    return float(np.mean(returns))


def _sac_mean_action(module, out):
    from ray.rllib.core.columns import Columns

    dist = module.get_inference_action_dist_cls().from_logits(out[Columns.ACTION_DIST_INPUTS])
    return dist.to_deterministic().sample()[0].numpy()  # tanh(mean): SACBaselineTorchRLModule fixes RLlib's pre-tanh mean


def run_one(args_tuple) -> list[dict]:
    algo_name, env, seed, steps, eval_every, eval_episodes, num_particles, updates_per_env_step, raw_dir = args_tuple
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    import ray
    import torch

    torch.set_num_threads(1)
    import smac_rllib

    smac_rllib.register()
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, configure_logging=False)
    algo = make_config(algo_name, env, seed, num_particles, updates_per_env_step).build_algo()
    rows, next_eval, t0 = [], 0, time.time()
    try:
        while True:
            result = algo.train()
            sampled = int(result["env_runners"]["num_env_steps_sampled_lifetime"])
            if sampled >= next_eval or sampled >= steps:
                ret = evaluate(algo.get_module(), env, eval_episodes, seed)
                learner = result.get("learners", {}).get("default_policy", {})
                rows.append(dict(algo=algo_name, seed=seed, env_steps=sampled, eval_return=ret,
                                 train_return=result["env_runners"].get("episode_return_mean", float("nan")),
                                 wall_s=round(time.time() - t0, 1),
                                 alpha=learner.get("alpha/value", learner.get("alpha_value", float("nan")))))
                print(f"[{algo_name} seed {seed}] {sampled} steps  eval {ret:.1f}  ({time.time() - t0:.0f}s)", flush=True)
                write_csv(rows, Path(raw_dir) / f"{algo_name}_seed{seed}.csv")  # partial results survive a stop
                next_eval = sampled - sampled % eval_every + eval_every
            if sampled >= steps:
                break
    finally:
        algo.stop()
        ray.shutdown()
    return rows


def _done(path: Path, steps: int) -> bool:
    return path.exists() and any(r["env_steps"] >= steps for r in read_csv(path))



def read_csv(path: Path) -> list[dict]:
    with open(path) as f:
        return [{k: (v if k == "algo" else float(v)) for k, v in row.items()} for row in csv.DictReader(f)]


def plot(rows: list[dict], out_png: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(6, 4))
    for algo in sorted({r["algo"] for r in rows}):
        seeds = sorted({r["seed"] for r in rows if r["algo"] == algo})
        steps = sorted({r["env_steps"] for r in rows if r["algo"] == algo})
        curves = [[next((r["eval_return"] for r in rows if r["algo"] == algo and r["seed"] == s and r["env_steps"] == t), np.nan) for t in steps] for s in seeds]
        arr = np.array(curves, dtype=float)
        mean = np.nanmean(arr, axis=0)
        ax.plot(steps, mean, label=f"{algo} (n={len(seeds)})")
        ax.fill_between(steps, np.nanmin(arr, axis=0), np.nanmax(arr, axis=0), alpha=0.2)
    ax.set_xlabel("env steps")
    ax.set_ylabel("eval return (deterministic)")
    ax.set_title(title)
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out_png, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--env", default="dmc/cartpole-swingup")
    parser.add_argument("--steps", type=int, default=50_000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--algos", nargs="+", default=list(ALGOS), choices=ALGOS)
    parser.add_argument("--eval-every", type=int, default=5000)
    parser.add_argument("--eval-episodes", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--num-particles", type=int, default=16, help="SMAC's K")
    parser.add_argument("--updates-per-env-step", type=float, default=1.0, help="same for both algorithms")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    parser.add_argument("--skip-done", action="store_true", help="skip (algo, seed) runs whose CSV already reaches --steps")
    parser.add_argument("--summarize-only", action="store_true", help="only rebuild csv/md/png from the per-run CSVs")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    stem = "state_learning_" + args.env.split("/")[-1].replace("-", "_")
    raw_dir = args.out / f"{stem}_runs"
    raw_dir.mkdir(parents=True, exist_ok=True)
    # Seed-major, the slower algorithm (SMAC K>0) first: with 2 workers both algorithms run seed 0 side by side, so a
    # stopped run still leaves a like-for-like pair.
    algos = sorted(args.algos, key=lambda a: a != "SMAC")
    jobs = [(a, args.env, s, args.steps, args.eval_every, args.eval_episodes, args.num_particles, args.updates_per_env_step, str(raw_dir))
            for s in args.seeds for a in algos]
    if args.skip_done:
        jobs = [j for j in jobs if not _done(raw_dir / f"{j[0]}_seed{j[2]}.csv", args.steps)]
    if not args.summarize_only:
        with mp.get_context("spawn").Pool(args.workers) as pool:
            for _ in pool.imap_unordered(run_one, jobs, chunksize=1):
                pass
    rows = [r for path in sorted(raw_dir.glob("*.csv")) for r in read_csv(path)]
    write_csv(rows, args.out / f"{stem}.csv")
    plot(rows, args.out / f"{stem}.png", f"{args.env}, states ({len(args.seeds)} seeds)")
    write_markdown(rows, args, args.out / f"{stem}.md")


def write_markdown(rows, args, path: Path) -> None:
    half = -(-args.steps // (2 * args.eval_every)) * args.eval_every  # the eval point at or after half the budget
    marks = sorted({min(args.steps, half), args.steps})
    lines = [f"# {args.env} from states: SMAC vs SAC baseline", "",
             f"Command: `.venv/bin/python benchmarks/state_learning.py --env {args.env} --steps {args.steps} --seeds {' '.join(map(str, args.seeds))}"
             f" --num-particles {args.num_particles} --updates-per-env-step {args.updates_per_env_step}`",
             f"Settings: SMAC K={args.num_particles}, latent 16, width 256, estimator mlmc; SAC width 400, critic MLP(x || a); both batch 256, "
             f"lr 3e-4, {args.updates_per_env_step} updates per env step, 5000 warm-up steps, uniform replay.",
             "Machine: 2-core CPU, no GPU; each run one process, torch 1 thread, local learner, num_env_runners=0.",
             f"Eval: deterministic policy, {args.eval_episodes} episodes every {args.eval_every} env steps (action repeat 1).", "",
             "| algo | seed | " + " | ".join(f"return @ {m // 1000}k" for m in marks) + " | wall time (s) |",
             "|---|---|" + "---|" * len(marks) + "---|"]
    for algo in args.algos:
        for seed in args.seeds:
            rs = [r for r in rows if r["algo"] == algo and r["seed"] == seed]
            vals = [next((r["eval_return"] for r in rs if r["env_steps"] >= m), float("nan")) for m in marks]
            lines.append(f"| {algo} | {seed} | " + " | ".join(f"{v:.1f}" for v in vals) + f" | {rs[-1]['wall_s'] if rs else 'nan'} |")
        per_seed = [[next((r["eval_return"] for r in rows if r["algo"] == algo and r["seed"] == s and r["env_steps"] >= m), float("nan"))
                     for s in args.seeds] for m in marks]
        lines.append(f"| {algo} | mean | " + " | ".join(f"{sum(v) / len(v):.1f}" for v in per_seed) + " | |")
    lines += ["", "Wall time: two runs share the 2 cores (one per core), so it depends on what ran beside each run."]
    path.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
