"""Where the state learner's per-update time goes beyond a plain PyTorch loop (docs/design.md §9).

    python benchmarks/state_update_breakdown.py --num-particles 0 --updates 100

Four variants, interleaved, one thread, batch 256, medians: the RLlib learner's update as the training loop calls
it; the same without ``loss_metrics`` (the per-update diagnostics); the same without any ``MetricsLogger`` call;
``state_speed.PlainLoop`` with the fused Adam (the same module and losses, no bookkeeping). The differences are
the cost of the diagnostics, of RLlib's own per-update logging, and of the rest of the learner's wrapper.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repo root
sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/state_speed.py


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--num-particles", type=int, default=0)
    parser.add_argument("--updates", type=int, default=100)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument(
        "--clock",
        choices=("wall", "thread"),
        default="wall",
        help="wall: perf_counter; thread: this thread's CPU time (less disturbed by other processes)",
    )
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    import state_speed as ss

    from smac_rllib.objectives import losses

    k, batch = args.num_particles, args.batch
    full, no_diag, no_log = (ss._smac_config(k, batch).build_learner(spaces=ss._spaces()) for _ in range(3))
    plain = ss.PlainLoop(ss._smac_config(k, batch), ss._spaces(), fused=True)
    mab = ss.transitions_batch(batch)
    batch_np = dict(mab.policy_batches["default_policy"])
    ts = {"num_env_steps_sampled_lifetime": 10**6}
    loss_metrics = losses.loss_metrics

    clock = time.perf_counter if args.clock == "wall" else time.thread_time

    def update(learner, *, diagnostics: bool, logging: bool) -> None:
        if not diagnostics:
            losses.loss_metrics = lambda *a, **kw: {}
        if not logging:  # every MetricsLogger call of the update goes through this one method (LeanMetricsLogger)
            learner.metrics.log_value = lambda *a, **kw: None
        try:
            learner.update(batch=mab, timesteps=ts, _no_metrics_reduce=True)
        finally:
            losses.loss_metrics = loss_metrics
            learner.metrics.__dict__.pop("log_value", None)

    variants = {
        "RLlib learner update": lambda: update(full, diagnostics=True, logging=True),
        "  without loss_metrics": lambda: update(no_diag, diagnostics=False, logging=True),
        "  without any MetricsLogger call": lambda: update(no_log, diagnostics=False, logging=False),
        "plain loop, fused Adam": lambda: plain.update(batch_np),
    }
    times = {name: [] for name in variants}
    for rep in range(args.updates + 3):
        for name, step in variants.items():
            t0 = clock()
            step()
            if rep >= 3:
                times[name].append(clock() - t0)
    print(f"K={k}, batch {batch}, one thread, median of {args.updates} interleaved updates ({args.clock} clock):")
    for name, t in times.items():
        print(f"  {name:34s} {statistics.median(t) * 1e3:7.2f} ms")


if __name__ == "__main__":
    main()
