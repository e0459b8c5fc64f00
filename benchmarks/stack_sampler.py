"""Profiling aids, not part of the package: a poor man's py-spy that samples every thread's innermost Python frame in a
live run (the device has no py-spy; benchmarks/results/gpu/README.md) and an op probe. Standard library only at
import, so it loads in a moment. ``AsyncLearnerMixin`` loads this file by its path (``async_learner.profiling_aids``)
in the learner's process when ``SMAC_PROFILE_THREADS=<dir>`` or ``SMAC_OP_PROBE=<n>`` is set."""

from __future__ import annotations

import collections
import os
import sys
import threading
import time

_SAMPLER_STARTED = False


def start_stack_sampler(out_dir: str, interval_s: float = 0.005, every_s: float = 20.0) -> None:
    """A poor man's py-spy for a live run (the device has none; benchmarks/results/gpu/PLAN.md): every ``interval_s`` it
    records the innermost Python frame of every thread of this process, and every ``every_s`` writes, per thread, the
    share of samples at each ``file:line function`` to ``out_dir/stacks-<pid>.txt``. Where the update thread's
    wall time goes (a torch op's Python line, a lock, a wait), beside what the other threads were doing then.
    Each thread's heading also has its CPU time over the sampled wall time (``thread_cpu_seconds``) and, on Linux,
    the share of state reads (every 10th sample) in which the kernel had it running (``R``, ``thread_state``): a
    thread that sits in a torch op's line while not running is waiting (for the GIL, a driver lock, the GPU), one
    that runs there is slow on the CPU. The file's first line is the process's garbage collections so far, per
    generation: count and seconds (``gc.callbacks``); a collection holds the GIL, so every other thread waits
    through it.
    On with ``SMAC_PROFILE_THREADS=<dir>`` in the learner's environment."""
    global _SAMPLER_STARTED
    if _SAMPLER_STARTED:
        return
    _SAMPLER_STARTED = True
    counts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    running, state_samples = collections.Counter(), collections.Counter()  # per name: state R / state read
    spans: dict[int, list] = {}  # thread ident: [name, wall, CPU s at its first sample, wall, CPU s at its last]
    errors: list = [0, ""]
    gc_stats = _watch_gc()
    state_every = 10  # the scheduler state is read from /proc (file I/O releases the GIL): every 10th tick only

    def sample(me: int, tick: int) -> None:
        threads = {t.ident: t for t in threading.enumerate()}
        for ident, frame in sys._current_frames().items():
            if ident == me:
                continue
            code = frame.f_code
            where = f"{code.co_filename.rsplit('site-packages/', 1)[-1]}:{frame.f_lineno} {code.co_name}"
            thread = threads.get(ident)
            name = thread.name if thread is not None else str(ident)
            counts[name][where] += 1
            cpu_s = thread_cpu_seconds(ident)
            if cpu_s is not None:  # per ident: a name reused by a new thread adds its own span
                now = time.perf_counter()
                span = spans.setdefault(ident, [name, now, cpu_s, now, cpu_s])
                span[0], span[3], span[4] = name, now, cpu_s
            if tick % state_every == 0 and thread is not None:
                state = thread_state(thread.native_id)
                if state is not None:
                    state_samples[name] += 1
                    running[name] += state == "R"
            while frame is not None and "smac_rllib" not in frame.f_code.co_filename:
                frame = frame.f_back
            if frame is not None:  # the innermost line of ours on that stack
                code = frame.f_code
                ours = f"{code.co_filename.rsplit('smac_rllib/', 1)[-1]}:{frame.f_lineno} {code.co_name}"
                counts[f"{name}, innermost smac_rllib line"][ours] += 1

    def cpu_share(name: str) -> str:
        wall_s = sum(s[3] - s[1] for s in spans.values() if s[0] == name)
        if wall_s <= 0:
            return ""
        cpu_s = sum(s[4] - s[2] for s in spans.values() if s[0] == name)
        out = f"; on CPU {cpu_s / wall_s:.0%} of wall"
        if state_samples[name]:
            out += f", running (R) in {running[name] / state_samples[name]:.0%} of {state_samples[name]} state reads"
        return out

    def write() -> None:
        lines = [
            f"# gc: {gc_stats.summary()}; wall {time.perf_counter() - gc_stats.since:.1f} s since the sampler started"
            + (f"; sampler errors: {errors[0]} (last: {errors[1]})" if errors[0] else "")
        ]
        for name, counter in sorted(counts.items()):
            total = sum(counter.values())
            cpu = cpu_share(name) if not name.endswith(", innermost smac_rllib line") else ""
            lines.append(f"## thread {name}: {total} samples every {interval_s * 1e3:.0f} ms{cpu}")
            lines += [f"{n / total:7.3f}  {where}" for where, n in counter.most_common(25)]
        os.makedirs(out_dir, exist_ok=True)
        with open(os.path.join(out_dir, f"stacks-{os.getpid()}.txt"), "w") as f:
            f.write("\n".join(lines) + "\n")

    def run() -> None:
        me, last, tick = threading.get_ident(), time.perf_counter(), 0  # the sampler leaves itself out
        while True:
            time.sleep(interval_s)
            tick += 1
            try:
                sample(me, tick)
                if time.perf_counter() - last > every_s:
                    last = time.perf_counter()
                    write()
            except Exception as err:  # noqa: BLE001 -- a profiler must not die silently, nor stop the run
                errors[0] += 1
                errors[1] = f"{type(err).__name__}: {err}"

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


def thread_cpu_seconds(ident: int) -> float | None:
    """CPU seconds of one thread of this process (by ``threading`` ident, i.e. its pthread id), from its
    per-thread CPU clock: no file I/O, so the GIL is not released (POSIX; None elsewhere or when it has gone)."""
    try:
        return time.clock_gettime(time.pthread_getcpuclockid(ident))
    except (AttributeError, OSError, OverflowError, ValueError):
        return None


def thread_state(native_id: int | None) -> str | None:
    """The scheduler state letter (``R`` running, ``S`` sleeping, ...) of one thread of this process, from
    ``/proc/self/task/<tid>/stat`` (Linux; None elsewhere or when the thread has gone)."""
    if native_id is None:
        return None
    try:
        with open(f"/proc/self/task/{native_id}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]  # after "pid (comm)": the state, field 3
    except (OSError, IndexError):
        return None


def op_probe(device, calls: int = 200, python_loops: int = 200_000) -> dict[str, float]:
    """Times a fixed workload in the calling thread, to compare one process's host-side speed with another's
    (benchmarks/results/gpu/README.md, fourth device run): ``linear_us``, the wall microseconds per ``F.linear`` call
    (1650 x 230 @ 230 -> 300, the RSSM's shape at B=50, K+1=33; synchronized at the end on CUDA); ``linear_cpu_us``,
    this thread's CPU microseconds per call over the same loop; ``python_ns``, nanoseconds per iteration of a
    pure-Python loop (no torch: the interpreter's own speed there). Imports torch lazily (this module is standard
    library only)."""
    import torch

    x = torch.randn(1650, 230, device=device)
    w = torch.randn(300, 230, device=device)
    torch.nn.functional.linear(x, w)  # warm: the first call may load a kernel
    if x.device.type == "cuda":
        torch.cuda.synchronize(x.device)
    cpu0, wall0 = time.thread_time(), time.perf_counter()
    for _ in range(calls):
        torch.nn.functional.linear(x, w)
    if x.device.type == "cuda":
        torch.cuda.synchronize(x.device)
    wall_s, cpu_s = time.perf_counter() - wall0, time.thread_time() - cpu0
    start, total = time.perf_counter(), 0
    for i in range(python_loops):
        total += i & 7
    python_s = time.perf_counter() - start
    return {
        "linear_us": wall_s / calls * 1e6,
        "linear_cpu_us": cpu_s / calls * 1e6,
        "python_ns": python_s / python_loops * 1e9,
    }


def op_probe_every() -> int:
    """``SMAC_OP_PROBE=<n>``: probe every n-th update (0 = off); read once, when the update thread starts."""
    every = os.environ.get("SMAC_OP_PROBE", "0")
    try:
        return max(int(every), 0)
    except ValueError:
        raise ValueError(f"SMAC_OP_PROBE={every!r} must be a whole number of updates (0: off)") from None


def op_probe_report(device) -> str:
    """``op_probe`` and ``dispatch_facts`` as one line: ``linear_us=… linear_cpu_us=… python_ns=…; profile_hook=…``."""
    return " ".join(f"{k}={v:.2f}" for k, v in op_probe(device).items()) + "; " + dispatch_facts()


def maybe_op_probe(device, updates_done: int, every: int) -> None:
    """Every ``every``-th update (from the update thread, async_learner.py; 0 = never) prints
    ``[op-probe pid=… update=…] `` + ``op_probe_report`` to stderr; with ``SMAC_PROFILE_THREADS=<dir>`` it also
    appends the line to ``<dir>/op-probe-<pid>.txt``."""
    if not every or updates_done % every:
        return
    line = f"[op-probe pid={os.getpid()} update={updates_done}] " + op_probe_report(device)
    print(line, file=sys.stderr, flush=True)
    out_dir = os.environ.get("SMAC_PROFILE_THREADS")  # the CLI keeps workers' stderr off the driver: also to a file
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
        with open(os.path.join(out_dir, f"op-probe-{os.getpid()}.txt"), "a") as f:
            f.write(line + "\n")


def dispatch_facts() -> str:
    """What in this thread could put extra Python or checks on every torch call: a profile or trace hook, torch
    function modes on the stack (e.g. a ``torch.device`` context or ``set_default_device``), anomaly detection,
    deterministic algorithms, the autograd profiler, the default device and dtype, and what RLlib's ``set_torch_seed``
    sets when a config has a seed (cuDNN's flags; ``CUBLAS_WORKSPACE_CONFIG`` on CUDA)."""
    import torch

    facts = {
        "profile_hook": sys.getprofile(),
        "trace_hook": sys.gettrace(),
        "torch_function_modes": torch._C._len_torch_function_stack(),
        "anomaly": torch.is_anomaly_enabled(),
        "deterministic": torch.are_deterministic_algorithms_enabled(),
        "autograd_profiler": torch.autograd.profiler._is_profiler_enabled,
        "default_device": torch.get_default_device() if hasattr(torch, "get_default_device") else "?",
        "default_dtype": torch.get_default_dtype(),
        "cudnn_deterministic": torch.backends.cudnn.deterministic,
        "cudnn_benchmark": torch.backends.cudnn.benchmark,
        "CUBLAS_WORKSPACE_CONFIG": os.environ.get("CUBLAS_WORKSPACE_CONFIG", "(unset)"),
    }
    return " ".join(f"{k}={v}" for k, v in facts.items())
