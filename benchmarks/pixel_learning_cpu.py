"""The pixel path's regression check: the CPU pixel example and its Latent-SAC twin, seeds x algorithms, resumable.

    .venv/bin/python benchmarks/pixel_learning_cpu.py --seeds 0 1 --workers 2      # run what is missing, then summarize
    .venv/bin/python benchmarks/pixel_learning_cpu.py --summarize-only             # rebuild csv / md / png
    .venv/bin/python benchmarks/pixel_learning_cpu.py --seeds 2 --agent-steps 24000 --out benchmarks/results/pixel_long
                                                          # the same settings run twice as long (192k frames)

Each (algorithm, seed) is one ``rllib train file <yaml>`` run (``--yaml``, default
``tuned_examples/smac_pixels_learns.yaml``: SMAC as the file says; ``LatentSAC`` adds ``{"num_particles": 0}``), its own
process and local Ray, under ``benchmarks/results/pixel_learning_runs/<task>/<algo>_s<seed>``. A run stopped early
(killed, timed out) continues with ``--resume`` from its newest checkpoint (replay included); a finished run is skipped.
The summary reads every run's ``progress.csv``: the deterministic evaluation return against frames (agent steps x
action repeat) -> ``pixel_learning_<task>.csv`` (algo, seed, frames, eval_return), ``.png`` (mean and 95% t-interval
over seeds) and ``.md`` (per run: first and last evaluation, their ratio, whether it meets the bar: the last >= 3x the
first and above half the task's maximum, 500).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from report import write_csv, write_page  # noqa: E402
from state_learning import interval95, plot  # noqa: E402

ALGOS = {"SMAC": {}, "LatentSAC": {"num_particles": 0}}
EVAL = "evaluation/env_runners/episode_return_mean"
STEPS = "env_runners/num_env_steps_sampled_lifetime"
HALF_MAX = 500.0  # dm_control returns are at most 1000


def experiment(yaml_path: Path) -> tuple[str, dict]:
    ((name, spec),) = yaml.safe_load(yaml_path.read_text()).items()
    return name, spec


def run_dir(out: Path, task: str, algo: str, seed: int) -> Path:
    return out / "pixel_learning_runs" / task / f"{algo}_s{seed}"


def _results(run: Path) -> list[dict]:
    """Every reported result of the run, in order (Tune's ``result.json`` lines; its progress.csv keeps only the
    first iteration's columns, which have no evaluation yet)."""
    rows = []
    for path in sorted(run.glob("*/*/result.json")):
        with open(path) as f:
            rows += [json.loads(line) for line in f if line.strip()]
    return sorted(rows, key=lambda r: r.get("time_total_s", 0))


def _get(result: dict, key: str):
    for part in key.split("/"):
        result = result.get(part) if isinstance(result, dict) else None
    return result


def finished(run: Path, stop: dict) -> bool:
    rows = _results(run)
    return bool(rows) and all(float(_get(rows[-1], k) or 0) >= v for k, v in stop.items())


def run_one(job) -> str:
    yaml_path, out, task, algo, seed, stop = job
    run = run_dir(out, task, algo, seed)
    if finished(run, stop):
        return f"{algo} seed {seed}: done"
    cmd = [
        str(ROOT / ".venv" / "bin" / "rllib"),
        "train",
        "file",
        str(yaml_path),
        "--seed",
        str(seed),
        "--no-wandb",
        "--no-plot",
        "--storage-path",
        str(run),
    ]
    if ALGOS[algo]:
        cmd += ["--config", json.dumps(ALGOS[algo])]
    cmd += ["--stop", json.dumps(stop)]
    if _results(run):
        cmd += ["--resume"]
    run.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, MUJOCO_GL="egl", PYOPENGL_PLATFORM="egl", RAY_AUTH_MODE="disabled", WANDB_MODE="disabled")
    t0 = time.time()
    with open(run / "stdout.log", "a") as log:
        rc = subprocess.call(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env)
    return f"{algo} seed {seed}: rc={rc} in {time.time() - t0:.0f} s"


def curves(out: Path, task: str, action_repeat: int, eval_every: int) -> list[dict]:
    """One row per evaluation that ran: the iterations that are multiples of ``evaluation_interval`` (the results of
    the others repeat the last evaluation; RLlib's episode counters there are no reliable marker)."""
    rows = []
    for algo in ALGOS:
        for run in sorted((out / "pixel_learning_runs" / task).glob(f"{algo}_s*")):
            seed, seen = int(run.name.rsplit("_s", 1)[1]), set()
            for r in _results(run):
                it = r.get("training_iteration", 0)
                if it % eval_every or it in seen or _get(r, EVAL) is None:
                    continue
                seen.add(it)  # a resumed run may report an iteration twice
                rows.append(
                    {
                        "algo": algo,
                        "seed": seed,
                        "frames": int(_get(r, STEPS)) * action_repeat,
                        "eval_return": float(_get(r, EVAL)),
                        "wall_s": round(float(r.get("time_total_s", 0)), 1),
                    }
                )
    return rows


def summarize(rows: list[dict], out: Path, task: str, yaml_path: Path, stop: dict) -> None:
    stem = f"pixel_learning_{task.replace('-', '_')}"
    write_csv(
        [{k: r[k] for k in ("algo", "seed", "frames", "eval_return")} for r in rows]
        or [{"algo": "", "seed": "", "frames": "", "eval_return": ""}],
        out / f"{stem}.csv",
    )
    if rows:
        plot(
            rows,
            out / f"{stem}.png",
            f"{task} from pixels, 2-core CPU ({yaml_path.name})",
            x="frames",
            xlabel="frames",
            algos=list(ALGOS),
        )
    lines = [
        f"# {task} from 64x64 pixels on a 2-core CPU: SMAC vs Latent-SAC\n",
        f"Command: `.venv/bin/python benchmarks/pixel_learning_cpu.py --yaml {yaml_path.relative_to(ROOT)} --seeds "
        f"...`; settings: `{yaml_path.relative_to(ROOT)}` (its header says what differs from the paper); stop {stop}. "
        "Deterministic evaluation (5 episodes). Bar: last evaluation >= 3x the first and > 500.\n",
        "| algo | seed | evaluations | first (frames) | last (frames) | best | last / first | bar | wall (s) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for algo in ALGOS:
        for seed in sorted({r["seed"] for r in rows if r["algo"] == algo}):
            rs = [r for r in rows if r["algo"] == algo and r["seed"] == seed]
            first, last = rs[0], rs[-1]
            ratio = last["eval_return"] / first["eval_return"] if first["eval_return"] > 0 else float("inf")
            bar = ratio >= 3 and last["eval_return"] > HALF_MAX
            lines.append(
                f"| {algo} | {seed} | {len(rs)} | {first['eval_return']:.1f} ({first['frames']}) | "
                f"{last['eval_return']:.1f} ({last['frames']}) | {max(r['eval_return'] for r in rs):.1f} | "
                f"{ratio:.1f} | {'yes' if bar else 'no'} | {last['wall_s']:.0f} |"
            )
    frames = sorted({r["frames"] for r in rows})
    if frames:
        lines += ["", "Mean and 95% t-interval over seeds at the last common evaluation:", ""]
        for algo in ALGOS:
            by_seed = {}
            for r in rows:
                if r["algo"] == algo:
                    by_seed.setdefault(r["seed"], []).append(r)
            if not by_seed:
                continue
            common = min(rs[-1]["frames"] for rs in by_seed.values())
            vals = [
                max((r for r in rs if r["frames"] <= common), key=lambda r: r["frames"])["eval_return"]
                for rs in by_seed.values()
            ]
            mean, half = interval95(vals)
            lines.append(f"- {algo} @ {common} frames: {mean:.1f} ± {half:.1f} (n={len(vals)})")
    write_page(out / f"{stem}.md", "\n".join(lines) + "\n")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--yaml", default=str(ROOT / "tuned_examples" / "smac_pixels_learns.yaml"))
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    p.add_argument("--algos", nargs="+", default=list(ALGOS), choices=list(ALGOS))
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    p.add_argument(
        "--agent-steps",
        type=int,
        help="replaces the file's stop (agent steps sampled); use with its own "
        "--out, e.g. the longer runs: --agent-steps 24000 --out benchmarks/results/pixel_long",
    )
    p.add_argument("--summarize-only", action="store_true")
    args = p.parse_args(argv)
    yaml_path, out = Path(args.yaml).resolve(), Path(args.out)
    _, spec = experiment(yaml_path)
    task = spec["env"].split("/", 1)[-1]
    stop = {STEPS: args.agent_steps} if args.agent_steps else spec.get("stop", {})
    action_repeat = int(spec["config"].get("env_config", {}).get("action_repeat", 2))
    if not args.summarize_only:
        jobs = [(yaml_path, out, task, a, s, stop) for s in args.seeds for a in args.algos]
        with ThreadPoolExecutor(args.workers) as pool:
            for line in pool.map(run_one, jobs):
                print(line, flush=True)
    eval_every = int(spec["config"].get("evaluation_interval") or 1)
    summarize(curves(out, task, action_repeat, eval_every), out, task, yaml_path, stop)
    print((out / f"pixel_learning_{task.replace('-', '_')}.md").read_text())


if __name__ == "__main__":
    main()
