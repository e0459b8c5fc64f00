"""RLlib's own DreamerV3 (``run: DreamerV3``, an extra baseline; docs/baselines.md) on this package's envs: what the
command line must know about it, kept here so that ``cli/`` names no algorithm (``algorithms/config_questions.py``).

RLlib 2.60's ``DreamerV3Config.validate()`` accepts settings that fail after Ray started (a model size it has no
table for, uint8 frames, an image size its conv stack is not built for) or that silently train at another ratio;
these functions say so before Ray starts, each message naming the fix.
"""

from __future__ import annotations

import math

from smac_rllib.core.values import is_int, is_real

IMAGE_SIZE = 64  # RLlib's DreamerV3 conv encoder/decoder (CNNAtari, ConvTransposeAtari) are built for 64x64

# numeric settings: key -> (low, high, low_open, high_open, hint), the CLI's range check (cli/ranges.py: RANGES)
RANGES = {
    "training_ratio": (0, None, True, False, "(replayed steps per env step; DreamerV3 on DMC: 512)"),
    "horizon_H": (1, None, False, False, "(imagination steps; DreamerV3: 15)"),
    "gae_lambda": (0, 1, False, False, "(DreamerV3: 0.95)"),
    "entropy_scale": (0, None, False, False, "(DreamerV3: 3e-4)"),
    "return_normalization_decay": (0, 1, False, True, "(DreamerV3: 0.99)"),
    "intrinsic_rewards_scale": (0, None, False, False, ""),
    "world_model_grad_clip_by_global_norm": (0, None, True, False, "(DreamerV3: 1000)"),
    "critic_grad_clip_by_global_norm": (0, None, True, False, "(DreamerV3: 100)"),
    "actor_grad_clip_by_global_norm": (0, None, True, False, "(DreamerV3: 100)"),
}


def is_dreamerv3(config_or_class) -> bool:
    """RLlib's DreamerV3Config / DreamerV3 (or a subclass), without importing DreamerV3 for other algorithms."""
    cls = config_or_class if isinstance(config_or_class, type) else type(config_or_class)
    return any(k.__name__ in ("DreamerV3Config", "DreamerV3") for k in cls.__mro__)


def _options(value) -> list:
    return (
        list(value["grid_search"])
        if isinstance(value, dict) and isinstance(value.get("grid_search"), list)
        else [value]
    )


def fill_env_config(config: dict) -> None:
    """``run: DreamerV3`` on ``dmc/...`` pixels: ``env_config.pixel_format`` defaults to ``float``.

    RLlib's DreamerV3 feeds observations to its conv encoder as they come (no /255, no symlog for images) and
    regresses its decoder onto them, so it needs float32 frames in [-0.5, 0.5] (what RLlib's own DMC wrapper
    gives), not our uint8 default: a uint8 frame fails in the first conv layer, after Ray started. The default is
    set on the experiment's config mapping, before it is built, so that ``run: DreamerV3`` stays the one switch; a
    written ``pixel_format: uint8`` is refused by ``errors``.
    """
    env_config = config.get("env_config")
    if not isinstance(env_config, dict) or env_config.get("from_pixels") is not True or "pixel_format" in env_config:
        return
    if all(isinstance(env, str) and env.startswith("dmc/") for env in _options(config.get("env"))):
        config["env_config"] = {**env_config, "pixel_format": "float"}


def effective_training_ratio(config) -> float | None:
    """The replayed steps per env step that RLlib 2.60's DreamerV3 actually trains at (None: cannot tell).

    Each ``training_step`` samples n = rollout_fragment_length x num_envs_per_env_runner env steps per env
    runner, then updates on whole B x T batches until n x training_ratio steps are replayed: ceil(n r / BT) BT / n.
    Its lifetime correction (sample more while the lifetime ratio is above r) never acts in 2.60: it reads
    ``num_env_steps_trained_lifetime``, which is never logged (``actual_training_ratio`` reports 0).
    """
    r, b, t = config.training_ratio, config.batch_size_B, config.batch_length_T
    fragment, envs = config.rollout_fragment_length, config.num_envs_per_env_runner
    if not all(is_real(v) and v > 0 for v in (r, b, t, fragment, envs)):
        return None
    n = fragment * envs * max(1, config.num_env_runners or 0)
    return math.ceil(n * r / (b * t)) * b * t / n


def warnings(config) -> list[str]:
    """A warning when DreamerV3 would train at another ratio than ``training_ratio`` (more than 5% off)."""
    effective = effective_training_ratio(config)
    if effective is None or effective <= 1.05 * config.training_ratio:
        return []
    from fractions import Fraction

    n = config.rollout_fragment_length * config.num_envs_per_env_runner * max(1, config.num_env_runners or 0)
    bt = config.batch_size_B * config.batch_length_T
    needed = (Fraction(config.training_ratio).limit_denominator(10**6) / bt).denominator  # least n with n r / BT whole
    return [
        f"DreamerV3 trains whole batches of B x T = {bt} steps after every {n} sampled env step(s): effective "
        f"training_ratio {effective:g}, not {config.training_ratio:g}; make the env steps per sampling round "
        f"(rollout_fragment_length x num_envs_per_env_runner x num_env_runners, now {n}) a multiple of {needed}"
    ]


def errors(config) -> list[str]:
    """DreamerV3 settings that RLlib 2.60 accepts in ``validate()`` but that fail (with a traceback, after Ray
    started) or silently make no sense, each naming the fix."""
    from ray.rllib.algorithms.dreamerv3.utils import _ALLOWED_MODEL_DIMS

    found = []
    size = config.model_size
    if size not in _ALLOWED_MODEL_DIMS:
        found.append(
            f"model_size={size!r} is not a DreamerV3 size; use one of {', '.join(_ALLOWED_MODEL_DIMS)} "
            "(DreamerV3 on DMC: S; nano..XXS are RLlib's debug sizes)"
        )
    b, t = config.batch_size_B, config.batch_length_T
    if not (is_int(b) and b >= 1):
        found.append(f"batch_size_B={b!r} must be an integer >= 1 (sequences per update; DreamerV3: 16)")
    if not (is_int(t) and t >= 2):
        found.append(
            f"batch_length_T={t!r} must be an integer >= 2 (steps per sequence: the world model learns "
            "dynamics from consecutive steps; DreamerV3: 64)"
        )
    env, env_config = config.env, config.env_config if isinstance(config.env_config, dict) else {}
    if isinstance(env, str) and env.startswith("dmc/") and env_config.get("from_pixels") is True:
        size = env_config.get("image_size", IMAGE_SIZE)
        if size != IMAGE_SIZE:
            found.append(
                f"env_config.image_size={size!r}: RLlib's DreamerV3 builds its conv encoder and decoder for "
                f"{IMAGE_SIZE}x{IMAGE_SIZE} frames; set image_size: {IMAGE_SIZE}"
            )
        fmt = env_config.get("pixel_format", "uint8")  # filled in by fill_env_config unless in a grid
        if fmt != "float":
            found.append(
                f"env_config.pixel_format={fmt!r}: RLlib's DreamerV3 takes float images in [-0.5, 0.5], not "
                "raw uint8 frames; set pixel_format: float or leave it out (the CLI sets it for DreamerV3)"
            )
    return found
