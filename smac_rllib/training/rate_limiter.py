"""Samples-per-insert rate limiting for the asynchronous actor-learner (docs/design.md §8).

Pure bookkeeping, no Ray and no threads. Two sides run at their own speed and each is blocked when it gets
ahead of the other (as Reverb's ``SampleToInsertRatio``):

- the learner may run update ``u`` only once ``u <= floor(ratio * (stored - learning_starts))``: the same
  update count the synchronous loop would have run after ``stored`` env steps (``granted_updates``);
- the runners may start sampling ``n`` more env steps only while, counting every step already requested, the
  inserts stay at most ``max_lead_env_steps`` ahead of the updates done: ``(stored + in_flight + n -
  learning_starts) * ratio - updates_done <= max_lead_env_steps * ratio`` (``may_insert``).

A runner never waits for a learner that has no granted update left (counting the steps in flight): with a lead
shorter than one update's worth of env steps (``1 / ratio``, e.g. 50 at ratio 0.02) both sides would wait for each
other forever. So over any window of W env steps after the warm-up, the observed updates per env step differ from
``ratio`` by at most ``ratio * max(max_lead_env_steps, request + 1 / ratio) / W`` (plus one update of rounding): the
learner's backlog at every insert is between 0 and the larger of ``max_lead_env_steps * ratio`` and
``request * ratio + 1`` updates. Enough lead (one request per runner) lets the
runners sample the next fragment while the learner works through the last one; that overlap is the point.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class SampleToInsertRatio:
    updates_per_env_step: float
    learning_starts: int
    max_lead_env_steps: int

    def __post_init__(self):
        if not self.updates_per_env_step > 0:
            raise ValueError(f"updates_per_env_step={self.updates_per_env_step!r} must be > 0")
        if self.max_lead_env_steps < 1:
            raise ValueError(f"max_lead_env_steps={self.max_lead_env_steps!r} must be >= 1")

    def granted_updates(self, env_steps_stored: int) -> int:
        """Updates the learner may have run once ``env_steps_stored`` steps are in the replay (sync loop's count)."""
        steps_after_warm_up = max(0, env_steps_stored - self.learning_starts)
        # + 1e-9: 0.2 * 5 is 1.0000000000000002 or 0.9999999999999999 depending on the path; count it as 1
        return int(math.floor(self.updates_per_env_step * steps_after_warm_up + 1e-9))

    def may_insert(
        self, *, env_steps_stored: int, env_steps_in_flight: int, request_env_steps: int, updates_done: int
    ) -> bool:
        """Whether a runner may start sampling ``request_env_steps`` more steps now."""
        projected = env_steps_stored + env_steps_in_flight + request_env_steps
        if projected <= self.learning_starts:
            return True  # the warm-up never waits for the learner
        if updates_done >= self.granted_updates(env_steps_stored + env_steps_in_flight):
            return True  # the learner has nothing granted left, even once the requests in flight land: never wait
        backlog_updates = self.granted_updates(projected) - updates_done
        return backlog_updates <= self.updates_per_env_step * self.max_lead_env_steps + 1e-9


def default_max_lead_env_steps(request_env_steps: int, num_runners: int) -> int:
    """One request per runner in flight while the learner works through as many steps already stored."""
    return max(1, 2 * request_env_steps * max(1, num_runners))


def windowed_ratio_errors(
    env_steps_at_update: list[int], *, ratio: float, learning_starts: int, window: int, total_env_steps: int
) -> list[float]:
    """Relative error of updates per env step over consecutive windows of ``window`` env steps after the warm-up.

    ``env_steps_at_update[u]`` is the replay's env-step count when update ``u`` started. The policy-lag metric:
    every entry should be within +-0.05 (``(observed - ratio) / ratio``).
    """
    errors = []
    start = learning_starts
    while start + window <= total_env_steps:
        done = sum(1 for s in env_steps_at_update if start < s <= start + window)
        errors.append((done / window - ratio) / ratio)
        start += window
    return errors
