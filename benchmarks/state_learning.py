"""Learning benchmark, state-based: SMAC vs the paper's state baselines on dm_control, same budget, several seeds.

    .venv/bin/python benchmarks/state_learning.py --env dmc/cartpole-swingup --steps 100000 --seeds 0 1 2 \
        --algos SMAC SAC --updates-per-env-step 1.0 --skip-done        # the paper's ratio and budget
    .venv/bin/python benchmarks/state_learning.py --algos SMAC SAC TD3 Flow2 Flow4 MOE5 MOE10 --steps 30000 --seeds 0 \
        --tag baselines --skip-done                                     # every state baseline, short

Each (algorithm, seed) run is its own process with its own local Ray (num_env_runners=0, local learner, torch 1
thread, the synchronous loop: one update per env step strictly alternating, as the reference code), so
``--workers 2`` uses the two cores. Every algorithm runs at its paper setting (``ALGOS``, the same as
tuned_examples/paper_state_comparison.yaml). Every ``--eval-every`` env steps the deterministic policy is
evaluated on ``--eval-episodes`` fresh episodes, the run is checkpointed (replay included) under ``<runs>/ckpt``
and its rows are written: a stopped benchmark started again with the same command resumes every run from its
last evaluation. Writes ``<stem>.csv`` (algo,seed,env_steps,eval_return,...), ``<stem>.md`` (mean and 95%
t-interval over seeds at half and full budget; unfinished runs marked) and ``<stem>.png`` (mean and 95% interval
per algorithm) under ``--out``.
"""

from __future__ import annotations

import argparse
import csv
import multiprocessing as mp
import os
import signal
import sys
import time
from pathlib import Path

from report import write_csv, write_page  # benchmarks/ is the script's directory

# name -> (config class in smac_rllib.algorithms, its paper settings; docs/baselines.md). SMAC's own settings are its
# defaults (width 256, latent 16, mlmc, alpha 0.1) with K from --num-particles.
ALGOS = {
    "SMAC": ("SMACConfig", {}),
    "SAC": ("SACBaselineConfig", {"hidden_dim": 400}),
    "TD3": (
        "TD3Config",
        {"hidden_dim": 400, "policy_delay": 2, "target_noise": 0.2, "target_noise_clip": 0.5, "exploration_noise": 0.1},
    ),
    "Flow2": ("SACFlowConfig", {"hidden_dim": 400, "flow_blocks": 2}),
    "Flow4": ("SACFlowConfig", {"hidden_dim": 400, "flow_blocks": 4}),
    "MOE5": ("SACMoEConfig", {"hidden_dim": 400, "num_experts": 5}),
    "MOE10": ("SACMoEConfig", {"hidden_dim": 400, "num_experts": 10}),
}


def make_config(algo: str, env: str, seed: int, num_particles: int, updates_per_env_step: float):
    from smac_rllib import algorithms

    class_name, settings = ALGOS[algo]
    settings = dict(settings, updates_per_env_step=updates_per_env_step, async_learning=False)
    if algo == "SMAC":
        settings["num_particles"] = num_particles
    return (
        getattr(algorithms, class_name)()
        .training(**settings)
        .environment(env, env_config={"seed": seed})
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
    return (
        dist.to_deterministic().sample()[0].numpy()
    )  # tanh(mean): SACBaselineTorchRLModule fixes RLlib's pre-tanh mean


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
    csv_path = Path(raw_dir) / f"{algo_name}_seed{seed}.csv"
    ckpt = Path(raw_dir).resolve() / "ckpt" / f"{algo_name}_seed{seed}"  # absolute: RLlib's save_to_path takes a URI
    rows, next_eval, t0, wall_before = [], 0, time.time(), 0.0
    if not ckpt.exists() and ckpt.with_name(ckpt.name + ".old").exists():  # killed between the two renames of _save
        os.replace(ckpt.with_name(ckpt.name + ".old"), ckpt)
    if ckpt.exists() and csv_path.exists():  # resume from the last evaluation
        algo.restore_from_path(str(ckpt))
        sampled = int(algo.metrics.peek(("env_runners", "num_env_steps_sampled_lifetime")))
        rows = [r for r in read_csv(csv_path) if r["env_steps"] <= sampled]
        wall_before = rows[-1]["wall_s"] if rows else 0.0
        next_eval = sampled - sampled % eval_every + eval_every
        print(f"[{algo_name} seed {seed}] resumed at {sampled} env steps from {ckpt}", flush=True)
    try:
        while not rows or rows[-1]["env_steps"] < steps:
            result = algo.train()
            sampled = int(result["env_runners"]["num_env_steps_sampled_lifetime"])
            if sampled >= next_eval or sampled >= steps:
                ret = evaluate(algo.get_module(), env, eval_episodes, seed)
                learner = result.get("learners", {}).get("default_policy", {})
                wall = round(wall_before + time.time() - t0, 1)
                rows.append(
                    dict(
                        algo=algo_name,
                        seed=seed,
                        env_steps=sampled,
                        eval_return=ret,
                        train_return=result["env_runners"].get("episode_return_mean", float("nan")),
                        wall_s=wall,
                        alpha=learner.get("alpha/value", learner.get("alpha_value", float("nan"))),
                    )
                )
                print(f"[{algo_name} seed {seed}] {sampled} steps  eval {ret:.1f}  ({wall:.0f}s)", flush=True)
                write_csv(rows, csv_path)  # first the row, then the checkpoint: a resume drops rows newer than it
                _save(algo, ckpt)
                next_eval = sampled - sampled % eval_every + eval_every
    finally:
        algo.stop()
        ray.shutdown()
    return rows


def _save(algo, ckpt: Path) -> None:
    """Replace ``ckpt`` atomically (a kill during the save leaves the previous one)."""
    import shutil

    tmp = ckpt.with_name(ckpt.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    algo.save_to_path(str(tmp))
    old = ckpt.with_name(ckpt.name + ".old")
    if ckpt.exists():
        os.replace(ckpt, old)
    os.replace(tmp, ckpt)
    shutil.rmtree(old, ignore_errors=True)


def _done(path: Path, steps: int) -> bool:
    return path.exists() and any(r["env_steps"] >= steps for r in read_csv(path))


def read_csv(path: Path) -> list[dict]:
    with open(path) as f:
        return [
            {k: v if k == "algo" else int(float(v)) if k in ("seed", "env_steps") else float(v) for k, v in row.items()}
            for row in csv.DictReader(f)
        ]  # seed and env_steps stay integers: a resumed run writes its rows back as they were


def interval95(values) -> tuple[float, float]:
    """(mean, half-width of the 95% Student-t interval of the mean) over seeds; half-width nan for one seed."""
    import numpy as np
    from scipy import stats

    v = np.asarray([x for x in values if x == x], dtype=float)
    if len(v) == 0:
        return float("nan"), float("nan")
    if len(v) == 1:
        return float(v[0]), float("nan")
    return float(v.mean()), float(stats.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / np.sqrt(len(v)))


def plot(
    rows: list[dict], out_png: Path, title: str, x: str = "env_steps", xlabel: str = "env steps", algos=None
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for algo in [a for a in (algos or ALGOS) if any(r["algo"] == a for r in rows)]:
        seeds = sorted({r["seed"] for r in rows if r["algo"] == algo})
        steps = sorted({r[x] for r in rows if r["algo"] == algo})
        by = {(r["seed"], r[x]): r["eval_return"] for r in rows if r["algo"] == algo}
        stats_t = [interval95([by.get((s, t), np.nan) for s in seeds]) for t in steps]
        mean = np.array([m for m, _ in stats_t])
        half = np.nan_to_num(np.array([h for _, h in stats_t]))
        (line,) = ax.plot(steps, mean, label=f"{algo} (n={len(seeds)})")
        ax.fill_between(steps, mean - half, mean + half, alpha=0.2, color=line.get_color())
    ax.set_xlabel(xlabel)
    ax.set_ylabel("eval return (deterministic)")
    ax.set_title(title + "\nmean and 95% t-interval over seeds", fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out_png, dpi=120)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--env", default="dmc/cartpole-swingup")
    parser.add_argument("--steps", type=int, default=50_000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--algos", nargs="+", default=["SMAC", "SAC"], choices=list(ALGOS))
    parser.add_argument("--tag", default="", help="suffix of the output names (separate runs of other settings)")
    parser.add_argument("--eval-every", type=int, default=5000)
    parser.add_argument("--eval-episodes", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--num-particles", type=int, default=16, help="SMAC's K")
    parser.add_argument("--updates-per-env-step", type=float, default=1.0, help="same for both algorithms")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    parser.add_argument(
        "--skip-done", action="store_true", help="skip (algo, seed) runs whose CSV already reaches --steps"
    )
    parser.add_argument("--summarize-only", action="store_true", help="only rebuild csv/md/png from the per-run CSVs")
    parser.add_argument(
        "--first-reaching",
        type=float,
        default=500.0,
        help="report per run the first evaluation step whose return is >= this (sparse tasks: finding the reward)",
    )
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    stem = "state_learning_" + args.env.split("/")[-1].replace("-", "_") + (f"_{args.tag}" if args.tag else "")
    raw_dir = args.out / f"{stem}_runs"
    raw_dir.mkdir(parents=True, exist_ok=True)
    # Seed-major, the slower algorithm (SMAC K>0) first: with 2 workers both algorithms run seed 0 side by side, so a
    # stopped run still leaves a like-for-like pair.
    algos = sorted(args.algos, key=lambda a: a != "SMAC")  # stable: the given order otherwise
    jobs = [
        (
            a,
            args.env,
            s,
            args.steps,
            args.eval_every,
            args.eval_episodes,
            args.num_particles,
            args.updates_per_env_step,
            str(raw_dir),
        )
        for s in args.seeds
        for a in algos
    ]
    if args.skip_done:
        jobs = [j for j in jobs if not _done(raw_dir / f"{j[0]}_seed{j[2]}.csv", args.steps)]
    if not args.summarize_only:
        # `kill <this pid>` stops the runs too: SystemExit leaves the Pool's `with`, which terminates its workers (a
        # plain SIGTERM would orphan them, still training and writing the same files as a resumed benchmark).
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
        with mp.get_context("spawn").Pool(args.workers) as pool:
            for _ in pool.imap_unordered(run_one, jobs, chunksize=1):
                pass
    rows = [
        r
        for path in sorted(raw_dir.glob("*.csv"))
        for r in read_csv(path)
        if r["algo"] in args.algos and r["seed"] in args.seeds
    ]
    write_csv(rows, args.out / f"{stem}.csv")
    plot(rows, args.out / f"{stem}.png", f"{args.env}, states, {args.updates_per_env_step} updates/step")
    write_markdown(rows, args, args.out / f"{stem}.md")


def write_markdown(rows, args, path: Path) -> None:
    half = -(-args.steps // (2 * args.eval_every)) * args.eval_every  # the eval point at or after half the budget
    marks = sorted({min(args.steps, half), args.steps})
    command = (
        f".venv/bin/python benchmarks/state_learning.py --env {args.env} --steps {args.steps} --seeds "
        f"{' '.join(map(str, args.seeds))} --algos {' '.join(args.algos)} --num-particles {args.num_particles} "
        f"--updates-per-env-step {args.updates_per_env_step} --eval-every {args.eval_every} --eval-episodes "
        f"{args.eval_episodes}" + (f" --tag {args.tag}" if args.tag else "") + " --skip-done"
    )

    def at(algo, seed, mark):
        return next(
            (r["eval_return"] for r in rows if r["algo"] == algo and r["seed"] == seed and r["env_steps"] >= mark),
            float("nan"),
        )

    unfinished = [
        (a, s)
        for a in args.algos
        for s in args.seeds
        if not any(r["algo"] == a and r["seed"] == s and r["env_steps"] >= args.steps for r in rows)
    ]
    lines = [f"# {args.env} from states: {', '.join(args.algos)}", ""]
    if unfinished:
        lines += [
            f"**PARTIAL RESULTS**: {len(unfinished)} of {len(args.algos) * len(args.seeds)} runs have not reached "
            f"{args.steps} env steps (" + ", ".join(f"{a} seed {s}" for a, s in unfinished) + "); the same command "
            "resumes them.",
            "",
        ]
    lines += [
        f"Command: `{command}`",
        f"Settings: each algorithm at its paper setting (`ALGOS` in the script; SMAC K={args.num_particles}, latent "
        f"16, width 256, mlmc; the baselines width 400); batch 256, lr 3e-4, {args.updates_per_env_step} updates per "
        "env step (synchronous loop), 5000 uniform warm-up steps, uniform replay.",
        "Machine: 2-core CPU, no GPU; each run one process, torch 1 thread, local learner, num_env_runners=0.",
        f"Eval: deterministic policy, {args.eval_episodes} episodes every {args.eval_every} env steps (action repeat "
        "1). Interval: 95% Student-t interval of the mean over seeds.",
        "",
        f"First >= {args.first_reaching:g}: the first evaluation at which the return reached it (the exploration claim "
        "is about finding the reward); 'not reached' counts only evaluations run so far.",
        "",
        "| algo | seed | "
        + " | ".join(f"return @ {m // 1000}k" for m in marks)
        + f" | first >= {args.first_reaching:g} | env steps done | wall time (s) |",
        "|---|---|" + "---|" * len(marks) + "---|---|---|",
    ]
    for algo in args.algos:
        for seed in args.seeds:
            rs = [r for r in rows if r["algo"] == algo and r["seed"] == seed]
            first = next((int(r["env_steps"]) for r in rs if r["eval_return"] >= args.first_reaching), None)
            lines.append(
                f"| {algo} | {seed} | "
                + " | ".join(f"{at(algo, seed, m):.1f}" for m in marks)
                + f" | {first if first is not None else 'not reached'}"
                + f" | {int(rs[-1]['env_steps']) if rs else 0} | {rs[-1]['wall_s'] if rs else 'nan'} |"
            )
        cells = []
        for m in marks:
            mean, h = interval95([at(algo, s, m) for s in args.seeds])
            n = sum(1 for s in args.seeds if at(algo, s, m) == at(algo, s, m))
            cells.append(f"{mean:.1f} ± {h:.1f} (n={n})" if n > 1 else f"{mean:.1f} (n={n})")
        lines.append(f"| {algo} | mean ± 95% | " + " | ".join(cells) + " | | | |")
    lines += [
        "",
        "Wall time: two runs share the 2 cores (one per core), so it depends on what ran beside each run; "
        "a resumed run adds its time after the resume to the time before the stop.",
    ]
    write_page(path, "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
