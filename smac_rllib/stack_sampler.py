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
    On Linux each thread's heading also has its CPU time over the sampled wall time and the share of samples in
    which the kernel had it running (``R``): a thread that sits in a torch op's line while not running is waiting
    (for the GIL, a driver lock, the GPU), one that runs there is slow on the CPU (``thread_cpu``). The file's first
    line is the process's garbage collections so far, per generation: count and seconds (``gc.callbacks``); a
    collection holds the GIL, so every other thread waits through it.
    On with ``SMAC_PROFILE_THREADS=<dir>`` in the learner's environment."""
    global _SAMPLER_STARTED
    if _SAMPLER_STARTED:
        return
    _SAMPLER_STARTED = True
    counts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    running: collections.Counter = collections.Counter()  # samples in which the thread was in state R
    cpu_first: dict[str, tuple[float, float]] = {}  # name: (wall, CPU seconds) at its first sample
    cpu_last: dict[str, tuple[float, float]] = {}
    gc_stats = _watch_gc()

    def run() -> None:
        me, last = threading.get_ident(), time.perf_counter()  # the sampler leaves itself out
        while True:
            time.sleep(interval_s)
            threads = {t.ident: t for t in threading.enumerate()}
            for ident, frame in sys._current_frames().items():
                if ident != me:
                    code = frame.f_code
                    where = f"{code.co_filename.rsplit('site-packages/', 1)[-1]}:{frame.f_lineno} {code.co_name}"
                    thread = threads.get(ident)
                    name = thread.name if thread is not None else str(ident)
                    counts[name][where] += 1
                    state_cpu = thread_cpu(thread.native_id) if thread is not None else None
                    if state_cpu is not None:
                        running[name] += state_cpu[0] == "R"
                        cpu_last[name] = (time.perf_counter(), state_cpu[1])
                        cpu_first.setdefault(name, cpu_last[name])
                    while frame is not None and "smac_rllib" not in frame.f_code.co_filename:
                        frame = frame.f_back
                    if frame is not None:  # the innermost line of ours on that stack
                        code = frame.f_code
                        ours = f"{code.co_filename.rsplit('smac_rllib/', 1)[-1]}:{frame.f_lineno} {code.co_name}"
                        counts[f"{name}, innermost smac_rllib line"][ours] += 1
            if time.perf_counter() - last > every_s:
                last = time.perf_counter()
                lines = [f"# gc: {gc_stats.summary()}; wall {time.perf_counter() - gc_stats.since:.1f} s since the sampler started"]
                for name, counter in sorted(counts.items()):
                    total = sum(counter.values())
                    cpu = ""
                    if name in cpu_first and cpu_last[name][0] > cpu_first[name][0]:
                        wall_s, cpu_s = (b - a for a, b in zip(cpu_first[name], cpu_last[name]))
                        cpu = f"; on CPU {cpu_s / wall_s:.0%} of wall, running (R) in {running[name] / total:.0%} of samples"
                    lines.append(f"## thread {name}: {total} samples every {interval_s * 1e3:.0f} ms{cpu}")
                    lines += [f"{n / total:7.3f}  {where}" for where, n in counter.most_common(25)]
                os.makedirs(out_dir, exist_ok=True)
                with open(os.path.join(out_dir, f"stacks-{os.getpid()}.txt"), "w") as f:
                    f.write("\n".join(lines) + "\n")

    threading.Thread(target=run, name="smac-stack-sampler", daemon=True).start()


class _GCStats:
    """Counts and times this process's garbage collections per generation, from ``gc.callbacks``."""

    def __init__(self):
        self.since = time.perf_counter()
        self.count = [0, 0, 0]
        self.seconds = [0.0, 0.0, 0.0]
        self._start: float | None = None

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        elif self._start is not None:
            generation = min(int(info.get("generation", 2)), 2)
            self.count[generation] += 1
            self.seconds[generation] += time.perf_counter() - self._start
            self._start = None

    def summary(self) -> str:
        return ", ".join(f"gen{g} {self.count[g]} x, {self.seconds[g]:.3f} s" for g in range(3))


def _watch_gc() -> _GCStats:
    import gc

    stats = _GCStats()
    gc.callbacks.append(stats)
    return stats


_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def thread_cpu(native_id: int | None) -> tuple[str, float] | None:
    """(scheduler state letter, user + system CPU seconds) of one thread of this process, from
    ``/proc/self/task/<tid>/stat`` (Linux; None elsewhere or when the thread has gone)."""
    if native_id is None:
        return None
    try:
        with open(f"/proc/self/task/{native_id}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()  # after "pid (comm)": state is field 3, utime 14, stime 15
    except OSError:
        return None
    return fields[0], (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS
