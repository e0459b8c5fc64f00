"""One self-contained paper-size pixel learning run in a device window (a checkpoint with its replay cannot come back
from the device): ``tuned_examples/smac_pixels.yaml`` (SMAC K=32, or Latent-SAC with ``--algo LatentSAC``) on one GPU
for ``--minutes``, then its evaluation curve as ``learning.csv`` (algo, seed, frames, eval_return, card, wall_s) and a
summary (frames reached, live frames/s) under ``--out``.

    python3 benchmarks/gpu_learning_window.py --algo SMAC --env dmc/cartpole-swingup --minutes 8 --deadline-s 520 \\
        --out $OUT/learn

The env runners render on the GPU's EGL; evaluation as the YAML says (every 5 iterations = 10k frames, 5 episodes,
deterministic). Needs Ray and dm_control (the device bundle, benchmarks/results/gpu/bundle_notes.md).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from pixel_learning_cpu import EVAL, STEPS, _get, _results, experiment  # noqa: E402
from report import write_csv  # noqa: E402

ALGOS = {"SMAC": {}, "LatentSAC": {"num_particles": 0}}


def learning_rows(run: Path, algo: str, seed: int, action_repeat: int, eval_every: int, card: str) -> list[dict]:
    rows, seen = [], set()
    for r in _results(run):
        it = r.get("training_iteration", 0)
        if it % eval_every or it in seen or _get(r, EVAL) is None:
            continue
        seen.add(it)
        rows.append(
            {
                "algo": algo,
                "seed": seed,
                "frames": int(_get(r, STEPS)) * action_repeat,
                "eval_return": float(_get(r, EVAL)),
                "card": card,
                "wall_s": round(float(r.get("time_total_s", 0)), 1),
            }
        )
    return rows


def summary(run: Path, action_repeat: int) -> dict:
    results = _results(run)
    if not results:
        return {"frames": 0, "wall_s": 0.0, "frames_per_s": 0.0}
    last = results[-1]
    frames, wall = int(_get(last, STEPS) or 0) * action_repeat, float(last.get("time_total_s", 0))
    return {
        "frames": frames,
        "wall_s": round(wall, 1),
        "frames_per_s": round(frames / wall, 1) if wall else 0.0,
        "updates": last.get("num_updates_lifetime"),
    }


def _raise_timeout(*_) -> None:
    raise TimeoutError("SIGTERM")


def _stop(child: subprocess.Popen, grace_s: float = 20.0) -> int:
    """Ctrl-C twice (the CLI stops at once, no checkpoint: a window's cannot come back), SIGKILL after ``grace_s``;
    returns the exit code."""
    child.send_signal(signal.SIGINT)
    time.sleep(2.0)
    child.send_signal(signal.SIGINT)
    try:
        return child.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        child.kill()
        return child.wait()


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--algo", choices=list(ALGOS), default="SMAC")
    p.add_argument("--env", default="dmc/cartpole-swingup")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--minutes", type=float, default=8.0)
    p.add_argument("--yaml", default=str(ROOT / "tuned_examples" / "smac_pixels.yaml"))
    p.add_argument("--config", default="{}", help="JSON merged into the config (e.g. fewer runners)")
    p.add_argument("--out", default="benchmarks/results/gpu/learning")
    p.add_argument(
        "--deadline-s",
        type=float,
        default=None,
        help="wall seconds for the whole process (start-up included): the run is stopped (Ctrl-C, then kill) "
        "in time to write its files; set it below the device call's limit (a 6-minute stop needed ~7.5 min)",
    )
    args = p.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    yaml_path = Path(args.yaml)
    _, spec = experiment(yaml_path)
    action_repeat = int(spec["config"].get("env_config", {}).get("action_repeat", 2))
    eval_every = int(spec["config"].get("evaluation_interval") or 1)
    try:
        import torch

        card = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
    except Exception:  # noqa: BLE001
        card = "unknown"
    run = Path("/tmp") / f"learn_{args.algo}_s{args.seed}_{int(time.time())}"
    config = {"env": args.env, **ALGOS[args.algo], **json.loads(args.config)}
    cmd = [
        sys.executable,
        "-m",
        "smac_rllib.cli.main",
        "train",
        "file",
        str(yaml_path),
        "--no-wandb",
        "--no-plot",
        "--seed",
        str(args.seed),
        "--storage-path",
        str(run),
        "--config",
        json.dumps(config),
        "--stop",
        json.dumps({"time_total_s": args.minutes * 60}),
    ]
    t0 = time.time()
    # A SIGTERM (an outer `timeout`) stops the run like the deadline does, so the files below are still written.
    signal.signal(signal.SIGTERM, _raise_timeout)
    with open(out / "train.log", "w") as log:
        child = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ))
        try:
            rc = child.wait(timeout=args.deadline_s)
        except (subprocess.TimeoutExpired, TimeoutError):
            rc = _stop(child)
    rows = learning_rows(run, args.algo, args.seed, action_repeat, eval_every, card)
    write_csv(
        rows or [{"algo": args.algo, "seed": args.seed, "frames": "", "eval_return": "", "card": card, "wall_s": ""}],
        out / "learning.csv",
    )
    facts = {
        "algo": args.algo,
        "env": args.env,
        "seed": args.seed,
        "card": card,
        "rc": rc,
        "process_wall_s": round(time.time() - t0, 1),
        **summary(run, action_repeat),
    }
    for path in run.glob("*/*/result.json"):  # the whole result stream, for what the summary leaves out
        (out / "result.json").write_bytes(path.read_bytes())
    (out / "summary.json").write_text(json.dumps(facts, indent=1) + "\n")
    print(json.dumps(facts), flush=True)


if __name__ == "__main__":
    main()
