"""``rllib evaluate CHECKPOINT --episodes N [--video out.mp4]``: deterministic returns of a trained policy.

Builds one local env runner from the checkpoint's config (no learner, no replay buffer: a pixel checkpoint's
buffer can be GBs) and loads the trained RLModule's inference weights from
``learner_group/learner/rl_module/<module>``. Episodes run with ``explore=False`` (the policy's deterministic
action) through RLlib's own connectors, so stateful (RSSM) modules work as in training. The video renders
the first episode with ``DMCEnv.render()`` (clean frames, not the perturbed observations).
"""

from __future__ import annotations

import glob
import math
import os
import pickle
import sys
import time

from smac_rllib.cli.checks import quiet
from smac_rllib.cli.errors import UserError, one_line


def run_evaluate(args) -> int:
    if args.episodes < 1:
        raise UserError(f"--episodes {args.episodes} must be >= 1")
    if args.video and not args.video.lower().endswith((".mp4", ".gif")):
        raise UserError(f"--video {args.video}: use a .mp4 (or .gif) file name")
    checkpoint = resolve_checkpoint(args.checkpoint)
    print(f"checkpoint {checkpoint}", flush=True)
    result = evaluate(checkpoint, episodes=args.episodes, video=args.video, video_size=args.video_size, seed=args.seed)
    returns = result["returns"]
    mean = sum(returns) / len(returns)
    std = math.sqrt(sum((r - mean) ** 2 for r in returns) / len(returns))
    print(
        f"{result['env']}: {len(returns)} episode(s), deterministic | return mean {mean:.2f} std {std:.2f} "
        f"min {min(returns):.2f} max {max(returns):.2f} | length mean {sum(result['lengths']) / len(returns):.0f} "
        f"| {result['seconds']:.0f}s",
        flush=True,
    )
    if result.get("video"):
        print(f"video {result['video']}", flush=True)
    if args.wandb:
        log_to_wandb(checkpoint, result, mean, std)
    return 0


def resolve_checkpoint(path: str) -> str:
    """A checkpoint dir as is; for a trial or experiment dir, its most recent ``checkpoint_*``."""
    if not os.path.exists(path):
        raise UserError(f"no such checkpoint: {path} (pass a checkpoint_* directory or a trial directory)")
    if _is_checkpoint(path):
        return os.path.abspath(path)
    found = [os.path.dirname(p) for p in glob.glob(os.path.join(path, "**", "rllib_checkpoint.json"), recursive=True)]
    found = [p for p in found if os.path.basename(p).startswith("checkpoint_")]
    if not found:
        raise UserError(f"no checkpoint under {path}; train with checkpoint_config.checkpoint_frequency > 0 or checkpoint_at_end")
    return os.path.abspath(max(found, key=lambda p: (os.path.getmtime(os.path.join(p, "rllib_checkpoint.json")), p)))


def _is_checkpoint(path: str) -> bool:
    return os.path.isfile(os.path.join(path, "rllib_checkpoint.json")) and os.path.isdir(os.path.join(path, "learner_group"))


def load_config(checkpoint: str):
    """(algorithm class, AlgorithmConfig) the checkpoint was trained with."""
    import smac_rllib

    smac_rllib.register()
    try:
        with open(os.path.join(checkpoint, "class_and_ctor_args.pkl"), "rb") as f:
            ctor = pickle.load(f)
    except Exception as e:  # noqa: BLE001
        raise UserError(f"cannot read {checkpoint}/class_and_ctor_args.pkl ({one_line(e)}); is this an RLlib algorithm checkpoint?") from None
    algo_class = ctor["class"]
    (args, kwargs) = ctor["ctor_args_and_kwargs"]
    config = kwargs.get("config", args[0] if args else None)
    if isinstance(config, dict):
        config = algo_class.get_default_config().update_from_dict(config)
    return algo_class, config


def evaluate(checkpoint: str, *, episodes: int, video: str | None = None, video_size: int = 256, seed: int = 12345) -> dict:
    from ray.rllib.core import DEFAULT_MODULE_ID
    from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner

    _, config = load_config(checkpoint)
    env_config = dict(config.env_config or {})
    frames: list = []
    fps = [30]
    if video:
        env_config.update(render_mode="rgb_array", render_size=video_size)
    config = config.copy(copy_frozen=False)
    config.environment(env_config=env_config)
    config.env_runners(num_env_runners=0, num_envs_per_env_runner=1, explore=False)
    config.debugging(seed=seed)
    if video:
        recorder = _FrameRecorder(frames, fps)
        config.callbacks(on_episode_start=recorder.on_episode_start, on_episode_step=recorder.on_episode_step)

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
        result["video"] = write_video(video, frames, fps[0])
    return result


class _FrameRecorder:
    """Env-runner callbacks that render the first episode's frames."""

    def __init__(self, frames: list, fps: list):
        self.frames, self.fps, self.episode_id = frames, fps, None

    def __deepcopy__(self, memo):  # the env runner deep-copies its config (and these bound methods): share us
        return self

    def _render(self, env, env_index: int, episode) -> None:
        if self.episode_id is None:
            self.episode_id = episode.id_
        if episode.id_ != self.episode_id:
            return
        sub_env = _sub_env(env, env_index)
        frame = sub_env.render() if sub_env is not None else None
        if frame is not None:
            self.frames.append(frame)
            self.fps[0] = int(getattr(sub_env, "metadata", {}).get("render_fps", self.fps[0]))

    def on_episode_start(self, *, episode, env, env_index, **kwargs):
        self._render(env, env_index, episode)

    def on_episode_step(self, *, episode, env, env_index, **kwargs):
        self._render(env, env_index, episode)


def _sub_env(env, index: int):
    """The ``index``-th gymnasium env inside RLlib's vector env (unwrapped down to the DMCEnv)."""
    node = env
    for _ in range(8):
        if hasattr(node, "envs"):
            return node.envs[index].unwrapped
        node = getattr(node, "env", None) or getattr(node, "unwrapped", None)
        if node is None:
            break
    return None


def write_video(path: str, frames: list, fps: int) -> str:
    import imageio.v2 as imageio

    os.makedirs(os.path.dirname(os.path.abspath(path)) or ".", exist_ok=True)
    if path.lower().endswith(".gif"):
        imageio.mimsave(path, frames, duration=1000 / max(fps, 1))
    else:
        imageio.mimsave(path, frames, fps=fps, macro_block_size=1)
    return os.path.abspath(path)


def log_to_wandb(checkpoint: str, result: dict, mean: float, std: float) -> None:
    """One W&B run (job_type=evaluation) next to the checkpoint's trial, with the returns and the video."""
    try:
        import wandb
    except ImportError:  # pragma: no cover
        print("rllib: warning: wandb is not installed; skipping --wandb", file=sys.stderr)
        return
    trial_dir = os.path.dirname(checkpoint)
    run = wandb.init(project="smac_rllib", job_type="evaluation", dir=trial_dir, mode=os.environ.get("WANDB_MODE", "online"),
                     config={"checkpoint": checkpoint, "env": result["env"]}, reinit=True)
    data = {"eval/return_mean": mean, "eval/return_std": std, "eval/episodes": len(result["returns"])}
    if result.get("video"):
        data["eval/video"] = wandb.Video(result["video"], format="mp4")
    run.log(data)
    run.finish()
    print(f"wandb run {run.id} in {trial_dir}/wandb", flush=True)
