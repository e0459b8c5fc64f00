"""A poor man's py-spy: samples every thread's innermost Python frame in a live run (the device has no py-spy;
docs/gpu.md). Standard library only, so it imports in a moment. ``ReplayLearnerMixin`` starts it in the learner's
process when ``SMAC_PROFILE_THREADS=<dir>`` is set (smac_rllib/algorithms/replay_learner.py)."""

from __future__ import annotations

import collections
import os
import sys
import threading
import time

_SAMPLER_STARTED = False


def start_stack_sampler(out_dir: str, interval_s: float = 0.005, every_s: float = 20.0) -> None:
    """A poor man's py-spy for a live run (the device has none; docs/gpu.md): every ``interval_s`` it records
    the innermost Python frame of every thread of this process, and every ``every_s`` writes, per thread, the
    share of samples at each ``file:line function`` to ``out_dir/stacks-<pid>.txt``. Where the update thread's
    wall time goes (a torch op's Python line, a lock, a wait), beside what the other threads were doing then.
    On with ``SMAC_PROFILE_THREADS=<dir>`` in the learner's environment."""
    global _SAMPLER_STARTED
    if _SAMPLER_STARTED:
        return
    _SAMPLER_STARTED = True
    counts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)

    def run() -> None:
        me, last = threading.get_ident(), time.perf_counter()  # the sampler leaves itself out
        while True:
            time.sleep(interval_s)
            names = {t.ident: t.name for t in threading.enumerate()}
            for ident, frame in sys._current_frames().items():
                if ident != me:
                    code = frame.f_code
                    where = f"{code.co_filename.rsplit('site-packages/', 1)[-1]}:{frame.f_lineno} {code.co_name}"
                    name = names.get(ident, str(ident))
                    counts[name][where] += 1
                    while frame is not None and "smac_rllib" not in frame.f_code.co_filename:
                        frame = frame.f_back
                    if frame is not None:  # the innermost line of ours on that stack
                        code = frame.f_code
                        ours = f"{code.co_filename.rsplit('smac_rllib/', 1)[-1]}:{frame.f_lineno} {code.co_name}"
                        counts[f"{name}, innermost smac_rllib line"][ours] += 1
            if time.perf_counter() - last > every_s:
                last = time.perf_counter()
                lines = []
                for name, counter in sorted(counts.items()):
                    total = sum(counter.values())
                    lines.append(f"## thread {name}: {total} samples every {interval_s * 1e3:.0f} ms")
                    lines += [f"{n / total:7.3f}  {where}" for where, n in counter.most_common(25)]
                os.makedirs(out_dir, exist_ok=True)
                with open(os.path.join(out_dir, f"stacks-{os.getpid()}.txt"), "w") as f:
                    f.write("\n".join(lines) + "\n")

    threading.Thread(target=run, name="smac-stack-sampler", daemon=True).start()
