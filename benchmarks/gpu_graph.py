"""The captured pixel update on the device (docs/design.md §10): eager vs one CUDA graph
(vs graph + a compiled RSSM step).

    python3 benchmarks/gpu_graph.py --out $OUT/graph                       # device call 1: equality, syncs, timings
    python3 benchmarks/gpu_graph.py --modes graph+compile --skip-checks --out $OUT/compile   # call 2: the compile row
    python benchmarks/gpu_graph.py --device cpu --preset tiny --sizes 4x8 --num-particles 4 --iters 1 --warmup 1

Pure torch (no ray, dm_control or gymnasium: the device has none). One update = ``PixelUpdate.step`` (the RLlib
learner's update, tested equal on the CPU); ``graph`` = the same function captured whole by
``smac_rllib.training.fast_update.captured_update.GraphedUpdate`` and replayed. Per call:

1. **checks** (CUDA, once, fp32/TF32, K = ``--num-particles`` history): (a) ``torch.cuda.set_sync_debug_mode("warn")``
   over one eager update -- the number of host syncs (0 expected); (b) eager vs graph over 3 updates on identical
   pre-drawn noise (the graph's noise buffers are static inputs here): the largest relative difference of the
   parameters, Adam moments and step counts, target critics and metrics; (c) replays advance (the weights move every
   replay); (d) a NaN reward inside the graph: weights and moments unchanged, ``nonfinite_update`` 1; (e) re-capture
   after a restore (optimizer ``load_state_dict``): the next update equals eager's from the same state; (f) the
   rounding control: (b)'s measure between two eager copies whose parameters differ by one float32 rounding step;
   (g) each of 3 replays against an eager step from the same state (no re-capture); (h) eager vs eager, unperturbed.
2. **timings**: per size x variant (Latent-SAC K=0, SMAC K history, SMAC K step) x precision (fp32 = TF32 matmuls,
   bf16 autocast) x mode (eager, graph[, graph+compile]): ``--warmup`` then ``--iters`` updates timed by CUDA events
   (perf_counter on the CPU); kernel launches and GPU time of one update from ``torch.profiler``; the capture time.
   K history in graph mode also with the particle re-filter on the main stream (``particle_stream`` off) to show the
   overlap. A row that fails is written with its error, not dropped.

Writes ``pixel_update.csv`` (card, preset, batch, variant, mode, precision, s_per_update, launches_per_update,
gpu_ms_per_update, + capture_s, ratio_to_eager, k_ratio (to Latent-SAC of the same mode and precision),
learner_frames_per_s at 0.2 updates per agent step and action repeat 2, error), ``checks.md`` and ``pixel_update.md``.
"""

from __future__ import annotations

import argparse
import copy
import platform
import sys
import time
import traceback
import warnings
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repo root: smac_rllib without installing it
sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/report.py

from report import write_csv  # noqa: E402

from smac_rllib.algorithms.smac.smac_fields import _FIELDS as SMAC_FIELDS  # noqa: E402  (loads without ray)
from smac_rllib.objectives.pixel_update import PixelUpdate, UpdateNoise  # noqa: E402
from smac_rllib.training.fast_update.captured_update import GraphedUpdate, compile_rssm_step  # noqa: E402
from smac_rllib.training.fields import resolved_defaults  # noqa: E402

ACTION_DIM = 6  # cheetah-run
PRECISIONS = {"fp32": None, "bf16": "bf16"}


def make_update(
    num_particles: int, mode: str, autocast, preset: str, device, particle_stream: bool = True
) -> PixelUpdate:
    """A fresh pixel SMAC config's update (the field table's defaults) at these sizes."""
    torch.manual_seed(0)
    fields = resolved_defaults(
        SMAC_FIELDS,
        pixels=True,
        world_model_preset=preset,
        num_particles=num_particles,
        particle_mode=mode,
        autocast=autocast,
    )
    return PixelUpdate.from_fields(fields, ACTION_DIM, particle_stream=particle_stream).to(device)


def fake_batch(B: int, T: int, device, seed: int = 0) -> dict:
    g = torch.Generator().manual_seed(seed)
    is_first = torch.zeros(B, T, dtype=torch.bool)
    is_first[:, 0] = True
    is_first[::3, T // 2] = True  # episode seams inside rows: the masks matter
    batch = {
        "obs": torch.randint(0, 256, (B, T, 64, 64, 3), dtype=torch.uint8, generator=g),
        "actions": torch.rand(B, T, ACTION_DIM, generator=g) * 2 - 1,
        "rewards": torch.rand(B, T, generator=g),
        "is_first": is_first,
        "is_terminated": torch.zeros(B, T, dtype=torch.bool),
    }
    return {k: v.to(device) for k, v in batch.items()}


def graphed(update: PixelUpdate, batch: dict, *, noise: UpdateNoise | None = None) -> GraphedUpdate:
    """``update.step`` in a ``GraphedUpdate``; with ``noise``, its buffers are static inputs (refilled by the
    caller)."""
    step_fn = update.step if noise is None else (lambda b: update.step(b, noise))
    return GraphedUpdate(
        step_fn,
        batch,
        optimizers=list(update.optimizers.values()),
        state_tensors=lambda: list(update.parameters()),
        use_graph=batch["obs"].is_cuda,
    )


def _sync(device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_updates(step, batch: dict, warmup: int, iters: int, device) -> float:
    for _ in range(warmup):
        step(batch)
    _sync(device)
    if device.type == "cuda":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            step(batch)
        end.record()
        torch.cuda.synchronize(device)
        return start.elapsed_time(end) / 1000 / iters
    t0 = time.perf_counter()
    for _ in range(iters):
        step(batch)
    return (time.perf_counter() - t0) / iters


def profile_one(step, batch: dict, device) -> tuple[int, float]:
    """(kernel launches, GPU milliseconds) of one update; (aten ops, CPU ms) on the CPU."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities) as prof:
        step(batch)
        _sync(device)
    events = prof.events()
    if device.type == "cuda":
        kernels = [e for e in events if e.device_type == torch.autograd.DeviceType.CUDA]
        return len(kernels), sum(e.device_time for e in kernels) / 1000
    ops = [e for e in events if e.name.startswith("aten::") and e.cpu_parent is None]
    return len(ops), sum(e.self_cpu_time_total for e in events) / 1000


# ----- checks -----------------------------------------------------------------------------------------------------
def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.detach().double(), b.detach().double()
    return float((a - b).norm() / b.norm().clamp(min=1e-12))


def _state(update: PixelUpdate) -> dict:
    out = {f"param {k}": v for k, v in update.state_dict().items()}
    for name, opt in update.optimizers.items():
        for i, st in enumerate(opt.state.values()):
            out |= {f"adam {name} {i} {k}": v for k, v in st.items()}
    return out


def _noise(update: PixelUpdate, batch: dict, device, static: UpdateNoise | None = None) -> UpdateNoise:
    """Fresh draws for one update of ``batch``'s shape; copied into a graph's ``static`` noise buffers too."""
    B, T = batch["actions"].shape[:2]
    noise = UpdateNoise.draw(update.settings, B, T, update.world_model.rssm.stoch_size, ACTION_DIM, device)
    if static is not None:
        for dst, src in zip(static.tensors(), noise.tensors(), strict=True):
            dst.copy_(src)
    return noise


def _worst_by_group(a: PixelUpdate, b: PixelUpdate) -> dict[str, float]:
    """{"param" | "adam" | "adam step": the largest relative difference of b's tensors to a's in that group}."""
    state_b, worst = _state(b), {}
    for k, v in _state(a).items():
        group = k.split(" ")[0] + (" step" if k.endswith(" step") else "")
        worst[group] = max(worst.get(group, 0.0), _rel(state_b[k], v))
    return worst


def _metric_gap(m_a: dict, m_b: dict) -> float:
    """The largest relative difference of two updates' tensor metrics (floor 1e-6 under the reference value)."""
    return max(
        (abs(float(v) - float(m_b[k])) / max(abs(float(v)), 1e-6) for k, v in m_a.items() if torch.is_tensor(v)),
        default=0.0,
    )


def _by_group(worst: dict[str, float]) -> str:
    return ", ".join(f"{g} {w:.2e}" for g, w in sorted(worst.items()))


def run_checks(args, device, out: Path) -> list[str]:
    lines = [
        f"# Checks: eager vs one CUDA graph ({_card(device)}, preset {args.preset}, {args.check_size}, "
        f"K={args.num_particles} history, fp32, TF32 {args.check_tf32})\n"
    ]
    B, T = (int(x) for x in args.check_size.split("x"))
    K = args.num_particles
    batch = fake_batch(B, T, device)
    eager = make_update(K, "history", None, args.preset, device)
    eager.step(batch)  # Adam's state exists: the sync probe sees a steady-state update
    # (a) host syncs of one eager update
    if device.type == "cuda":
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            torch.cuda.set_sync_debug_mode("warn")
            try:
                eager.step(batch)
                _sync(device)
            finally:
                torch.cuda.set_sync_debug_mode("default")
        # torch warns "called a synchronizing CUDA operation" per sync;
        # its "debug mode is a prototype" notice is no sync
        syncs = [str(w.message).splitlines()[0] for w in caught if "called a synchronizing" in str(w.message)]
        lines.append(
            f"- (a) host syncs in one eager update: **{len(syncs)}**" + "".join(f"\n  - {s}" for s in syncs[:10])
        )
    # (b) eager vs graph, 3 updates, identical noise
    start = copy.deepcopy(eager)  # for (f)
    graph_update = copy.deepcopy(eager)
    static_noise = _noise(eager, batch, device)
    runner = graphed(graph_update, batch, noise=static_noise)
    metric_worst, moved = 0.0, []
    for _ in range(3):
        noise = _noise(eager, batch, device, static_noise)
        before = {k: v.clone() for k, v in graph_update.state_dict().items()}
        m_eager, m_graph = eager.step(batch, noise), runner.step(batch)
        moved.append(sum(not torch.equal(before[k], v) for k, v in graph_update.state_dict().items()))
        metric_worst = max(metric_worst, _metric_gap(m_eager, m_graph))
    lines.append(
        "- (b) eager vs graph after 3 updates on identical noise, largest relative difference (norm): "
        + _by_group(_worst_by_group(eager, graph_update))
        + f"; metrics {metric_worst:.2e} "
        f"(captures: {runner.captures})"
    )
    lines.append(f"- (c) tensors moved by each replay: {moved} of {len(graph_update.state_dict())}")
    # (d) a NaN reward inside the graph
    bad = dict(batch, rewards=batch["rewards"].clone())
    bad["rewards"][0, 3] = float("nan")
    kept = {k: v.clone() for k, v in _state(graph_update).items() if not k.startswith("param target_qf")}
    flag = float(runner.step(bad)["nonfinite_update"])
    unchanged = all(torch.equal(kept[k], v) for k, v in _state(graph_update).items() if k in kept)
    lines.append(
        f"- (d) NaN reward in a replay: nonfinite_update = {flag:.0f}, weights/moments/steps unchanged: {unchanged}"
    )
    # (e) re-capture after a restore
    saved = copy.deepcopy(
        {"model": graph_update.state_dict(), "opt": {n: o.state_dict() for n, o in graph_update.optimizers.items()}}
    )
    runner.step(batch)
    graph_update.load_state_dict(saved["model"])
    for name, opt in graph_update.optimizers.items():
        opt.load_state_dict(saved["opt"][name])  # new state tensors: the graph points at the old ones
    runner.invalidate()
    reference = copy.deepcopy(graph_update)
    reference.step(batch, _noise(graph_update, batch, device, static_noise))
    runner.step(batch)
    rel = max(_worst_by_group(reference, graph_update).values())
    lines.append(
        f"- (e) after a restore and re-capture (captures: {runner.captures}): largest relative difference to eager "
        f"from the same state {rel:.2e}"
    )
    lines.append(rounding_control(start, batch, device))
    lines.append(resync_control(graph_update, runner, static_noise, batch, device))
    lines.append(nondeterminism_control(start, batch, device))
    (out / "checks.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines), flush=True)
    return lines


def resync_control(update: PixelUpdate, runner: GraphedUpdate, static_noise, batch: dict, device) -> str:
    """(g) each replay against an eager step from the *same* state (a copy taken just before it), 3 replays without
    re-capture: rounding-size gaps on every replay rule out state the graph fails to refresh between replays; a jump
    on a later replay would be a real difference."""
    gaps = []
    for _ in range(3):
        reference = copy.deepcopy(update)
        reference.step(batch, _noise(update, batch, device, static_noise))
        runner.step(batch)
        gaps.append(max(_worst_by_group(reference, update).values()))
    return "- (g) each replay vs an eager step from the same state: " + ", ".join(f"{g:.2e}" for g in gaps)


def nondeterminism_control(start: PixelUpdate, batch: dict, device) -> str:
    """(h) two eager copies of the same state, no perturbation, 3 updates on identical noise: the device's own
    run-to-run differences (atomics in some backward kernels); exactly 0 where every kernel is deterministic."""
    a, b = copy.deepcopy(start), copy.deepcopy(start)
    for _ in range(3):
        noise = _noise(a, batch, device)
        a.step(batch, noise)
        b.step(batch, noise)
    worst = max(_worst_by_group(a, b).values())
    return f"- (h) eager vs eager from the same state, 3 updates: largest relative difference {worst:.2e}"


def rounding_control(start: PixelUpdate, batch: dict, device, updates: int = 3) -> str:
    """(f) what rounding alone does to (b)'s measure: two eager copies of ``start``, one with every parameter moved by
    one float32 rounding step (x (1 +- 2^-24), random signs), 3 updates on identical noise. A graph whose (b) is no
    larger than this computes the eager function up to rounding."""
    a, b = copy.deepcopy(start), copy.deepcopy(start)
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in b.parameters():
            signs = torch.randint(0, 2, p.shape, generator=g).to(p.device, p.dtype) * 2 - 1
            p.mul_(1 + signs * 2.0**-24)
    metric_worst = 0.0
    for _ in range(updates):
        noise = _noise(a, batch, device)
        metric_worst = max(metric_worst, _metric_gap(a.step(batch, noise), b.step(batch, noise)))
    return (
        f"- (f) rounding alone (eager vs eager with every parameter moved by one float32 rounding step), {updates} "
        f"updates on identical noise, the same measure as (b): {_by_group(_worst_by_group(a, b))}; metrics "
        f"{metric_worst:.2e}"
    )


# ----- timings ----------------------------------------------------------------------------------------------------
def run_row(
    args,
    size: tuple[int, int],
    variant: tuple[str, int, str],
    precision: str,
    mode: str,
    device,
    particle_stream: bool = True,
) -> dict:
    B, T = size
    name, K, particle_mode = variant
    row = {
        "card": _card(device),
        "preset": args.preset,
        "batch": f"{B}x{T}",
        "variant": name,
        "mode": mode,
        "precision": precision,
        "particle_stream": particle_stream if K and particle_mode == "history" else "",
        "s_per_update": float("nan"),
        "launches_per_update": "",
        "gpu_ms_per_update": "",
        "capture_s": "",
        "error": "",
    }
    try:
        update = make_update(K, particle_mode, PRECISIONS[precision], args.preset, device, particle_stream)
        batch = fake_batch(B, T, device)
        if mode == "eager":
            step = update.step
        else:
            if mode == "graph+compile":
                compile_rssm_step(update.world_model.rssm)
            runner = graphed(update, batch)
            t0 = time.perf_counter()
            runner.step(batch)  # the capture (warm-up, capture, first replay)
            _sync(device)
            row["capture_s"] = round(time.perf_counter() - t0, 2)
            step = runner.step
        row["s_per_update"] = time_updates(step, batch, args.warmup, args.iters, device)
        launches, gpu_ms = profile_one(step, batch, device)
        row["launches_per_update"], row["gpu_ms_per_update"] = launches, round(gpu_ms, 3)
    except Exception as e:  # noqa: BLE001 -- a failed row is a result
        row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"
        traceback.print_exc()
    finally:
        if device.type == "cuda":
            torch.cuda.empty_cache()
    print(
        {
            k: row[k]
            for k in (
                "batch",
                "variant",
                "mode",
                "precision",
                "particle_stream",
                "s_per_update",
                "launches_per_update",
                "gpu_ms_per_update",
                "capture_s",
                "error",
            )
        },
        flush=True,
    )
    return row


def add_ratios(rows: list[dict]) -> None:
    def find(r, **kw):
        return next(
            (
                x
                for x in rows
                if all(x[k] == v for k, v in ({**{k: r[k] for k in ("batch", "precision")}, **kw}).items())
                and x["particle_stream"] in ("", True)
            ),
            None,
        )

    for r in rows:
        eager = find(r, variant=r["variant"], mode="eager")
        k0 = find(r, variant="k0", mode=r["mode"])
        r["ratio_to_eager"] = round(r["s_per_update"] / eager["s_per_update"], 3) if eager else ""
        r["k_ratio"] = round(r["s_per_update"] / k0["s_per_update"], 3) if k0 else ""
        r["learner_frames_per_s"] = (
            round(2 / 0.2 / r["s_per_update"], 1) if r["s_per_update"] == r["s_per_update"] else ""
        )


def _card(device) -> str:
    return (
        torch.cuda.get_device_name(device)
        if device.type == "cuda"
        else f"cpu ({platform.processor() or platform.machine()})"
    )


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))  # the first paragraph
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--preset", default="paper")
    p.add_argument("--sizes", default="50x50", help="comma-separated B x T")
    p.add_argument("--num-particles", type=int, default=32)
    p.add_argument("--variants", default="k0,history,step", help="comma-separated: k0, history, step")
    p.add_argument("--precisions", default="fp32,bf16")
    p.add_argument("--modes", default="eager,graph", help="comma-separated: eager, graph, graph+compile")
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--skip-checks", action="store_true")
    p.add_argument("--check-size", default="50x50")
    p.add_argument(
        "--check-tf32",
        choices=["on", "off"],
        default="on",
        help="TF32 matmuls in the checks (off: strict fp32, so eager vs graph differences are not TF32 rounding)",
    )
    p.add_argument(
        "--compile-timeout", type=float, default=200.0, help="seconds: skip later compile rows after one took longer"
    )
    p.add_argument("--out", default="benchmarks/results/gpu/graph")
    args = p.parse_args(argv)
    device = torch.device(args.device)
    torch.backends.cuda.matmul.allow_tf32 = True  # fp32 rows: TF32 matmuls (the learner's default on an H100)
    torch.backends.cudnn.allow_tf32 = True
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    facts = f"torch {torch.__version__}, {_card(device)}, python {platform.python_version()}"
    print(facts, flush=True)
    if not args.skip_checks:
        try:
            torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = args.check_tf32 == "on"
            run_checks(args, device, out)
        except Exception:  # noqa: BLE001 -- the timings still run
            (out / "checks.md").write_text("# Checks failed\n\n```\n" + traceback.format_exc() + "```\n")
            traceback.print_exc()
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
    K = args.num_particles
    variants = {
        "k0": ("k0", 0, "history"),
        "history": (f"k{K}_history", K, "history"),
        "step": (f"k{K}_step", K, "step"),
    }
    rows = []
    for size in [tuple(int(x) for x in s.split("x")) for s in args.sizes.split(",")]:
        for precision in args.precisions.split(","):
            for mode in args.modes.split(","):
                if mode != "eager" and device.type != "cuda":
                    continue  # a CUDA graph needs a CUDA device; the CPU runs the eager rows (tests)
                for v in args.variants.split(","):
                    t0 = time.perf_counter()
                    rows.append(run_row(args, size, variants[v], precision, mode, device))
                    if mode == "graph+compile" and time.perf_counter() - t0 > args.compile_timeout:
                        print(
                            f"compile row took {time.perf_counter() - t0:.0f} s > --compile-timeout: stopping the "
                            "compile rows"
                        )
                        break
                if mode != "eager" and "history" in args.variants.split(
                    ","
                ):  # the overlap's worth: the same on one stream
                    rows.append(
                        run_row(args, size, variants["history"], precision, mode, device, particle_stream=False)
                    )
    add_ratios(rows)
    write_csv(rows, out / "pixel_update.csv")
    keys = [
        "batch",
        "variant",
        "mode",
        "precision",
        "particle_stream",
        "s_per_update",
        "ratio_to_eager",
        "k_ratio",
        "learner_frames_per_s",
        "launches_per_update",
        "gpu_ms_per_update",
        "capture_s",
        "error",
    ]
    lines = [
        f"# Pixel update: eager vs captured ({facts})\n",
        f"`python3 benchmarks/gpu_graph.py {' '.join(argv or sys.argv[1:])}`\n",
        "| " + " | ".join(keys) + " |",
        "|" + "---|" * len(keys),
    ]
    lines += ["| " + " | ".join(f"{r[k]:.4f}" if k == "s_per_update" else str(r[k]) for k in keys) + " |" for r in rows]
    (out / "pixel_update.md").write_text("\n".join(lines) + "\n")
    if hasattr(torch.compiler, "save_cache_artifacts") and "graph+compile" in args.modes:
        try:
            artifacts = torch.compiler.save_cache_artifacts()
            if artifacts is not None:
                (out / "compile_cache.bin").write_bytes(artifacts[0])
        except Exception:  # noqa: BLE001
            traceback.print_exc()


if __name__ == "__main__":
    main()
