"""DeepMind Control Suite task as a gymnasium.Env: flat float32 states or uint8 pixels, action repeat, seeds.

One wrapper over ``dm_control.suite.load`` (docs/design.md §4: Shimmy gives float64 dict observations and no
action repeat, RLlib's bundled DMCEnv ignores reset seeds):

* states:  ``Box(-inf, inf, (D,), float32)``, the observation dict flattened in dm_control's key order;
* pixels:  ``Box(0, 255, (S, S, 3), uint8)`` rendered by ``physics.render`` (camera 0, quadruped camera 2 as in
  PlaNet/Dreamer), optionally perturbed as in paper Table 1 (``perturb.py``); with ``pixel_format="float"`` the
  same frame as ``Box(-0.5, 0.5, (S, S, 3), float32)`` = ``x / 255 - 0.5``, the input RLlib's DreamerV3 takes
  (it does not normalize images itself; docs/baselines.md, "DreamerV3");
* actions: ``Box(-1, 1, (|A|,), float32)`` mapped linearly onto the task's action bounds;
* episode ends follow dm_control's discount: 0 -> ``terminated``, 1 at the time limit -> ``truncated``.
"""

from __future__ import annotations

import os

# dm_control picks its GL backend once, when first imported: importing the package (smac_rllib/__init__.py,
# ``headless_gl``) has set MUJOCO_GL before this module runs (docs/design.md §4).

from typing import Any  # noqa: E402

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402
from dm_control import _render, suite  # noqa: E402
from dm_control.mujoco.engine import Camera  # noqa: E402
from dm_control.rl.control import PhysicsError  # noqa: E402

from smac_rllib.envs.perturb import perturb, validate_perturbations  # noqa: E402
from smac_rllib.envs.validation import PIXEL_FORMATS  # noqa: E402

__all__ = ["DMCEnv", "PIXEL_FORMATS", "check_gl_backend", "default_camera_id", "end_flags"]

_QUADRUPED_CAMERA = 2  # PlaNet/Dreamer render quadruped from camera 2 (camera 0 loses the body)


def default_camera_id(domain: str) -> int:
    return _QUADRUPED_CAMERA if domain == "quadruped" else 0


def end_flags(is_last: bool, discount: float | None) -> tuple[bool, bool]:
    """(terminated, truncated) of a dm_control time step.

    dm_control ends an episode with discount 0 when the task terminates (e.g. lqr reaching the origin) and with
    discount 1 at the time limit; only the former is a true terminal state for bootstrapping.
    """
    if not is_last:
        return False, False
    terminated = discount is not None and float(discount) == 0.0
    return terminated, not terminated


def check_gl_backend(name: str) -> None:
    """Fail early, naming the fix, when dm_control was imported before MUJOCO_GL was set on a headless machine.

    It then picked GLFW, which needs a display: MuJoCo would abort the process at the first render.
    """
    headless = not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    if _render.BACKEND == "glfw" and os.environ.get("MUJOCO_GL") != "glfw" and headless:
        raise RuntimeError(
            f"{name}: dm_control was imported before MUJOCO_GL was set and chose the GLFW backend, which cannot "
            "render without a display. Export MUJOCO_GL=egl, or import smac_rllib before dm_control / ray.rllib"
        )


class DMCEnv(gym.Env):
    """A dm_control suite task as a gymnasium env (see the module docstring for spaces and conventions)."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 50}

    def __init__(
        self,
        domain: str,
        task: str,
        *,
        from_pixels: bool = False,  # observe 64x64 RGB frames instead of the low-dimensional state
        image_size: int = 64,  # side of the square pixel observation (paper: 64)
        camera_id: int | None = None,  # None -> 0, quadruped 2 (PlaNet/Dreamer)
        action_repeat: int | None = None,  # None -> 1 for states, 2 for pixels (paper pixel setting)
        fast_render: bool = False,  # no shadows, no MSAA: ~5x cheaper CPU render, slightly different frames
        pixel_noise_std: float = 0.0,  # Table 1: additive Gaussian noise std on the [0, 1] pixel scale
        sensor_missing_prob: float = 0.0,  # Table 1: each pixel value zeroed with this probability
        pixel_format: str = "uint8",  # "float": float32 x / 255 - 0.5 in [-0.5, 0.5], for RLlib's DreamerV3
        seed: int | None = None,  # seeds task RNG and perturbations at the first reset without a seed
        time_limit: float | None = None,  # episode length in simulated seconds; None -> the task's (mostly 1000 steps)
        render_mode: str | None = None,  # "rgb_array" for render() (videos)
        render_size: int | None = None,  # side of render() frames; None -> image_size
    ):
        self.name = f"dmc/{domain}-{task}"
        action_repeat = (2 if from_pixels else 1) if action_repeat is None else action_repeat
        self._check_args(
            from_pixels, image_size, action_repeat, pixel_noise_std, sensor_missing_prob, seed, render_mode
        )
        if pixel_format not in PIXEL_FORMATS:
            raise ValueError(f"{self.name}: pixel_format={pixel_format!r}; use one of {', '.join(PIXEL_FORMATS)}")
        if render_size is not None and not (isinstance(render_size, int) and render_size > 0):
            raise ValueError(f"{self.name}: render_size={render_size!r} must be a positive int (e.g. 256)")

        if from_pixels or render_mode is not None:
            check_gl_backend(self.name)

        task_kwargs = {"random": seed} if time_limit is None else {"random": seed, "time_limit": float(time_limit)}
        self._env = suite.load(domain, task, task_kwargs=task_kwargs)
        self.domain, self.task = domain, task
        self.from_pixels = bool(from_pixels)
        self.image_size = int(image_size)
        self.camera_id = default_camera_id(domain) if camera_id is None else int(camera_id)
        self.action_repeat = int(action_repeat)
        self.fast_render = bool(fast_render)
        self.pixel_noise_std = float(pixel_noise_std)
        self.sensor_missing_prob = float(sensor_missing_prob)
        self.pixel_format = pixel_format
        self.render_mode = render_mode
        self.render_size = self.image_size if render_size is None else render_size
        self._seed = seed  # consumed by the first reset() that has no seed of its own

        ncam = self.physics.model.ncam
        if not 0 <= self.camera_id < max(ncam, 1):
            raise ValueError(f"{self.name}: camera_id={self.camera_id} out of range; this model has {ncam} camera(s)")
        if self.fast_render:
            # Read when the GL context is made (first render), so set before it.  docs/design.md §4.
            self.physics.model.vis.quality.shadowsize = 0
            self.physics.model.vis.quality.offsamples = 0

        # One rendered frame per agent step, in simulated time (for videos).
        fps = round(1.0 / (self._env.control_timestep() * self.action_repeat))
        self.metadata = {**type(self).metadata, "render_fps": fps}

        spec = self._env.action_spec()
        self._action_low = spec.minimum.astype(np.float64)
        self._action_high = spec.maximum.astype(np.float64)
        self.action_space = gym.spaces.Box(-1.0, 1.0, shape=spec.shape, dtype=np.float32)
        if self.from_pixels:
            shape = (self.image_size, self.image_size, 3)
            if pixel_format == "float":
                self.observation_space = gym.spaces.Box(-0.5, 0.5, shape=shape, dtype=np.float32)
            else:
                self.observation_space = gym.spaces.Box(0, 255, shape=shape, dtype=np.uint8)
        else:
            dim = sum(int(np.prod(s.shape)) for s in self._env.observation_spec().values())
            self.observation_space = gym.spaces.Box(-np.inf, np.inf, shape=(dim,), dtype=np.float32)

        self._steps = 0  # agent steps in the current episode (for error messages)
        self._needs_reset = True
        self._cameras: dict[int, tuple[Any, Any]] = {}  # size -> (MjModel it was made for, dm_control Camera)

    # ------------------------------------------------------------------ gymnasium API

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        if seed is None and self._seed is not None:
            seed = self._seed  # the configured seed applies to the first episode; later resets continue the stream
        self._seed = None
        super().reset(seed=seed)  # seeds self.np_random (perturbations)
        if seed is not None:
            self._check_seed(seed)
            self._env.task.random.seed(seed)  # the task's RandomState draws the initial state
        time_step = self._env.reset()
        self._steps, self._needs_reset = 0, False
        state = self._flat_state(time_step.observation)
        return self._observe(state), {}

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict]:
        if self._needs_reset:
            raise RuntimeError(f"{self.name}: step() called before reset() or after the episode ended; call reset()")
        self._steps += 1
        action = np.asarray(action, dtype=np.float64).reshape(self.action_space.shape)
        if not np.all(np.isfinite(action)):
            raise ValueError(f"{self.name} got a non-finite action {action} at step {self._steps}")
        scaled = self._action_low + (np.clip(action, -1.0, 1.0) + 1.0) * 0.5 * (self._action_high - self._action_low)
        scaled = np.clip(scaled, self._action_low, self._action_high)

        reward, discount = 0.0, 1.0
        for _ in range(self.action_repeat):
            try:
                time_step = self._env.step(scaled)
            except PhysicsError as err:
                raise PhysicsError(f"{self.name}: MuJoCo simulation diverged at step {self._steps}: {err}") from err
            reward += self._finite_reward(time_step.reward)
            discount *= float(time_step.discount)
            if time_step.last():
                break  # never repeat past the end of the episode

        terminated, truncated = end_flags(time_step.last(), discount)
        self._needs_reset = terminated or truncated
        state = self._flat_state(time_step.observation)
        return self._observe(state), reward, terminated, truncated, {"discount": discount}

    def render(self) -> np.ndarray | None:
        """A clean (unperturbed) RGB frame of ``render_size`` for videos; None unless render_mode='rgb_array'."""
        if self.render_mode != "rgb_array":
            return None
        return self._render(self.render_size)

    def close(self) -> None:
        for _, camera in self._cameras.values():
            camera._scene.free()  # what Physics.render does after each frame  # noqa: SLF001
        self._cameras.clear()
        self._env.close()

    @property
    def physics(self):
        """The dm_control Physics (for videos, debugging and tests)."""
        return self._env.physics

    @property
    def dm_env(self):
        """The wrapped ``dm_control.rl.control.Environment``."""
        return self._env

    def __repr__(self) -> str:
        mode = f"pixels {self.image_size}x{self.image_size} cam {self.camera_id}" if self.from_pixels else "states"
        if self.from_pixels and self.pixel_format != "uint8":
            mode += f" {self.pixel_format}"
        return f"DMCEnv({self.name}, {mode}, action_repeat={self.action_repeat})"

    __str__ = __repr__  # gym.Env.__str__ would print "<DMCEnv instance>"

    # ------------------------------------------------------------------ helpers

    def _flat_state(self, observation: dict) -> np.ndarray:
        state = np.concatenate([np.asarray(v, dtype=np.float32).ravel() for v in observation.values()])
        if not np.all(np.isfinite(state)):
            bad = [k for k, v in observation.items() if not np.all(np.isfinite(v))]
            raise FloatingPointError(
                f"{self.name} returned a non-finite observation ({', '.join(bad)}) at step {self._steps} "
                "of the episode: the simulation diverged (check the actions and action bounds)"
            )
        return state

    def _finite_reward(self, reward: float) -> float:
        reward = float(reward)
        if not np.isfinite(reward):
            raise FloatingPointError(
                f"{self.name} returned a non-finite reward {reward} at step {self._steps} of the episode "
                "(check the actions and the task's reward function)"
            )
        return reward

    def _observe(self, state: np.ndarray) -> np.ndarray:
        if not self.from_pixels:
            return state
        image = self._render(self.image_size)
        image = perturb(
            image,
            pixel_noise_std=self.pixel_noise_std,
            sensor_missing_prob=self.sensor_missing_prob,
            rng=self.np_random,
        )
        if self.pixel_format == "float":
            return image.astype(np.float32) / np.float32(255.0) - np.float32(0.5)  # exact ends: 0 -> -0.5, 255 -> 0.5
        return image

    def _render(self, size: int) -> np.ndarray:
        try:
            return self._camera(size).render().copy()  # = physics.render(size, size, camera_id), own memory
        except Exception as err:  # GL setup problems surface here, far from their cause
            raise RuntimeError(
                f"{self.name}: rendering with MUJOCO_GL={os.environ.get('MUJOCO_GL')!r} failed ({err}). Set "
                "MUJOCO_GL=egl before anything imports dm_control (import ray.rllib does), and on headless "
                "machines install libegl1 libegl-mesa0 libgl1-mesa-dri (make sysdeps)"
            ) from err

    def _camera(self, size: int):
        """A dm_control Camera kept across frames (docs/design.md §4).

        ``physics.render`` builds a Camera per frame, and with it a fresh MjvScene (~1.8 ms, ~40% of a fast
        64x64 render on our CPU); ``Camera.render`` recomputes the whole scene from the current physics state
        (``mjv_updateScene``), so a kept camera renders the same pixels. Its frame is a (flipped) view of the
        camera's own buffer, overwritten by the next render: ``_render`` copies it. Rebuilt if the physics
        reloads its model.
        """
        model = self.physics.model.ptr
        cached = self._cameras.get(size)
        if cached is None or cached[0] is not model:
            if cached is not None:
                cached[1]._scene.free()  # noqa: SLF001
            camera = Camera(physics=self.physics, height=size, width=size, camera_id=self.camera_id)
            self._cameras[size] = cached = (model, camera)
        return cached[1]

    def _check_args(self, from_pixels, image_size, action_repeat, noise_std, missing_prob, seed, render_mode) -> None:
        if not (isinstance(image_size, int) and image_size > 0):
            raise ValueError(f"{self.name}: image_size={image_size!r} must be a positive int (paper: 64)")
        if not (isinstance(action_repeat, int) and action_repeat >= 1):
            raise ValueError(f"{self.name}: action_repeat={action_repeat!r} must be an int >= 1 (paper pixels: 2)")
        validate_perturbations(noise_std, missing_prob)
        if (noise_std > 0 or missing_prob > 0) and not from_pixels:
            raise ValueError(
                f"{self.name}: pixel_noise_std / sensor_missing_prob perturb pixel observations; "
                "set from_pixels=True or remove them"
            )
        if seed is not None:
            self._check_seed(seed)
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"{self.name}: render_mode={render_mode!r} is not supported; use 'rgb_array' or None")

    def _check_seed(self, seed: Any) -> None:
        if not (isinstance(seed, (int, np.integer)) and 0 <= seed < 2**32):
            raise ValueError(f"{self.name}: seed={seed!r} must be an int in [0, 2**32) (numpy RandomState seeds)")
