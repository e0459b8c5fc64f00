"""The env-runner callbacks of ``rllib evaluate``: the first episode's frames for ``--video``, and a progress line of a
long evaluation (episodes done, mean return, time left), as training prints its iterations."""

from __future__ import annotations

import time

from smac_rllib.cli.results import format_duration


PROGRESS_EVERY_S = 15  # a line per this many seconds of a long evaluation


class Progress:
    """An env-runner callback that prints the episodes done, their mean return and the time left every
    ``PROGRESS_EVERY_S`` (the first line after that long: a short evaluation prints none)."""

    def __init__(self, episodes: int):
        self.episodes, self.returns = episodes, []
        self.started = self.said = time.time()

    def __deepcopy__(self, memo):  # shared with the env runner's copy of the config, as FrameRecorder
        return self

    def on_episode_end(self, *, episode, **kwargs):
        self.returns.append(float(episode.get_return()))
        done, now = len(self.returns), time.time()
        if now - self.said < PROGRESS_EVERY_S or done >= self.episodes:
            return
        self.said, spent = now, now - self.started
        left = spent / done * (self.episodes - done)
        print(
            f"  {done:,}/{self.episodes:,} episodes, return mean {sum(self.returns) / done:.4g}, "
            f"{format_duration(spent)}, ~{format_duration(left)} left",
            flush=True,
        )


class FrameRecorder:
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
