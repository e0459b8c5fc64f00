"""``rllib evaluate CHECKPOINT --episodes N [--video out.mp4]``: deterministic returns of a trained policy.

Builds one local env runner from the checkpoint's config (no learner, no replay buffer: a pixel checkpoint's
buffer can be GBs) and loads the trained RLModule's inference weights from
``learner_group/learner/rl_module/<module>``. Episodes run with ``explore=False`` (the policy's deterministic
action) through RLlib's own connectors, so stateful (RSSM) modules work as in training. The video renders
the first episode with the env's own ``render()``: ``DMCEnv.render()`` for ``dmc/...`` (clean frames, not the
perturbed observations), ``render_mode="rgb_array"`` for a gymnasium env (``width``/``height`` from
``--video-size`` where the env takes them, as MuJoCo's do; classic-control frames keep their size).
"""

from __future__ import annotations

import glob
import os
import pickle
import shlex
import shutil
import statistics
import sys
import time

import smac_rllib
from smac_rllib.cli.checkpoints import check_owner, checkpoint_dirs, incomplete_reason, is_complete, uses_markers
from smac_rllib.cli.errors import UserError, one_line
from smac_rllib.cli.ray_output import quiet
from smac_rllib.cli.evaluate_callbacks import FrameRecorder, Progress
from smac_rllib.cli.rendering import render_options


def run_evaluate(args) -> int:
    if args.episodes < 1:
        raise UserError(f"--episodes {args.episodes} must be >= 1")
    if args.video and not args.video.lower().endswith((".mp4", ".gif")):
        raise UserError(f"--video {args.video}: use a .mp4 (or .gif) file name")
    checkpoint, skipped = resolve_checkpoint(args.checkpoint)
    check_owner(checkpoint, getattr(args, "trust", False))
    if args.video:
        check_video(args.video, args.video_size, checkpoint)
    for line in skipped:
        print(f"skipped {line}", flush=True)
    print(f"checkpoint {checkpoint}", flush=True)
    result = evaluate(
        checkpoint,
        episodes=args.episodes,
        video=args.video,
        video_size=args.video_size,
        seed=args.seed,
        print_returns=_print_returns,
    )
    if not result.get("printed"):
        _print_returns(result)
    if result.get("video"):
        print(f"video {result['video']}", flush=True)
    if args.wandb:
        log_to_wandb(checkpoint, result)
    return 0


def _print_returns(result: dict) -> None:
    returns = result["returns"]
    mean, std = statistics.fmean(returns), statistics.pstdev(returns)
    print(
        f"{result['env']}: {len(returns)} episode(s), deterministic | return mean {mean:.2f} std {std:.2f} "
        f"min {min(returns):.2f} max {max(returns):.2f} | length mean {sum(result['lengths']) / len(returns):.0f} "
        f"| {result['seconds']:.0f}s",
        flush=True,
    )
    result["printed"] = True


def resolve_checkpoint(path: str) -> tuple[str, list[str]]:
    """(checkpoint, lines about the incomplete ones skipped): a checkpoint dir as is when complete; for a trial or
    experiment dir, its most recent complete ``checkpoint_*``. A checkpoint a killed run left half-written (no
    completion marker, or a file shorter than written: checkpoints.py) is never used."""
    if not os.path.exists(path):
        raise UserError(f"no such checkpoint: {path} (pass a checkpoint_* directory or a trial directory)")
    if os.path.isfile(path):
        run = f" (train it first: rllib train file {path})" if path.endswith((".yaml", ".yml")) else ""
        raise UserError(
            f"{path} is a file; rllib evaluate takes a checkpoint_* directory, or a trial or experiment directory "
            f"under the run's storage path (~/ray_results/<experiment> by default){run}"
        )
    if _is_checkpoint(path) or os.path.isfile(os.path.join(path, "rllib_checkpoint.json")):
        path = os.path.abspath(path)
        reason = incomplete_reason(path) if uses_markers(os.path.dirname(path)) else None
        if reason:
            newer = _complete_under(os.path.dirname(path))
            hint = f"; the trial's newest complete one is {newer[0]}" if newer else ""
            raise UserError(f"checkpoint {path} is incomplete ({reason}){hint}")
        return path, []
    _refuse_inside_checkpoint(path)
    found = [os.path.dirname(p) for p in glob.glob(os.path.join(path, "**", "rllib_checkpoint.json"), recursive=True)]
    found = [os.path.abspath(p) for p in found if os.path.basename(p).startswith("checkpoint_")]
    if not found:
        raise UserError(
            f"no checkpoint under {path}; train with checkpoint_config.checkpoint_frequency > 0 or checkpoint_at_end"
        )
    trials = sorted({os.path.dirname(p) for p in found})
    if len(trials) > 1:
        names = ", ".join(os.path.relpath(t, path) for t in trials[:3]) + (", ..." if len(trials) > 3 else "")
        raise UserError(
            f"{path} holds the checkpoints of {len(trials)} trials ({names}): which one to evaluate is yours to say; "
            f"pass a trial directory, e.g. rllib evaluate {shlex.quote(str(trials[0]))}"
        )
    found.sort(key=lambda p: (os.path.getmtime(os.path.join(p, "rllib_checkpoint.json")), p), reverse=True)
    skipped = []
    for candidate in found:
        reason = incomplete_reason(candidate) if uses_markers(os.path.dirname(candidate)) else None
        if reason is None:
            return candidate, skipped
        skipped.append(f"{candidate}: incomplete ({reason})")
    raise UserError(
        f"no complete checkpoint under {path}: {len(skipped)} incomplete one(s) (e.g. {skipped[0]}); "
        "resume the run (`rllib train file ... --resume`) to write a new one"
    )


def _refuse_inside_checkpoint(path: str) -> None:
    """A directory inside a checkpoint (``learner_group/learner/rl_module/default_policy``: one component's state)."""
    parent = os.path.dirname(os.path.abspath(path))
    while parent and parent != os.path.dirname(parent):
        if os.path.basename(parent).startswith("checkpoint_") and os.path.isfile(
            os.path.join(parent, "rllib_checkpoint.json")
        ):
            raise UserError(
                f"{path} is a part of the checkpoint {parent} (one component's state); pass the checkpoint itself: "
                f"rllib evaluate {shlex.quote(str(parent))}"
            )
        parent = os.path.dirname(parent)


def _complete_under(trial_dir: str) -> list[str]:
    return [d for d in reversed(checkpoint_dirs(trial_dir)) if is_complete(d)]


MAX_VIDEO_MEMORY_FRACTION = 0.5


def check_video(video: str, size: int, checkpoint: str) -> None:
    """Before any episode runs (a bad path must not cost the returns): the file can be written, its encoder is
    there, the frame size suits it, and the frames of one episode (kept in memory until written) fit."""
    path = os.path.abspath(video)
    if os.path.isdir(path):
        raise UserError(f"--video {video} is a directory; give a file name like {os.path.join(video, 'eval.mp4')}")
    parent = os.path.dirname(path)
    existing = parent
    while existing and not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise UserError(f"--video {video}: {existing} is a file, not a directory")
    if not os.access(existing, os.W_OK | os.X_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise UserError(
            f"--video {video}: {path if os.path.exists(path) else existing} is not writable; choose another path"
        )
    if path.lower().endswith(".mp4"):
        if size % 2:
            raise UserError(f"--video-size {size}: an mp4 (H.264, yuv420p) needs an even frame size, e.g. {size + 1}")
        try:
            import imageio_ffmpeg  # lazy: its absence is the UserError below, and only --video needs it

            imageio_ffmpeg.get_ffmpeg_exe()
        except Exception as e:  # noqa: BLE001
            raise UserError(
                f"--video {video}: no ffmpeg for mp4 ({one_line(e, 120)}); pip install imageio-ffmpeg, or write a .gif"
            ) from None
    _check_render(checkpoint, size)
    steps = _episode_steps(checkpoint)
    need = steps * size * size * 3
    available = _available_memory()
    if available and need > MAX_VIDEO_MEMORY_FRACTION * available:
        raise UserError(
            f"--video-size {size}: one episode ({steps} frames of {size}x{size}x3) needs {need / 2**30:.1f} GiB of "
            f"memory, {available / 2**30:.1f} GiB are free; use a smaller --video-size (e.g. 256)"
        )
    free = shutil.disk_usage(existing).free
    if free < min(need // 20, 2**30):  # H.264 / GIF compress frames ~20x or better; warn on a nearly full disk only
        raise UserError(
            f"--video {video}: only {free / 2**20:.0f} MiB free on {existing}; free some space or write elsewhere"
        )


def _check_render(checkpoint: str, size: int) -> None:
    """One frame at ``size`` from the checkpoint's env, before any episode runs (dm_control's offscreen framebuffer
    is 640 pixels wide for most tasks; a gymnasium env may lack its renderer: either fails only when the video
    starts, after the episodes)."""
    _, config = load_config(checkpoint)
    render_options(str(config.env), dict(config.env_config or {}), size)


def _available_memory() -> int | None:
    """Bytes of memory available to a new allocation (Linux's MemAvailable), None when unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _episode_steps(checkpoint: str) -> int:
    """Frames of one episode, an upper bound: dm_control's 1000 control steps (or ``time_limit`` at its smallest
    control step, 0.01 s) over the action repeat, plus the first frame."""
    steps, repeat = 1000, 1
    try:
        _, config = load_config(checkpoint)
        env_config = dict(config.env_config or {})
        if env_config.get("time_limit"):
            steps = int(round(float(env_config["time_limit"]) / 0.01))
        repeat = max(1, int(env_config.get("action_repeat") or 1))
    except Exception:  # noqa: BLE001 - an estimate
        pass
    return steps // repeat + 1


def _is_checkpoint(path: str) -> bool:
    return os.path.isfile(os.path.join(path, "rllib_checkpoint.json")) and os.path.isdir(
        os.path.join(path, "learner_group")
    )


def load_config(checkpoint: str):
    """(algorithm class, AlgorithmConfig) the checkpoint was trained with."""
    smac_rllib.register()
    try:
        with open(os.path.join(checkpoint, "class_and_ctor_args.pkl"), "rb") as f:
            ctor = pickle.load(f)
    except Exception as e:  # noqa: BLE001
        raise UserError(
            f"cannot read {checkpoint}/class_and_ctor_args.pkl ({one_line(e)}); is this an RLlib algorithm checkpoint?"
        ) from None
    algo_class = ctor["class"]
    (args, kwargs) = ctor["ctor_args_and_kwargs"]
    config = kwargs.get("config", args[0] if args else None)
    if isinstance(config, dict):
        config = algo_class.get_default_config().update_from_dict(config)
    return algo_class, config


def evaluate(
    checkpoint: str,
    *,
    episodes: int,
    video: str | None = None,
    video_size: int = 256,
    seed: int = 12345,
    print_returns=None,
) -> dict:
    # lazy: ray.rllib and torch (~6 s) load once the checkpoint is found: a wrong path fails in a fraction of a second
    from ray.rllib.core import DEFAULT_MODULE_ID
    from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner

    _, config = load_config(checkpoint)
    env_config = dict(config.env_config or {})
    frames: list = []
    fps = [30]
    if video:  # checked by run_evaluate: the cached options (rendering again costs a second for dm_control)
        env_config.update(render_options(str(config.env), env_config, video_size))
    config = config.copy(copy_frozen=False)
    config.environment(env_config=env_config)
    config.env_runners(num_env_runners=0, num_envs_per_env_runner=1, explore=False)
    config.debugging(seed=seed)
    progress = Progress(episodes)  # a long evaluation says how far it is, as training does
    if video:
        recorder = FrameRecorder(frames, fps)
        config.callbacks(
            on_episode_start=recorder.on_episode_start,
            on_episode_step=recorder.on_episode_step,
            on_episode_end=progress.on_episode_end,
        )
    else:
        config.callbacks(on_episode_end=progress.on_episode_end)

    module_dir = os.path.join(checkpoint, "learner_group", "learner", "rl_module", DEFAULT_MODULE_ID)
    if not os.path.isdir(module_dir):
        raise UserError(f"{checkpoint} has no {DEFAULT_MODULE_ID} module (multi-agent checkpoints are not supported)")

    started = time.time()
    with quiet():  # gymnasium/RLlib import-time warnings (e.g. RLlib's DreamerV3 debug env) are noise here
        runner = SingleAgentEnvRunner(config=config)
    try:
        with quiet():
            runner.module.restore_from_path(module_dir)  # learner state -> inference-only module (extra keys ignored)
        done = []
        while len(done) < episodes:
            batch = runner.sample(num_episodes=episodes - len(done), explore=False)
            done += [e for e in batch if e.is_done]
    finally:
        runner.stop()
    result = {
        "env": config.env,
        "returns": [float(e.get_return()) for e in done[:episodes]],
        "lengths": [len(e) for e in done[:episodes]],
        "seconds": time.time() - started,
    }
    if video and frames:
        if print_returns is not None:
            print_returns(result)  # first: the returns are kept even if writing the video fails
        try:
            result["video"] = write_video(video, frames, fps[0])
        except Exception as e:  # noqa: BLE001
            raise UserError(
                f"the returns above are kept, but writing --video {video} failed: {one_line(e, 200)}"
            ) from None
    return result


def write_video(path: str, frames: list, fps: int) -> str:
    import imageio.v2 as imageio  # lazy: only --video writes one

    os.makedirs(os.path.dirname(os.path.abspath(path)) or ".", exist_ok=True)
    if path.lower().endswith(".gif"):
        imageio.mimsave(path, frames, duration=1000 / max(fps, 1))
    else:
        imageio.mimsave(path, frames, fps=fps, macro_block_size=1)
    return os.path.abspath(path)


def log_to_wandb(checkpoint: str, result: dict) -> None:
    """One W&B run (job_type=evaluation) next to the checkpoint's trial, with the returns and the video."""
    try:
        import wandb  # lazy: only --wandb logs (~0.9 s), and wandb may be missing
    except ImportError:  # pragma: no cover
        print("rllib: warning: wandb is not installed; skipping --wandb", file=sys.stderr)
        return
    trial_dir = os.path.dirname(checkpoint)
    run = wandb.init(
        project="smac_rllib",
        job_type="evaluation",
        dir=trial_dir,
        mode=os.environ.get("WANDB_MODE", "online"),
        config={"checkpoint": checkpoint, "env": result["env"]},
        reinit=True,
    )
    returns = result["returns"]
    data = {"eval/return_mean": statistics.fmean(returns), "eval/return_std": statistics.pstdev(returns)}
    data["eval/episodes"] = len(returns)
    if result.get("video"):
        data["eval/video"] = wandb.Video(result["video"], format="mp4")
    run.log(data)
    run.finish()
    print(f"wandb run {run.id} in {trial_dir}/wandb", flush=True)
