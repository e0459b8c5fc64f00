"""``rllib evaluate --video``: the env_config keys that make a checkpoint's env render frames of the size asked,
found by rendering one before any episode runs: ``dmc/...`` envs take ``render_mode`` and ``render_size``; a
gymnasium env takes ``render_mode="rgb_array"`` and, where it has them (MuJoCo's), ``width``/``height``."""

from __future__ import annotations

import re

from smac_rllib.cli.errors import UserError, one_line
from smac_rllib.cli.ray_output import quiet

_RENDER_OPTIONS: dict = {}  # (env, env_config, size) -> the keyword arguments that rendered a frame


def render_options(env_name: str, env_config: dict, size: int) -> dict:
    """The env_config keys that make ``env_name`` render ``size``-pixel frames, found by rendering one: ours take
    ``render_mode`` and ``render_size``; a gymnasium env takes ``render_mode="rgb_array"`` and, where it has them
    (MuJoCo's), ``width``/``height`` (otherwise its frames keep their own size). A UserError when it cannot."""
    key = (env_name, repr(sorted(env_config.items(), key=repr)), size)
    if key in _RENDER_OPTIONS:
        return dict(_RENDER_OPTIONS[key])
    from smac_rllib.envs.registry import env_names, make_env  # lazy: dm_control (~1 s) only with --video

    if env_name in env_names():
        tries = [{"render_mode": "rgb_array", "render_size": size}]
        build = make_env
    else:
        import gymnasium as gym  # lazy: only --video on a gymnasium env

        tries = [{"render_mode": "rgb_array", "width": size, "height": size}, {"render_mode": "rgb_array"}]
        build = gym.make
    error = None
    for options in tries:
        env = None
        try:
            with quiet():
                env = (
                    build(env_name, {**env_config, **options})
                    if build is make_env
                    else build(env_name, **{**env_config, **options})
                )
                env.reset(seed=0)
                frame = env.render()
            if frame is None or getattr(frame, "ndim", 0) != 3:
                raise ValueError(f"render() gave {type(frame).__name__}, not an RGB frame")
            _RENDER_OPTIONS[key] = options
            return dict(options)
        except TypeError as e:
            error = e
            if "width" in str(e) or "height" in str(e):
                continue  # an env without a frame size: its own
            break
        except Exception as e:  # noqa: BLE001
            error = e
            break
        finally:
            if env is not None:
                env.close()
    limit = re.search(r"framebuffer (?:width|height) (\d+)", str(error))
    if limit:
        raise UserError(
            f"--video-size {size}: {env_name} renders at most {limit.group(1)} pixels (its offscreen "
            f"framebuffer); use --video-size {limit.group(1)} or less, e.g. 256"
        ) from None
    raise UserError(
        f"--video: {env_name} cannot render a frame ({one_line(error, 200)}); fix that or drop --video"
    ) from None
