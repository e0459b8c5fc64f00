"""GPU learner cost of pixel SMAC without Ray: seconds per update, ratio to Latent-SAC, learner-bound frames/s.

    python benchmarks/gpu_learner.py                                   # on the device: cuda, paper preset, every row
    python benchmarks/gpu_learner.py --device cpu --sizes 4x8 --preset tiny --num-particles 4 --iters 1 --warmup 1

Imports torch and our pure modules only (``smac_rllib.objectives.pixel_update``, ``smac_rllib.models``,
``smac_rllib.objectives.losses``): the device machine has no ray, dm_control or gymnasium. One update =
``PixelUpdate.step``, the same math as the RLlib learner (tested equal in tests/test_gpu_learner_bench.py): world-model
ELBO, K+1 belief particles, actor, critic on all particles, alpha, one backward, clipping, Adam, Polyak. Frames are
uint8 already on the device (the host->device copy of one batch from pinned memory is timed separately, ``h2d_ms``).

Rows: B x T in ``--sizes`` x variant (Latent-SAC K=0, SMAC K "step", SMAC K "history") x precision (fp32, bf16,
fp16 with a grad scaler) x compile mode (eager; torch.compile of the training forward, "default" and
"reduce-overhead" = CUDA graphs where the graph allows). Timed with CUDA events (perf_counter on CPU) after
``--warmup`` updates; peak memory from ``torch.cuda.max_memory_allocated``. Learner-bound frames/s at
``--updates-per-agent-step`` (reference: 0.2 = 100 updates per 1000 frames at action repeat 2):
``action_repeat / updates_per_agent_step / seconds_per_update``. A row that fails (e.g. a compile error) is
written with its error, not dropped. Writes gpu_learner.{csv,md} under ``--out``.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
import traceback
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repo root: smac_rllib without installing it
sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/report.py

from report import write_csv, write_page  # noqa: E402

from smac_rllib.algorithms.smac.smac_fields import _FIELDS as SMAC_FIELDS  # noqa: E402  (loads without ray)
from smac_rllib.objectives import pixel_update  # noqa: E402
from smac_rllib.objectives.pixel_update import PixelUpdate  # noqa: E402
from smac_rllib.training.fields import resolved_defaults  # noqa: E402

PRECISIONS = {"fp32": None, "bf16": "bf16", "fp16": "fp16"}  # the `autocast` setting of each precision
ACTION_DIM = 6  # cheetah-run


def make_update(
    num_particles: int, particle_mode: str, autocast, preset: str, device: torch.device, critic_particles: str = "all"
) -> PixelUpdate:
    fields = resolved_defaults(  # a fresh pixel SMAC config's settings (the field table's defaults) at these sizes
        SMAC_FIELDS,
        pixels=True,
        world_model_preset=preset,
        num_particles=num_particles,
        particle_mode=particle_mode,
        autocast=autocast,
        critic_particles=critic_particles,
    )
    return PixelUpdate.from_fields(fields, ACTION_DIM).to(device)


def fake_batch(batch_B: int, batch_T: int, device: torch.device, generator: torch.Generator) -> dict:
    is_first = torch.zeros(batch_B, batch_T, dtype=torch.bool)
    is_first[:, 0] = True
    batch = {
        "obs": torch.randint(0, 256, (batch_B, batch_T, 64, 64, 3), dtype=torch.uint8, generator=generator),
        "actions": torch.rand(batch_B, batch_T, ACTION_DIM, generator=generator) * 2 - 1,
        "rewards": torch.rand(batch_B, batch_T, generator=generator),
        "is_first": is_first,
        "is_terminated": torch.zeros(batch_B, batch_T, dtype=torch.bool),
    }
    return {k: v.to(device) for k, v in batch.items()}


def h2d_ms(batch_B: int, batch_T: int, device: torch.device, repeats: int = 10) -> float:
    """Milliseconds to copy one uint8 frame batch host -> device from pinned memory (non_blocking)."""
    if device.type != "cuda":
        return 0.0
    frames = torch.randint(0, 256, (batch_B, batch_T, 64, 64, 3), dtype=torch.uint8).pin_memory()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    frames.to(device, non_blocking=True)
    start.record()
    for _ in range(repeats):
        frames.to(device, non_blocking=True)
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / repeats


def time_updates(update: PixelUpdate, batch: dict, warmup: int, iters: int, device: torch.device) -> float:
    """Seconds per update after ``warmup`` updates (CUDA events on a GPU, perf_counter on CPU)."""
    for _ in range(warmup):
        update.step(batch)
    if device.type == "cuda":
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            update.step(batch)
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end) / 1000.0 / iters
    t0 = time.perf_counter()
    for _ in range(iters):
        update.step(batch)
    return (time.perf_counter() - t0) / iters


def run_row(
    args,
    size: tuple[int, int],
    variant: tuple[str, int, str],
    precision: str,
    compile_mode: str,
    device,
    critic_particles: str = "all",
) -> dict:
    (batch_B, batch_T), (name, num_particles, particle_mode) = size, variant
    row = dict(
        device=_device_name(device),
        torch=torch.__version__,
        B=batch_B,
        T=batch_T,
        variant=name,
        K=num_particles,
        particle_mode=particle_mode,
        critic_particles=critic_particles,
        precision=precision,
        compile=compile_mode,
        s_per_update=float("nan"),
        peak_mem_gib=float("nan"),
        error="",
    )
    try:
        torch.manual_seed(0)
        update = make_update(num_particles, particle_mode, PRECISIONS[precision], args.preset, device, critic_particles)
        if compile_mode != "eager":  # compile the training forward; graph breaks (masking) fall back to eager
            forward = torch.compile(pixel_update.forward_train, mode=compile_mode)
            original, pixel_update.forward_train = pixel_update.forward_train, forward
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats()
        try:
            batch = fake_batch(batch_B, batch_T, device, torch.Generator().manual_seed(0))
            row["s_per_update"] = time_updates(update, batch, args.warmup, args.iters, device)
        finally:
            if compile_mode != "eager":
                pixel_update.forward_train = original
        if device.type == "cuda":
            row["peak_mem_gib"] = torch.cuda.max_memory_allocated() / 2**30
    except Exception as e:  # noqa: BLE001 -- a failing row is a result too
        row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"
        traceback.print_exc(limit=2)
    frames_per_update = args.action_repeat / args.updates_per_agent_step
    row["learner_frames_per_s"] = frames_per_update / row["s_per_update"]
    print(" | ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()), flush=True)
    return row


def add_ratios(rows: list[dict]) -> None:
    """ratio_to_k0: seconds per update over Latent-SAC's at the same size, precision and compile mode."""
    key = lambda r: (r["B"], r["T"], r["precision"], r["compile"], r["critic_particles"])  # noqa: E731
    base = {key(r): r["s_per_update"] for r in rows if r["K"] == 0}
    for r in rows:
        r["ratio_to_k0"] = r["s_per_update"] / base.get(key(r), float("nan"))


def _device_name(device: torch.device) -> str:
    return (
        torch.cuda.get_device_name(device)
        if device.type == "cuda"
        else f"cpu ({platform.processor() or platform.machine()})"
    )


def write_markdown(rows: list[dict], args, h2d: dict, path: Path) -> None:
    lines = [
        "# Pixel SMAC learner cost without Ray (benchmarks/gpu_learner.py)",
        "",
        f"Command: `python benchmarks/gpu_learner.py {' '.join(args.argv)}`",
        "",
        f"Device: {rows[0]['device']}, torch {torch.__version__}; preset `{args.preset}`, K={args.num_particles}, "
        f"{args.warmup} warm-up + {args.iters} timed updates per row; learner-bound frames/s at "
        f"{args.updates_per_agent_step} updates per agent step, action repeat {args.action_repeat}. "
        "Paper anchor (one Quadro GV100, end to end): SMAC 60 FPS vs Latent-SAC 63 FPS, ratio ~1.05.",
        "",
        "Host->device copy of one uint8 batch (pinned, non_blocking): "
        + ", ".join(f"{b}x{t}: {ms:.2f} ms" for (b, t), ms in h2d.items()),
        "",
        "| B x T | variant | critic on | precision | compile | s / update | ratio to K=0 | learner-bound frames/s | "
        "peak GiB | error |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['B']}x{r['T']} | {r['variant']} | {r['critic_particles']} | {r['precision']} | {r['compile']} | "
            f"{r['s_per_update']:.4f} | {r['ratio_to_k0']:.3f} | {r['learner_frames_per_s']:.1f} | "
            f"{r['peak_mem_gib']:.2f} | {r['error']} |"
        )
    write_page(path, "\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--sizes", default="50x50,16x32", help="B x T batches, comma-separated")
    parser.add_argument("--preset", default="paper", help="world model preset: paper | small | tiny")
    parser.add_argument("--num-particles", type=int, default=32)
    parser.add_argument("--precisions", default="fp32,bf16,fp16")
    parser.add_argument("--compile-modes", default="eager,default,reduce-overhead")
    parser.add_argument("--variants", default="k0,step,history", help="k0 (Latent-SAC), step, history")
    parser.add_argument("--critic-particles", default="all", help="all (reference default) and/or s0, comma-separated")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--updates-per-agent-step", type=float, default=0.2)
    parser.add_argument("--action-repeat", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results" / "gpu")
    args = parser.parse_args(argv)
    args.argv = argv
    device = torch.device(args.device)
    if device.type == "cpu":
        torch.set_num_threads(1)
    else:
        torch.backends.cuda.matmul.allow_tf32 = True  # fp32 rows use TF32 matmuls, as PyTorch recommends on Hopper
        torch.backends.cudnn.allow_tf32 = True
    sizes = [tuple(int(x) for x in s.split("x")) for s in args.sizes.split(",")]
    all_variants = {
        "k0": ("Latent-SAC K=0", 0, "step"),
        "step": (f"SMAC K={args.num_particles} step", args.num_particles, "step"),
        "history": (f"SMAC K={args.num_particles} history", args.num_particles, "history"),
    }
    variants = [all_variants[v] for v in args.variants.split(",")]
    rows = [
        run_row(args, size, variant, precision, mode, device, critic)
        for size in sizes
        for mode in args.compile_modes.split(",")
        for precision in args.precisions.split(",")
        for critic in args.critic_particles.split(",")
        for variant in variants
    ]
    add_ratios(rows)
    h2d = {size: h2d_ms(*size, device) for size in sizes}
    args.out.mkdir(parents=True, exist_ok=True)
    write_csv(rows, args.out / "gpu_learner.csv")
    write_markdown(rows, args, h2d, args.out / "gpu_learner.md")
    print(f"wrote {args.out}/gpu_learner.{{csv,md}}")


if __name__ == "__main__":
    main()
