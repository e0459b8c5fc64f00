"""The eager pixel update before and after the sync-free refactor (docs/design.md §10), side by side in one process.

    .venv/bin/python benchmarks/pixel_update_speed.py --preset small --batch 16x32 --particles 0 32 --updates 12

"before" is the frozen 58c9715 update (tests/reference_pixel_update.py), "after" today's ``PixelUpdate.step``; both on
copies of the same nets, the same batch and the same pre-drawn noise, alternating update by update (ABAB...) so a
machine whose speed drifts slows both alike. Reports the median seconds per update (wall and this thread's CPU time)
and the ratio before / after with a 95% bootstrap interval over the paired updates; writes pixel_update_speed.{csv,md}.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from report import write_csv, write_page  # noqa: E402  (benchmarks/ is the script's directory)


def make_update(preset: str, num_particles: int, mode: str, seed: int = 0):
    from smac_rllib.algorithms.smac.smac_fields import _FIELDS
    from smac_rllib.objectives.pixel_update import PixelUpdate
    from smac_rllib.training.fields import resolved_defaults

    torch.manual_seed(seed)
    fields = resolved_defaults(
        _FIELDS, pixels=True, world_model_preset=preset, num_particles=num_particles, particle_mode=mode, autocast=None
    )
    return PixelUpdate.from_fields(fields, 6)


def make_batch(B: int, T: int, seed: int = 0) -> dict:
    g = torch.Generator().manual_seed(seed)
    is_first = torch.zeros(B, T, dtype=torch.bool)
    is_first[:, 0] = True
    is_first[::3, T // 2] = True  # a seam inside every third row
    return {
        "obs": torch.randint(0, 256, (B, T, 64, 64, 3), dtype=torch.uint8, generator=g),
        "actions": torch.rand(B, T, 6, generator=g) * 2 - 1,
        "rewards": torch.rand(B, T, generator=g),
        "is_first": is_first,
        "is_terminated": torch.zeros(B, T, dtype=torch.bool),
    }


def bootstrap_ratio(
    before: list[float], after: list[float], draws: int = 2000, seed: int = 0
) -> tuple[float, float, float]:
    """median(before) / median(after) and a 95% interval from resampling the paired updates."""
    rng = np.random.default_rng(seed)
    b, a = np.asarray(before), np.asarray(after)
    idx = rng.integers(0, len(b), size=(draws, len(b)))
    ratios = np.median(b[idx], axis=1) / np.median(a[idx], axis=1)
    return float(np.median(b) / np.median(a)), float(np.quantile(ratios, 0.025)), float(np.quantile(ratios, 0.975))


def main(argv=None) -> None:
    from smac_rllib.objectives.pixel_update import UpdateNoise
    from tests.reference_pixel_update import as_58c9715_layout, reference_step

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="small")
    p.add_argument("--batch", default="16x32", help="B x T")
    p.add_argument("--particles", type=int, nargs="+", default=[0, 32])
    p.add_argument("--mode", default="history")
    p.add_argument("--updates", type=int, default=12)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "pixel_update_speed"))
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    B, T = (int(x) for x in args.batch.split("x"))
    rows = []
    for K in args.particles:
        after = make_update(args.preset, K, args.mode)
        before = as_58c9715_layout(copy.deepcopy(after))  # the same values in 58c9715's conv weight layout
        batch = make_batch(B, T)
        times = {"before": [], "after": [], "before_cpu": [], "after_cpu": []}
        for i in range(args.warmup + args.updates):
            noise = UpdateNoise.draw(after.settings, B, T, after.world_model.rssm.stoch_size, 6, torch.device("cpu"))
            for name, run in (
                ("before", lambda b=before, x=batch, n=noise: reference_step(b, x, n)),  # bound now: this round's
                ("after", lambda a=after, x=batch, n=noise: a.step(x, n)),
            ):
                w0, c0 = time.perf_counter(), time.thread_time()
                run()
                if i >= args.warmup:
                    times[name].append(time.perf_counter() - w0)
                    times[name + "_cpu"].append(time.thread_time() - c0)
        ratio, lo, hi = bootstrap_ratio(times["before"], times["after"])
        cpu_ratio, cpu_lo, cpu_hi = bootstrap_ratio(times["before_cpu"], times["after_cpu"])
        rows.append(
            {
                "preset": args.preset,
                "batch": args.batch,
                "variant": f"k{K}_{args.mode}" if K else "k0",
                "updates": args.updates,
                "before_s": round(statistics.median(times["before"]), 4),
                "after_s": round(statistics.median(times["after"]), 4),
                "speedup_wall": round(ratio, 3),
                "speedup_wall_ci95": f"[{lo:.3f}, {hi:.3f}]",
                "before_cpu_s": round(statistics.median(times["before_cpu"]), 4),
                "after_cpu_s": round(statistics.median(times["after_cpu"]), 4),
                "speedup_cpu": round(cpu_ratio, 3),
                "speedup_cpu_ci95": f"[{cpu_lo:.3f}, {cpu_hi:.3f}]",
            }
        )
        print(rows[-1], flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_csv(rows, out / "pixel_update_speed.csv")
    lines = [
        "# Eager pixel update, before (58c9715, frozen) vs after the sync-free refactor\n",
        f"`{' '.join(['python', 'benchmarks/pixel_update_speed.py', *(argv or sys.argv[1:])])}`; one CPU thread, "
        "alternating updates on identical noise; speedup = median before / median after, 95% bootstrap interval.\n",
        "| " + " | ".join(rows[0]) + " |",
        "|" + "---|" * len(rows[0]),
    ]
    lines += ["| " + " | ".join(str(v) for v in r.values()) + " |" for r in rows]
    write_page(out / "pixel_update_speed.md", "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
