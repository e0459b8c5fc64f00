"""Where the RLlib pixel learner's time goes beyond the bare update: the same update through RLlib's Learner, side by
side with ``PixelUpdate`` (the pure-torch update of the same math, equal in tests/test_pixel_update.py).

    python benchmarks/gpu_rllib_learner.py --out $OUT/rllib                  # on the device (needs the Ray bundle)
    python benchmarks/gpu_rllib_learner.py --device cpu --preset tiny --sizes 4x8 --num-particles 4 --iters 2 --warmup 1
    # alone, then beside 14 renderers
    python benchmarks/gpu_rllib_learner.py --iters 20 --render-procs 0,14 --out $OUT/rllib

Measured on an H100 (benchmarks/results/gpu/README.md): 0.154 s per update bare, 0.30 s through RLlib inside the async
loop, at 26% GPU utilization; in a later run, 0.18 s bare and 0.195 s through ``Learner.update`` in this script. It
separates the causes, in one process. The first four modes are interleaved (one update of each mode per round), with
``torch.cuda.synchronize()`` around every timed update:

- ``bare``: ``PixelUpdate.step`` on a batch already on the device (gpu_learner.py's number);
- ``bare + h2d``: the same, the uint8 batch copied from host numpy first (what a learner must do);
- ``rllib``: ``Learner.update(batch=MultiAgentBatch of numpy, _no_metrics_reduce=True)``, as the synchronous loop and
  the async update thread call it (batch conversion, the module's forward, the losses, the metrics, the finite check,
  clipping, fused Adam, Polyak);
- ``rllib + replay``: ``sample_train_batch`` from a filled sequence replay, then ``rllib`` (the sync loop's learner
  step; the async loop runs the sampling on its staging thread instead).

Then, as its own block after the interleaved rounds (not interleaved: its updates run back to back):

- ``rllib async threads``: the same learner and filled replay, the updates run by the learner's own stager and update
  threads exactly as in a live run (``AsyncLearnerMixin``: ``async_attach_replay``, ``async_grant``, ``async_wait``),
  no env runners and no driver loop. ``--warmup`` updates are granted and waited for first (the threads start then),
  then ``--iters`` updates are granted at once; its time is the wall time of those ``--iters`` updates (synchronized
  at the end) / ``--iters``, a mean, not a median. It separates the in-process threading and staging cost from the
  env runners' CPU contention. The threads are stopped (``async_stop``) before the profile.

With ``--render-procs N`` (default 0), N processes beside the learner render cheetah-run the way an env runner
does, without Ray (``render_loop``: our ``DMCEnv`` from ``make_env``, 64x64 pixels, action repeat 2, random actions,
a frame per agent step, MUJOCO_GL=egl unless set). They start before the timed section, every one has rendered a
frame before it begins, and they are stopped after it; their total frames/s over the timed section (its warm-up rounds
and the threads block included) is the ``renderer_frames_per_s`` column, and the GL vendor / renderer they report is in
the md header. On the device EGL is NVIDIA's, so each renderer holds a GL context on the learner's GPU: does GL
rendering there slow the update's many small kernels? A comma list (``--render-procs 0,14``) runs the whole timed
section (the interleaved modes and ``rllib async threads``) once per value on the same learner, in one process, side by
side; ``ratio_to_bare`` is to the same block's ``bare``.

With ``--in-ray-task`` all of that runs in a Ray worker process (a local ``ray.init``, one task with ``num_gpus=1``
on CUDA), as the learner does in a live run (inside the Tune trial's actor): is the update slower in a Ray worker
process than in a plain one, with no env runners, episodes or driver loop around it? Both kinds of run write the
process's facts to the md header (``process_facts``: CPU affinity, torch threads, the GIL switch interval, thread
environment variables, CUDA_VISIBLE_DEVICES), so two runs side by side show what Ray changed.

Then cProfile of ``--profile-iters`` ``rllib`` updates (no renderers): the top functions by own time, written to
``profile.txt`` (the host-side work that keeps the GPU idle). Writes gpu_rllib_learner.{csv,md} and profile.txt under
``--out``.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import multiprocessing as mp
import os
import pstats
import queue
import statistics
import sys
import time
import traceback
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repo root
sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/report.py

from report import write_csv  # noqa: E402

os.environ.setdefault("RAY_AUTH_MODE", "disabled")
ACTION_DIM = 6  # cheetah-run
MODES = ("bare", "bare + h2d", "rllib", "rllib + replay")  # interleaved
THREADS_MODE = "rllib async threads"  # its own block, after the interleaved rounds
RENDER_ENV = "dmc/cheetah-run"
RENDER_ENV_CONFIG = {"from_pixels": True, "image_size": 64, "action_repeat": 2}  # tuned_examples/smac_pixels.yaml's


def render_loop(index: int, frames, ready, parent_pid: int, pixels: bool = True) -> None:
    """One renderer process: what an env runner does for the pixel run, without Ray and without a policy.

    Steps ``RENDER_ENV`` with uniform random actions forever (resetting at episode ends), one 64x64 frame rendered
    per agent step, counted into ``frames[index]``. Puts ``(index, "ok", gl)`` on ``ready`` after its first frame
    (``gl``: the GL vendor / renderer of its context), or ``(index, "error", traceback)``. Ends when its parent has
    gone (a killed benchmark leaves no renderer behind); the parent normally terminates it. ``pixels=False`` steps
    the same physics with state observations and renders nothing: the runners' CPU load without their GL contexts.
    """
    from smac_rllib import headless_gl

    headless_gl()  # before dm_control is imported
    try:
        if "torch" in sys.modules:  # spawn re-imports this script, and with it torch; a runner has one thread
            sys.modules["torch"].set_num_threads(1)
        from smac_rllib.envs import make_env

        env_config = {**RENDER_ENV_CONFIG, "seed": index} if pixels else {"action_repeat": 2, "seed": index}
        env = make_env(RENDER_ENV, env_config)
        rng = np.random.default_rng(index)
        env.reset()
        frames[index] += 1
        ready.put((index, "ok", gl_strings(env) if pixels else "none (physics only, no rendering)"))
        low, high, shape = env.action_space.low, env.action_space.high, env.action_space.shape
        while os.getppid() == parent_pid:
            _, _, terminated, truncated, _ = env.step(rng.uniform(low, high, shape).astype(np.float32))
            frames[index] += 1
            if terminated or truncated:
                env.reset()
                frames[index] += 1
    except BaseException:
        ready.put((index, "error", traceback.format_exc()))
        raise


def gl_strings(env) -> str:
    """GL_VENDOR / GL_RENDERER of the env's GL context (which GPU or software renderer draws the frames)."""
    try:
        from OpenGL import GL

        with env.physics.contexts.gl.make_current() as ctx:
            return " / ".join(ctx.call(GL.glGetString, name).decode() for name in (GL.GL_VENDOR, GL.GL_RENDERER))
    except Exception as err:  # noqa: BLE001 -- informative only
        return f"unknown ({type(err).__name__}: {err})"


class Renderers:
    """``n`` ``render_loop`` processes (multiprocessing 'spawn'), started and stopped by ``with``.

    On entry, waits until every one has rendered its first frame (or raises, naming the one that died or failed,
    after at most ``start_timeout_s``). ``frames()`` is their total frame count so far; ``check_alive()`` raises if
    one has died since.
    """

    def __init__(self, n: int, start_timeout_s: float, pixels: bool = True):
        self.n, self.start_timeout_s, self.pixels = n, start_timeout_s, pixels
        self.gl: set[str] = set()
        self._procs: list = []

    def __enter__(self) -> Renderers:
        if self.n == 0:
            return self
        ctx = mp.get_context("spawn")
        self._frames = ctx.RawArray("q", self.n)  # each renderer writes its own slot only
        ready = ctx.Queue()
        self._procs = [
            ctx.Process(
                target=render_loop,
                args=(i, self._frames, ready, os.getpid(), self.pixels),
                daemon=True,
                name=f"renderer-{i}",
            )
            for i in range(self.n)
        ]
        try:
            for proc in self._procs:
                proc.start()
            self._wait_ready(ready)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self, ready) -> None:
        start, pending = time.perf_counter(), set(range(self.n))
        while pending:
            try:
                index, status, detail = ready.get(timeout=0.5)
            except queue.Empty:
                dead = [(i, self._procs[i].exitcode) for i in sorted(pending) if self._procs[i].exitcode is not None]
                if dead:
                    raise RuntimeError(
                        f"renderer {dead[0][0]} died (exit code {dead[0][1]}) before its first frame; "
                        f"{len(pending)} of {self.n} renderers had not rendered one"
                    ) from None
                if time.perf_counter() - start > self.start_timeout_s:
                    raise TimeoutError(
                        f"{len(pending)} of {self.n} renderers had not rendered a frame after "
                        f"{self.start_timeout_s:.0f} s (--render-start-timeout)"
                    ) from None
                continue
            if status != "ok":
                raise RuntimeError(f"renderer {index} failed before its first frame:\n{detail}")
            pending.discard(index)
            self.gl.add(detail)
        print(
            f"{self.n} renderers ready in {time.perf_counter() - start:.1f} s; GL: {'; '.join(sorted(self.gl))}",
            flush=True,
        )

    def frames(self) -> int:
        return sum(self._frames) if self.n else 0

    def check_alive(self) -> None:
        dead = [(p.name, p.exitcode) for p in self._procs if p.exitcode is not None]
        if dead:
            raise RuntimeError(
                f"{len(dead)} of {self.n} renderers died during the timed section, e.g. {dead[0][0]} "
                f"with exit code {dead[0][1]}: their frames/s would be wrong"
            )

    def stop(self) -> None:
        for proc in self._procs:
            if proc.is_alive():
                proc.terminate()
        for proc in self._procs:
            proc.join(timeout=10)
            if proc.is_alive():
                proc.kill()
                proc.join(timeout=10)
        self._procs = []

    def __exit__(self, *exc) -> None:
        self.stop()


def spaces():
    import gymnasium as gym
    from ray.rllib.core import DEFAULT_MODULE_ID

    obs, act = gym.spaces.Box(0, 255, (64, 64, 3), np.uint8), gym.spaces.Box(-1.0, 1.0, (ACTION_DIM,), np.float32)
    return {"__env__": (obs, act), DEFAULT_MODULE_ID: (obs, act)}


def make_config(args, batch_B: int, batch_T: int, device: str):
    from smac_rllib.algorithms import SMACConfig

    return (
        SMACConfig()
        .environment("dmc/cheetah-run", env_config={"from_pixels": True})
        .training(
            world_model_preset=args.preset,
            num_particles=args.num_particles,
            particle_mode=args.particle_mode,
            batch_size_B=batch_B,
            batch_length_T=batch_T,
            async_learning=False,
        )
        .learners(num_learners=0, num_gpus_per_learner=1 if device == "cuda" else 0)
        .debugging(
            seed=args.seed
        )  # a seed makes RLlib's Learner seed torch: set_torch_seed's CUDA settings, as live runs
        .training(cuda_deterministic=args.cuda_deterministic)  # True keeps them (our learner's build undoes them)
    )


def fake_sequences(batch_B: int, batch_T: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    is_first = np.zeros((batch_B, batch_T), bool)
    is_first[:, 0] = True
    return {
        "obs": rng.integers(0, 256, (batch_B, batch_T, 64, 64, 3), dtype=np.uint8),
        "actions": rng.uniform(-1, 1, (batch_B, batch_T, ACTION_DIM)).astype(np.float32),
        "rewards": rng.uniform(0, 1, (batch_B, batch_T)).astype(np.float32),
        "is_first": is_first,
        "is_terminated": np.zeros((batch_B, batch_T), bool),
    }


def filled_replay(config, batch_T: int, rng: np.random.Generator, episodes: int):
    """Our pixel replay (``make_replay``) holding random episodes of 4 x T steps."""
    from ray.rllib.env.single_agent_episode import SingleAgentEpisode

    from smac_rllib.training.replay import make_replay

    replay = make_replay(config)
    length = 4 * batch_T
    replay.add(
        [
            SingleAgentEpisode(
                observations=list(rng.integers(0, 256, (length + 1, 64, 64, 3), dtype=np.uint8)),
                actions=list(rng.uniform(-1, 1, (length, ACTION_DIM)).astype(np.float32)),
                rewards=list(rng.uniform(size=length)),
                truncated=True,
                len_lookback_buffer=0,
            ).to_numpy()
            for _ in range(episodes)
        ]
    )
    return replay


def bare_update(learner, config):
    """``PixelUpdate`` with copies of the learner's nets and its settings."""
    from ray.rllib.core import DEFAULT_MODULE_ID

    from smac_rllib.objectives.pixel_update import PixelUpdate

    return PixelUpdate.like(
        learner.module[DEFAULT_MODULE_ID].unwrapped(), config, float(learner.target_entropy[DEFAULT_MODULE_ID])
    )


def async_threads_s_per_update(learner, replay, args, device: str) -> float:
    """Seconds per update when the learner's own stager + update threads run them (as in a live async run).

    ``args.warmup`` updates first (the threads start with the first grant), then ``args.iters`` granted at once and
    timed to the last one's end. The threads are stopped before returning, and the learner is put back in the
    synchronous mode (device metrics flushed after every update), so the profile that follows sees the same
    ``Learner.update`` as before this mode existed.
    """
    counters = {"env_steps_stored": replay.get_num_timesteps(), "env_steps_lifetime": 10**6}
    done_before = learner.async_progress()["updates_done"]  # > 0 when an earlier --render-procs block ran them

    def run(count: int) -> None:
        total = done_before + count  # the grant and the wait count the learner's updates since it was built
        learner.async_grant(granted_updates=total, **counters)
        progress = learner.async_wait(total)  # re-raises an error of the threads
        if progress["updates_done"] < total:
            raise RuntimeError(
                f"async threads stopped after {progress['updates_done'] - done_before} of {count} updates"
            )

    learner.async_attach_replay(replay)
    try:
        run(args.warmup)
        if device == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        run(args.warmup + args.iters)
        if device == "cuda":
            torch.cuda.synchronize()
        elapsed = time.perf_counter() - start
    finally:
        learner.async_stop()
    learner.async_results()  # flushes the threads' device metrics into the logger and reduces them
    learner._async = False  # back to the synchronous loop's per-update flush for the profile
    return elapsed / args.iters


def run_size(args, batch_B: int, batch_T: int, device: str) -> tuple[list[dict], str, dict[str, str]]:
    from ray.rllib.core import DEFAULT_MODULE_ID
    from ray.rllib.policy.sample_batch import MultiAgentBatch, SampleBatch

    from smac_rllib.training.replay import sample_train_batch

    rng = np.random.default_rng(0)
    config = make_config(args, batch_B, batch_T, device)
    learner = config.build_learner(spaces=spaces())
    bare = bare_update(learner, config)
    dev = bare.log_alpha.device
    data = fake_sequences(batch_B, batch_T, rng)
    on_device = {k: torch.from_numpy(v).to(dev) for k, v in data.items()}
    replay = filled_replay(config, batch_T, rng, episodes=max(4, batch_B // 4))
    ts = {"num_env_steps_sampled_lifetime": 10**6}

    def rllib_step(batch_np):
        learner.update(
            batch=MultiAgentBatch({DEFAULT_MODULE_ID: SampleBatch(batch_np)}, env_steps=batch_B * batch_T),
            timesteps=ts,
            _no_metrics_reduce=True,
        )

    steps = {
        "bare": lambda: bare.step(on_device),
        "bare + h2d": lambda: bare.step({k: torch.from_numpy(v).to(dev, non_blocking=False) for k, v in data.items()}),
        "rllib": lambda: rllib_step(data),
        "rllib + replay": lambda: rllib_step(sample_train_batch(replay, config, num_learners_served=1)),
    }
    rows, gl = [], {}
    for render_procs in args.render_procs:
        count, pixels = int(render_procs.removesuffix("p")), not render_procs.endswith("p")
        with Renderers(count, args.render_start_timeout, pixels) as renderers:
            frames_start, section_start = renderers.frames(), time.perf_counter()
            times = {mode: [] for mode in steps}
            for rep in range(args.warmup + args.iters):
                for mode, step in steps.items():
                    if device == "cuda":
                        torch.cuda.synchronize()
                    start = time.perf_counter()
                    step()
                    if device == "cuda":
                        torch.cuda.synchronize()
                    if rep >= args.warmup:
                        times[mode].append(time.perf_counter() - start)
            learner.metrics.reduce()
            threads_s = async_threads_s_per_update(learner, replay, args, device)
            frames_per_s = (renderers.frames() - frames_start) / (time.perf_counter() - section_start)
            renderers.check_alive()
            if count:
                gl[render_procs] = "; ".join(sorted(renderers.gl))
        base = statistics.median(times["bare"])
        medians = {mode: statistics.median(t) for mode, t in times.items()} | {THREADS_MODE: threads_s}
        rows += [
            dict(
                size=f"{batch_B}x{batch_T}",
                mode=mode,
                render_procs=render_procs,
                s_per_update=round(s, 5),
                ratio_to_bare=round(s / base, 3),
                renderer_frames_per_s=round(frames_per_s, 1),
            )
            for mode, s in medians.items()
        ]

    profile = cProfile.Profile()
    profile.enable()
    for _ in range(args.profile_iters):
        rllib_step(data)
    if device == "cuda":
        torch.cuda.synchronize()
    profile.disable()
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(30)
    return rows, f"## {batch_B}x{batch_T}, {args.profile_iters} rllib updates\n{out.getvalue()}", gl


def process_facts() -> str:
    """What of this process could change the speed of the update's host-side work: where it runs, torch's threads,
    the GIL switch interval, the thread-count environment variables Ray sets in its workers, the visible GPUs."""
    env = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "CUDA_VISIBLE_DEVICES", "CUDA_LAUNCH_BLOCKING", "LP_NUM_THREADS")
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (
        f"pid {os.getpid()}, {affinity} CPUs in its affinity of {os.cpu_count()}, torch threads "
        f"{torch.get_num_threads()} (interop {torch.get_num_interop_threads()}), switch interval "
        f"{sys.getswitchinterval() * 1e3:g} ms, " + ", ".join(f"{k}={os.environ.get(k, '(unset)')}" for k in env)
    )


def run_size_here(args, batch_B: int, batch_T: int, device: str) -> tuple[list[dict], str, dict[str, str], str]:
    """``run_size`` plus this process's facts; what the Ray task runs (``--in-ray-task``) and the plain run calls."""
    if device == "cpu":
        torch.set_num_threads(1)
    import smac_rllib

    smac_rllib.register()
    from stack_sampler import op_probe_report  # benchmarks/ is on sys.path (top of this file)

    rows, profile, gl = run_size(args, batch_B, batch_T, device)
    # the same fixed op loop the live run's update thread runs under SMAC_OP_PROBE
    return rows, profile, gl, process_facts() + ", op probe (main thread, after the runs): " + op_probe_report(device)


def run_size_in_ray_task(args, batch_B: int, batch_T: int, device: str) -> tuple[list[dict], str, dict[str, str], str]:
    """``run_size_here`` in a Ray worker process: a local ``ray.init`` and one task (``num_gpus=1`` on CUDA). The task
    imports this file as a module (its directory on ``sys.path``), so its renderers' ``render_loop`` is picklable
    by reference for their spawned processes."""
    import ray

    bench_dir = str(Path(__file__).resolve().parent)

    def task(args, batch_B, batch_T, device):
        sys.path.insert(0, bench_dir)
        import gpu_rllib_learner

        return gpu_rllib_learner.run_size_here(args, batch_B, batch_T, device)

    if not ray.is_initialized():
        ray.init(num_gpus=1 if device == "cuda" else 0, include_dashboard=False, log_to_driver=True)
    remote = ray.remote(num_cpus=1, num_gpus=1 if device == "cuda" else 0, max_retries=0)(task)
    return ray.get(remote.remote(args, batch_B, batch_T, device))


def render_procs_list(text: str) -> list[str]:
    """``--render-procs``: ``N`` or a comma list ``0,14,14p`` of counts >= 0; ``Np``: N physics-only processes
    (``render_loop(pixels=False)``: the same stepping, no GL context, no frames rendered)."""
    values = [x.strip() for x in text.split(",")]
    if not all(v.removesuffix("p").isdecimal() and v.removesuffix("p").isascii() for v in values):
        raise argparse.ArgumentTypeError(
            f"{text!r}: give a count >= 0 or a comma list of them, e.g. 0,14 "
            "(14p: 14 physics-only processes that render nothing)"
        )
    return values


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--sizes", default="50x50", help="B x T batches, comma-separated")
    parser.add_argument("--preset", default="paper")
    parser.add_argument("--num-particles", type=int, default=32)
    parser.add_argument("--particle-mode", default="history")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--profile-iters", type=int, default=5)
    parser.add_argument(
        "--render-procs",
        type=render_procs_list,
        default="0",
        help="renderer processes beside the learner during the timed section; a comma list "
        "(e.g. 0,14) runs the timed section once per value on the same learner; 14p: 14 physics-only "
        "processes (state observations, nothing rendered, no GL context)",
    )
    parser.add_argument(
        "--render-start-timeout",
        type=float,
        default=180.0,
        help="seconds the renderers get to render their first frame",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        help="config seed (the tuned examples set 0): RLlib's Learner then calls set_torch_seed, which on "
        "CUDA sets CUBLAS_WORKSPACE_CONFIG=:4096:8 and cudnn.deterministic, on CPU "
        "use_deterministic_algorithms(True); default None (no seed: the gpu/session2 and session3 rows ran so)",
    )
    parser.add_argument(
        "--cuda-deterministic",
        action="store_true",
        help="keep the CUDA settings of RLlib's seeding (the learner's build undoes them by default; "
        "before 2026-11-27 every seeded run kept them)",
    )
    parser.add_argument(
        "--in-ray-task",
        action="store_true",
        help="run the learner in a Ray worker process (one task, num_gpus=1 on CUDA), as in a live run",
    )
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results" / "gpu")
    args = parser.parse_args(argv)
    rows, profiles, gl, facts = [], [], {}, set()
    for size in args.sizes.split(","):
        batch_B, batch_T = (int(x) for x in size.split("x"))
        run = run_size_in_ray_task if args.in_ray_task else run_size_here
        size_rows, profile, size_gl, size_facts = run(args, batch_B, batch_T, args.device)
        facts.add(size_facts)
        rows += size_rows
        profiles.append(profile)
        gl |= size_gl
        for r in size_rows:
            print(" | ".join(f"{k}={v}" for k, v in r.items()), flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    write_csv(rows, args.out / "gpu_rllib_learner.csv")
    name = torch.cuda.get_device_name() if args.device == "cuda" else "CPU"
    lines = [
        "# Pixel SMAC update: bare vs through RLlib's Learner (benchmarks/gpu_rllib_learner.py)",
        "",
        f"Command: `python benchmarks/gpu_rllib_learner.py {' '.join(argv if argv is not None else sys.argv[1:])}`",
        "",
        f"Device: {name}, torch {torch.__version__}; preset `{args.preset}`, K={args.num_particles} "
        f"{args.particle_mode}, {args.warmup} warm-up + {args.iters} timed rounds, modes interleaved, medians; "
        f"synchronous timing; config seed {args.seed}, cuda_deterministic {args.cuda_deterministic}.",
        "",
        f"Learner's process: {'a Ray worker (one task, --in-ray-task)' if args.in_ray_task else 'this script'}; "
        + "; ".join(sorted(facts)),
        "",
        f"`{THREADS_MODE}` is its own block after the interleaved rounds: the learner's stager + update threads "
        f"(as in a live async run, no env runners); after warm-up ({args.warmup} updates), {args.iters} updates "
        f"granted at once; wall time / {args.iters} (a mean), synchronized at the end.",
        "",
        f"Render procs: {', '.join(map(str, args.render_procs))} (processes rendering {RENDER_ENV} 64x64 beside the "
        "learner during the timed section, as env runners do; `Np`: N processes stepping the same physics with "
        "state observations, rendering nothing; renderer frames/s is their total steps/s over it; the "
        "timed section runs once per value, on the same learner).",
        "",
    ]
    lines += [f"Renderers' GL (render procs = {n}): {s}" for n, s in gl.items()] + [""] * bool(gl)
    lines += [
        "| B x T | mode | render procs | s / update | ratio to bare | renderer frames/s |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['size']} | {r['mode']} | {r['render_procs']} | {r['s_per_update']} | {r['ratio_to_bare']} | "
        f"{r['renderer_frames_per_s']} |"
        for r in rows
    ]
    (args.out / "gpu_rllib_learner.md").write_text("\n".join(lines) + "\n")
    (args.out / "profile.txt").write_text("\n\n".join(profiles))
    print(f"wrote {args.out}/gpu_rllib_learner.{{csv,md}}, profile.txt")


if __name__ == "__main__":
    main()
