"""What each update path asks of torch: aten operator calls per update, counted by the torch profiler (CPU).

    python benchmarks/update_paths_ops.py                      # state K = 0 8 32, pixel K = 0 8
    python benchmarks/update_paths_ops.py --cases pixel --ks 0

Counts do not depend on the machine's load, so they answer what wall-clock ratios on a busy 2-core machine cannot:
whether a path does more work than another. The same three fp32 variants as ``update_paths_speed.py`` (its docstring
describes them), built by its ``build_variants``: ``learner`` (the one update a run takes, through
``learner.update``), ``rllib`` (RLlib's own ``TorchLearner`` path with SMAC's loss), ``step`` (the update function
alone, tensors in). After two updates each, one update per variant is profiled; every aten operator whose call count
differs between the variants is listed. Writes ``update_paths_ops.{csv,md}`` under ``--out``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import torch  # noqa: E402
from report import write_csv, write_page  # noqa: E402
from update_paths_speed import DEFAULT_KS, build_variants  # noqa: E402

VARIANTS = ("learner", "rllib", "step")


def aten_calls(run) -> dict[str, int]:
    """{aten operator: calls} in one call of ``run`` (after two unprofiled ones)."""
    from torch.profiler import ProfilerActivity, profile

    run()
    run()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        run()
    return {e.key: e.count for e in prof.key_averages() if e.key.startswith("aten::")}


def count_case(case: str, k: int, args) -> list[dict]:
    variants, _ = build_variants(case, k, args, fp32_only=True)
    counts = {name: aten_calls(variants[name][1]) for name in VARIANTS if name in variants}
    rows = [{"case": case, "K": k, "op": "ALL", **{v: sum(c.values()) for v, c in counts.items()}}]
    for op in sorted(set().union(*counts.values())):
        row = {v: c.get(op, 0) for v, c in counts.items()}
        if len(set(row.values())) > 1:
            rows.append({"case": case, "K": k, "op": op, **row})
    return rows


def write_markdown(rows: list[dict], args, path: Path) -> None:
    lines = [
        "# aten operator calls per update, per update path (CPU, torch profiler)",
        "",
        f"Command: `python benchmarks/update_paths_ops.py --cases {' '.join(args.cases)}`",
        "",
        f"torch {torch.__version__}. State: batch {args.state_batch}; pixels: preset `{args.preset}`, B x T "
        f"{args.pixel_B} x {args.pixel_T}, history particles. One profiled update per variant after two unprofiled "
        "ones; `ALL` = every aten call; below it, each operator whose count differs between the variants.",
        "",
        "| case | K | op | learner | rllib | step |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        op = f"**{r['op']}**" if r["op"] == "ALL" else f"`{r['op']}`"
        lines.append(f"| {r['case']} | {r['K']} | {op} | {r['learner']} | {r['rllib']} | {r['step']} |")
    write_page(path, "\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> None:
    torch.set_num_threads(1)
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", nargs="+", default=["state", "pixel"], choices=["state", "pixel"])
    p.add_argument("--ks", nargs="+", type=int, help="K values for every case (default: state 0 8 32, pixel 0 8)")
    p.add_argument("--preset", default="small")
    p.add_argument("--pixel-bt", default="16x32")
    p.add_argument("--state-batch", type=int, default=256)
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = p.parse_args(argv)
    args.pixel_B, args.pixel_T = (int(x) for x in args.pixel_bt.split("x"))
    rows = []
    for case in args.cases:
        for k in args.ks or DEFAULT_KS[case]:
            rows += count_case(case, k, args)
            print(f"{case} K={k}: " + ", ".join(f"{v} {rows_all(rows, case, k)[v]}" for v in VARIANTS), flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    write_csv(rows, args.out / "update_paths_ops.csv")
    write_markdown(rows, args, args.out / "update_paths_ops.md")


def rows_all(rows: list[dict], case: str, k: int) -> dict:
    return next(r for r in rows if r["case"] == case and r["K"] == k and r["op"] == "ALL")


if __name__ == "__main__":
    main()
