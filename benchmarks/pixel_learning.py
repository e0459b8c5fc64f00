"""Short pixel training run: SMAC (K=32) vs Latent-SAC (K=0) on dm_control from 64x64 pixels, + reconstructions.

    .venv/bin/python benchmarks/pixel_learning.py --env dmc/cartpole-swingup --env-steps 6000 --seeds 0 1

Each (variant, seed) is its own process with its own local Ray (local env runner and learner, torch 1 thread),
two at a time on the two cores. CPU-sized settings (``--preset small``, fast render, small B x T, fewer updates
per env step than the reference) -- a smoke test of learning, not the paper's budget. After the first SMAC run,
``pixel_reconstructions.png`` shows a replayed sequence: truth / posterior reconstruction / open-loop prior
(prior rollout from step ``--context`` on, under the replayed actions). Writes pixel_learning.{csv,md,png}.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import time
from pathlib import Path

from report import write_csv, write_page  # benchmarks/ is the script's directory

import smac_rllib  # noqa: E402,F401 -- sets MUJOCO_GL before anything imports dm_control (smac_rllib.headless_gl)

os.environ.setdefault("RAY_AUTH_MODE", "disabled")

VARIANTS = {"SMAC K=32": 32, "Latent-SAC K=0": 0}


def make_config(variant: str, args, seed: int):
    from smac_rllib.algorithms import SMACConfig

    return (
        SMACConfig()
        .environment(args.env, env_config={"from_pixels": True, "fast_render": True, "seed": seed})
        .env_runners(num_env_runners=0, rollout_fragment_length=100)
        .training(
            num_particles=VARIANTS[variant],
            particle_mode="history",
            world_model_preset=args.preset,
            batch_size_B=args.batch_B,
            batch_length_T=args.batch_T,
            updates_per_env_step=args.updates_per_env_step,
            num_steps_sampled_before_learning_starts=args.learning_starts,
        )
        .reporting(min_sample_timesteps_per_iteration=500)  # one 500-step (1000-frame) episode per iteration
        .evaluation(
            evaluation_interval=args.eval_every,
            evaluation_duration=args.eval_episodes,
            evaluation_duration_unit="episodes",
            evaluation_num_env_runners=0,
            evaluation_config={"explore": False},
        )  # deterministic: posterior-mean belief, tanh(mean)
        .debugging(seed=seed)
    )


def run_one(job) -> list[dict]:
    variant, seed, args = job
    import ray
    import torch

    from smac_rllib.cli.progress import fresh_evaluation

    torch.set_num_threads(1)

    smac_rllib.register()
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, configure_logging=False)
    algo = make_config(variant, args, seed).build_algo()
    rows, t0 = [], time.time()
    try:
        while True:
            result = algo.train()
            steps = int(result["env_runners"]["num_env_steps_sampled_lifetime"])
            ret = result["env_runners"].get("episode_return_mean", float("nan"))
            eval_ret = fresh_evaluation(result)  # None between evaluations (RLlib repeats the last one there)
            eval_ret = float("nan") if eval_ret is None else eval_ret
            learner = result.get("learners", {}).get("default_policy", {})
            rows.append(
                dict(
                    variant=variant,
                    seed=seed,
                    env_steps=steps,
                    frames=2 * steps,
                    train_return=ret,
                    eval_return=eval_ret,
                    updates=result.get("num_updates_lifetime", 0),
                    wall_s=round(time.time() - t0, 1),
                    wm_loss=learner.get("world_model/loss", float("nan")),
                    alpha=learner.get("alpha/value", float("nan")),
                )
            )
            print(
                f"[{variant} seed {seed}] {2 * steps} frames  return {ret:.1f}  eval {eval_ret:.1f}  "
                f"({time.time() - t0:.0f}s)",
                flush=True,
            )
            if steps >= args.env_steps:
                break
        if seed == args.seeds[0] and VARIANTS[variant] > 0:
            save_reconstructions(algo, args.out / "pixel_reconstructions.png", args.context)
    finally:
        algo.stop()
        ray.shutdown()
    return rows


def save_reconstructions(algo, path: Path, context: int) -> None:
    """Rows: truth, posterior reconstruction, open-loop prior from step ``context`` (Dreamer-style)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    import torch

    from smac_rllib.models.conv import preprocess_image

    module = algo.learner_group._learner.module["default_policy"].unwrapped()
    wm = module.world_model
    sample = algo.local_replay_buffer.sample(batch_size_B=1, batch_length_T=16)
    with torch.no_grad():
        obs = torch.from_numpy(sample["obs"])
        actions = torch.from_numpy(sample["actions"]).float()
        prev_actions = torch.cat([torch.zeros_like(actions[:, :1]), actions[:, :-1]], dim=1)
        is_first = torch.from_numpy(sample["is_first"])
        embed = wm.encoder(preprocess_image(obs))
        post, _ = wm.rssm.observe(embed, prev_actions, is_first)
        recon = wm.decoder(wm.rssm.get_feat(post))
        last = {k: v[:, context - 1] for k, v in post.items()}
        prior = wm.rssm.imagine(prev_actions[:, context:], last)
        openloop = torch.cat([recon[:, :context], wm.decoder(wm.rssm.get_feat(prior))], dim=1)
    to_img = lambda x: np.clip(x[0].numpy() + 0.5, 0, 1)  # noqa: E731
    truth = preprocess_image(obs)
    T = truth.shape[1]
    fig, axes = plt.subplots(3, T, figsize=(T * 0.9, 3.2))
    for t in range(T):
        for row, (name, imgs) in enumerate([("truth", truth), ("posterior", recon), ("open loop", openloop)]):
            axes[row, t].imshow(to_img(imgs[:, t]))
            axes[row, t].axis("off")
            if t == 0:
                axes[row, t].set_title(name, fontsize=7, loc="left")
    fig.suptitle(f"world model after training; open-loop prior from step {context}", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def plot(rows, path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for variant in VARIANTS:
        for seed in sorted({r["seed"] for r in rows}):
            rs = [
                r
                for r in rows
                if r["variant"] == variant and r["seed"] == seed and r["eval_return"] == r["eval_return"]
            ]
            ax.plot(
                [r["frames"] for r in rs],
                [r["eval_return"] for r in rs],
                marker="o",
                label=f"{variant} seed {seed}",
                color="C0" if VARIANTS[variant] else "C1",
                alpha=0.5 + 0.25 * seed,
            )
    ax.set_xlabel("frames (action repeat 2)")
    ax.set_ylabel("deterministic evaluation return")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--env", default="dmc/cartpole-swingup")
    parser.add_argument("--env-steps", type=int, default=6000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--preset", default="small")
    parser.add_argument("--batch-B", type=int, default=16)
    parser.add_argument("--batch-T", type=int, default=32)
    parser.add_argument("--updates-per-env-step", type=float, default=0.05)
    parser.add_argument("--learning-starts", type=int, default=1000)
    parser.add_argument("--context", type=int, default=5)
    parser.add_argument(
        "--eval-every", type=int, default=2, help="iterations (500 agent steps each) between evaluations"
    )
    parser.add_argument("--eval-episodes", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    jobs = [(v, s, args) for v in VARIANTS for s in args.seeds]
    with mp.get_context("spawn").Pool(args.workers) as pool:
        rows = [r for rs in pool.map(run_one, jobs) for r in rs]
    write_csv(rows, args.out / "pixel_learning.csv")
    plot(rows, args.out / "pixel_learning.png", f"{args.env} from pixels (CPU smoke run)")
    lines = [
        f"# {args.env} from 64x64 pixels: SMAC K=32 vs Latent-SAC, short CPU run",
        "",
        f"Command: `.venv/bin/python benchmarks/pixel_learning.py --env {args.env} --env-steps {args.env_steps} "
        f"--seeds {' '.join(map(str, args.seeds))} --preset {args.preset} --batch-B {args.batch_B} --batch-T "
        f"{args.batch_T} --updates-per-env-step {args.updates_per_env_step} --learning-starts {args.learning_starts} "
        f"--eval-every {args.eval_every} --eval-episodes {args.eval_episodes} --out {args.out}`",
        f"Settings: world model `{args.preset}`, fast render, B x T = {args.batch_B} x {args.batch_T}, "
        f"{args.updates_per_env_step} updates per env step (reference: 0.2 at 50 x 50), learning after "
        f"{args.learning_starts} env steps (uniform random actions before), history particles, the reference defaults "
        "otherwise (alpha0 1.0, Dreamer actor head, critic on all K+1 particles, conditional TD entropy, MLMC level 0 "
        f"averaged). Deterministic evaluation (posterior-mean belief, tanh(mean)) of {args.eval_episodes} episodes "
        f"every {args.eval_every * 1000} frames. 2-core CPU, each run one process, torch 1 thread.",
        "",
        "| variant | seed | frames | eval returns (every eval) | last train return | best train return | updates | "
        "wall time (s) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for v in VARIANTS:
        for s in args.seeds:
            rs = [r for r in rows if r["variant"] == v and r["seed"] == s]
            best = max((r["train_return"] for r in rs if r["train_return"] == r["train_return"]), default=float("nan"))
            evals = ", ".join(f"{r['eval_return']:.1f}" for r in rs if r["eval_return"] == r["eval_return"])
            lines.append(
                f"| {v} | {s} | {rs[-1]['frames']} | {evals} | {rs[-1]['train_return']:.1f} | {best:.1f} "
                f"| {rs[-1]['updates']} | {rs[-1]['wall_s']} |"
            )
    write_page(args.out / "pixel_learning.md", "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
