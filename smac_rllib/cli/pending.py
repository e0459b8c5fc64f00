"""What a PENDING trial waits for, said every minute instead of nothing.

On a cluster (``--address``) a trial waits while its placement group does not fit: its resources are taken by other
trials, or no node offers them until an autoscaler adds one. Every ``PENDING_EVERY_S`` seconds each trial pending that
long gets one line: what it asks for, what the cluster has free and in all, and why that cannot fit now::

    [1] pending 2m00s: asks for CPU 5, GPU 1 (3 bundles, PACK); free now CPU 2 of 16, GPU 0 of 1: waits for CPU, GPU

A local Ray never gets here with a placement it cannot give (resources.py refuses it before Ray); there a pending
trial is only reported when no trial runs (the run would otherwise be silent).
"""

from __future__ import annotations

import time

import ray
from ray import tune

from smac_rllib.cli.progress import trial_label
from smac_rllib.cli.results import format_duration

PENDING_EVERY_S = 60.0


def describe_wait(
    request: dict[str, float],
    bundles: int,
    strategy: str,
    available: dict[str, float],
    total: dict[str, float],
    nodes: int | None = None,
) -> str:
    """``asks for CPU 5 (3 bundles, PACK); free now CPU 2 of 16: waits for CPU``; names what no node offers and a
    STRICT_SPREAD wider than the cluster."""
    asked = {k: v for k, v in request.items() if v > 0}
    names = sorted(asked, key=_order)
    parts = ", ".join(f"{k} {_amount(asked[k])}" for k in names)
    free = ", ".join(f"{k} {_amount(available.get(k, 0.0))} of {_amount(total.get(k, 0.0))}" for k in names)
    why = []
    never = [k for k in names if total.get(k, 0.0) < asked[k]]
    if never:
        why.append(
            "no node offers " + ", ".join(f"{k} {_amount(asked[k])}" for k in never) + " (until an autoscaler adds one)"
        )
    if strategy == "STRICT_SPREAD" and nodes is not None and bundles > nodes:
        why.append(f"STRICT_SPREAD needs {bundles} nodes, the cluster has {nodes}")
    short = [k for k in names if k not in never and available.get(k, 0.0) < asked[k]]
    if short:
        why.append("waits for " + ", ".join(short) + " that other trials hold")
    reason = "; ".join(why) or "waits for Ray to place its bundles"
    return f"asks for {parts or 'nothing'} ({bundles} bundle{'s' if bundles != 1 else ''}, {strategy}); free now " + (
        f"{free}: {reason}" if free else reason
    )


def _amount(value: float) -> str:
    return f"{value:.4g}"  # CPU 16, GPU 0.5


def _order(key: str) -> tuple[int, str]:
    return ({"CPU": 0, "GPU": 1}.get(key, 2), key)


def trial_request(trial) -> tuple[dict[str, float], int, str]:
    """(resources, bundles, strategy) of a Tune trial's placement group."""
    pgf = getattr(trial, "placement_group_factory", None)
    if pgf is None:
        return {}, 0, "?"
    bundles = [b for b in (getattr(pgf, "bundles", None) or []) if any(v > 0 for v in b.values())]
    return dict(pgf.required_resources), len(bundles), str(getattr(pgf, "strategy", "PACK"))


def cluster_state() -> tuple[dict[str, float], dict[str, float], int | None]:
    """(available, total, alive nodes) of the Ray this process is connected to."""
    try:
        nodes = sum(1 for n in ray.nodes() if n.get("Alive"))
    except Exception:  # noqa: BLE001 - the node table is a nicety
        nodes = None
    return ray.available_resources(), ray.cluster_resources(), nodes


class PendingReporter(tune.Callback):
    """Every ``every_s`` seconds, one line per trial PENDING that long (on a cluster; locally only when none runs)."""

    def __init__(self, cluster: bool, every_s: float = PENDING_EVERY_S):
        self.cluster, self.every_s = cluster, every_s
        self._since: dict[str, float] = {}  # trial id -> when it was first seen pending
        self._last_report = 0.0

    def on_step_begin(self, iteration, trials, **info):
        for line in self.lines(trials, time.monotonic(), cluster_state):
            print(line, flush=True)

    def lines(self, trials, now: float, state) -> list[str]:
        """The lines due at ``now`` (``state()``: available, total, nodes; read only when a line is due)."""
        pending = [t for t in trials if getattr(t, "status", None) == "PENDING"]
        for trial in pending:
            self._since.setdefault(trial.trial_id, now)
        for trial_id in set(self._since) - {t.trial_id for t in pending}:
            del self._since[trial_id]  # started (or ended)
        if not self.cluster and any(getattr(t, "status", None) == "RUNNING" for t in trials):
            return []
        due = [t for t in pending if now - self._since[t.trial_id] >= self.every_s]
        if not due or now - self._last_report < self.every_s:
            return []
        self._last_report = now
        available, total, nodes = state()
        return [
            f"[{trial_label(t)}] pending {format_duration(now - self._since[t.trial_id])}: "
            + describe_wait(*trial_request(t), available, total, nodes)
            for t in due
        ]
