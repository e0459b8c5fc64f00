"""``start_stack_sampler`` (benchmarks/stack_sampler.py, the profiling aids, on with ``SMAC_PROFILE_THREADS``): in a
process with a busy named thread, the file it writes has that thread's section with its busy function on top, and
no section for the sampler itself."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _load_aids():
    import importlib.util

    spec = importlib.util.spec_from_file_location("stack_sampler_under_test", ROOT / "benchmarks" / "stack_sampler.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


AIDS = _load_aids()  # standard library only: no torch, no Ray

# The module is standard library only: the child imports it in a moment (no torch, no Ray).
CHILD = r'''
import os, sys, threading, time

sys.path.insert(0, "benchmarks")  # run from the repository root
from stack_sampler import start_stack_sampler

out_dir = sys.argv[1]


def busy_work():
    x = 0
    while True:
        for i in range(1000):
            x += i * i
        for _ in range(100):  # reference cycles, freed only by the collector: it runs now and then
            cycle = []
            cycle.append(cycle)


threading.Thread(target=busy_work, name="busy-thread", daemon=True).start()
start_stack_sampler(out_dir, interval_s=0.002, every_s=0.2)
start_stack_sampler(out_dir, interval_s=0.002, every_s=0.2)  # a second call starts no second sampler
time.sleep(1.0)
sampler_threads = [t.name for t in threading.enumerate() if t.name == "smac-stack-sampler"]
assert sampler_threads == ["smac-stack-sampler"], sampler_threads

# The sampler rewrites the file in place every 0.2 s: leave just after a complete write, never during one.
path = os.path.join(out_dir, f"stacks-{os.getpid()}.txt")
stamp = lambda: os.stat(path).st_mtime_ns if os.path.exists(path) else None
before, deadline = stamp(), time.time() + 10
while time.time() < deadline:
    if stamp() != before:
        text = open(path).read()
        if text.endswith("\n") and "## thread busy-thread:" in text:
            break
    time.sleep(0.005)
print(os.getpid(), flush=True)
os._exit(0)
'''


def sections(text: str) -> dict[str, list[str]]:
    """{thread heading (the text after "## thread " up to the colon): its lines}."""
    out: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if line.startswith("## thread "):
            current = line[len("## thread ") :].rsplit(":", 1)[0]
            out[current] = []
        elif current is not None and line.strip():
            out[current].append(line)
    return out


def test_stack_sampler_records_a_busy_thread_and_not_itself(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    pid = int(proc.stdout.split()[0])
    files = list(tmp_path.glob("stacks-*.txt"))
    assert [f.name for f in files] == [f"stacks-{pid}.txt"]
    found = sections(files[0].read_text())
    assert "busy-thread" in found, found.keys()
    top = found["busy-thread"][:3]
    assert any(line.split()[-1] == "busy_work" for line in top), top
    share = float(found["busy-thread"][0].split()[0])
    assert 0 < share <= 1
    assert not any(name.startswith("smac-stack-sampler") for name in found), found.keys()
    assert "MainThread" in found  # the other threads are sampled too
    first = files[0].read_text().splitlines()[0]
    assert first.startswith("# gc: gen0 ") and int(first.split("gen0 ")[1].split(" x")[0]) > 0, first
    heading = next(line for line in files[0].read_text().splitlines() if line.startswith("## thread busy-thread:"))
    on_cpu = float(heading.split("on CPU ")[1].split("%")[0]) / 100
    running = float(heading.split("running (R) in ")[1].split("%")[0]) / 100
    assert "sampler errors" not in files[0].read_text().splitlines()[0]
    assert on_cpu > 0.2 and running > 0.2, heading  # a pure-Python busy loop: on the CPU whenever it holds the GIL
    idle = next(line for line in files[0].read_text().splitlines() if line.startswith("## thread MainThread:"))
    assert float(idle.split("on CPU ")[1].split("%")[0]) < 30, idle  # the main thread sleeps


def test_thread_cpu_reads_this_thread():
    import threading

    thread_cpu_seconds, thread_state = AIDS.thread_cpu_seconds, AIDS.thread_state

    first = thread_cpu_seconds(threading.get_ident())
    sum(i * i for i in range(200_000))  # some CPU work on this thread
    assert thread_cpu_seconds(threading.get_ident()) > first >= 0

    state = thread_state(threading.get_native_id())
    assert state == "R"  # the calling thread is running while it reads its own stat
    assert thread_state(None) is None and thread_state(2**31 - 7) is None


def test_op_probe_times_a_fixed_loop_and_prints_only_when_asked(monkeypatch, capsys):
    """``op_probe`` (benchmarks/results/gpu/README.md) gives positive per-call times on the CPU; ``maybe_op_probe``
    prints one line every n-th update with ``SMAC_OP_PROBE=n`` (read by ``op_probe_every``) and nothing without it."""
    maybe_op_probe, op_probe, op_probe_every = AIDS.maybe_op_probe, AIDS.op_probe, AIDS.op_probe_every

    result = op_probe("cpu", calls=20, python_loops=20_000)
    assert set(result) == {"linear_us", "linear_cpu_us", "python_ns"}
    assert all(v > 0 for v in result.values())
    assert result["python_ns"] < 1e5  # 100 us per trivial loop iteration would be a broken clock, not a slow machine
    monkeypatch.delenv("SMAC_OP_PROBE", raising=False)
    assert op_probe_every() == 0
    monkeypatch.setenv("SMAC_OP_PROBE", "0")
    assert op_probe_every() == 0  # off, not every update
    monkeypatch.setenv("SMAC_OP_PROBE", "x")
    with pytest.raises(ValueError, match="SMAC_OP_PROBE='x' must be a whole number"):
        op_probe_every()
    monkeypatch.setenv("SMAC_OP_PROBE", "0")
    maybe_op_probe(None, 10, op_probe_every())
    assert capsys.readouterr().err == ""
    monkeypatch.setenv("SMAC_OP_PROBE", "5")
    assert op_probe_every() == 5
    maybe_op_probe(None, 7, op_probe_every())
    assert capsys.readouterr().err == ""
    maybe_op_probe(None, 10, op_probe_every())
    line = capsys.readouterr().err.strip()
    assert line.startswith("[op-probe pid=") and "update=10]" in line and "linear_us=" in line and "python_ns=" in line
    assert "torch_function_modes=0" in line and "profile_hook=None" in line
