"""DMC envs on real dm_control physics and real (EGL) rendering: spaces, action repeat, seeds, episode ends,
perturbations, names and registration. No Ray cluster is started."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from smac_rllib.envs import (  # first: sets MUJOCO_GL before dm_control is imported (docs/design.md §4)
    DMCEnv,
    ENV_CONFIG_KEYS,
    derive_seed,
    end_flags,
    env_names,
    make_env,
    parse_env_name,
    register_dmc_envs,
)
from smac_rllib.envs import perturb as P
from smac_rllib.envs.__main__ import main as envs_main

from dm_control import suite  # noqa: E402,I001  (after smac_rllib.envs on purpose)


def _rollout(env: DMCEnv, actions: np.ndarray, seed: int | None = None) -> tuple[list, list]:
    obs, _ = env.reset(seed=seed)
    observations, rewards = [obs], []
    for a in actions:
        obs, r, terminated, truncated, _ = env.step(a)
        observations.append(obs)
        rewards.append(r)
        if terminated or truncated:
            break
    return observations, rewards


def _actions(n: int, dim: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1, 1, size=(n, dim)).astype(np.float32)


@pytest.fixture(scope="module")
def pixel_env() -> DMCEnv:
    env = make_env("dmc/cartpole-swingup", {"from_pixels": True, "seed": 0})
    yield env
    env.close()


# ---------------------------------------------------------------- spaces


@pytest.mark.parametrize("name, obs_dim, act_dim", [("dmc/cheetah-run", 17, 6), ("dmc/ball_in_cup-catch", 8, 2)])
def test_state_spaces_and_dtypes(name, obs_dim, act_dim):
    env = make_env(name, {"seed": 0})
    assert env.observation_space.shape == (obs_dim,) and env.observation_space.dtype == np.float32
    assert env.action_space.shape == (act_dim,) and env.action_space.dtype == np.float32
    assert np.all(env.action_space.low == -1) and np.all(env.action_space.high == 1)
    assert env.action_repeat == 1
    obs, info = env.reset()
    assert obs.dtype == np.float32 and obs.shape == (obs_dim,) and env.observation_space.contains(obs)
    obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
    assert obs.dtype == np.float32 and isinstance(reward, float) and not (terminated or truncated)
    assert info["discount"] == 1.0
    # Flattened in dm_control's key order.
    dm_obs = env.dm_env.task.get_observation(env.physics)
    np.testing.assert_allclose(obs, np.concatenate([np.ravel(v) for v in dm_obs.values()]), rtol=1e-6)


def test_pixel_observation(pixel_env):
    assert pixel_env.observation_space.shape == (64, 64, 3) and pixel_env.observation_space.dtype == np.uint8
    assert pixel_env.action_repeat == 2 and pixel_env.camera_id == 0
    obs, _ = pixel_env.reset(seed=0)
    assert obs.shape == (64, 64, 3) and obs.dtype == np.uint8 and pixel_env.observation_space.contains(obs)
    assert obs.max() > 50 and obs.std() > 5  # a scene, not a black frame
    obs2, *_ = pixel_env.step(np.ones(1, np.float32))
    assert obs2.shape == (64, 64, 3) and not np.array_equal(obs, obs2)


def test_image_size_camera_and_render():
    env = make_env(
        "dmc/cartpole-swingup",
        {"from_pixels": True, "image_size": 32, "render_mode": "rgb_array", "render_size": 48, "fast_render": True},
    )
    obs, _ = env.reset(seed=0)
    assert obs.shape == (32, 32, 3)
    frame = env.render()
    assert frame.shape == (48, 48, 3) and frame.dtype == np.uint8 and frame.max() > 50
    assert make_env("dmc/cartpole-swingup", {}).render() is None  # render_mode None
    quadruped = make_env("dmc/quadruped-walk", {"from_pixels": True})
    assert quadruped.camera_id == 2  # PlaNet/Dreamer camera
    assert make_env("dmc/quadruped-walk", {"from_pixels": True, "camera_id": 1}).camera_id == 1
    with pytest.raises(ValueError, match="camera_id=7 out of range"):
        make_env("dmc/cartpole-swingup", {"from_pixels": True, "camera_id": 7})


def test_fast_render_close_but_not_identical():
    frames = {}
    for fast in (False, True):
        env = make_env("dmc/cartpole-swingup", {"from_pixels": True, "fast_render": fast, "seed": 3})
        env.reset()
        frames[fast] = env.step(np.full(1, 0.5, np.float32))[0].astype(np.int16)
    diff = np.abs(frames[False] - frames[True])
    assert diff.max() > 0  # no shadows / no MSAA changes some pixels
    assert diff.mean() < 4.0 and np.mean(diff > 32) < 0.05  # ... but the scene is the same


# ---------------------------------------------------------------- dynamics, seeds, episode ends


def test_action_repeat_sums_rewards():
    actions = _actions(20, 1)
    env1 = make_env("dmc/cartpole-swingup", {"action_repeat": 1})
    env2 = make_env("dmc/cartpole-swingup", {"action_repeat": 2})
    obs1, rew1 = _rollout(env1, np.repeat(actions, 2, axis=0), seed=5)
    obs2, rew2 = _rollout(env2, actions, seed=5)
    np.testing.assert_allclose(rew2, np.add(rew1[0::2], rew1[1::2]), rtol=1e-12)
    np.testing.assert_array_equal(np.stack(obs2), np.stack(obs1[0::2]))


def test_action_repeat_stops_at_episode_end():
    env = make_env("dmc/cartpole-balance", {"action_repeat": 3})  # 1000 steps: the last agent step has 1 physics step
    env.reset(seed=0)
    steps, done = 0, False
    while not done:
        _, _, terminated, truncated, _ = env.step(np.zeros(1, np.float32))
        done, steps = terminated or truncated, steps + 1
    assert steps == 334 and env.dm_env._step_count == 1000


def test_action_mapping_and_clipping():
    env = make_env("dmc/cheetah-run", {"seed": 0})
    env.reset()
    env.step(np.array([0.5, -0.25, 2.0, -3.0, 0.0, 1.0], np.float32))
    np.testing.assert_allclose(env.physics.data.ctrl, [0.5, -0.25, 1.0, -1.0, 0.0, 1.0])
    with pytest.raises(ValueError, match=r"dmc/cheetah-run got a non-finite action .* at step 2"):
        env.step(np.full(6, np.nan, np.float32))


def test_same_seed_same_episode_different_seeds_differ():
    actions = _actions(30, 6)
    a = make_env("dmc/cheetah-run", {"seed": 7})
    b = make_env("dmc/cheetah-run", {"seed": 123})
    obs_a, rew_a = _rollout(a, actions)  # the first reset uses the env_config seed 7
    obs_b, rew_b = _rollout(b, actions, seed=7)  # an explicit reset seed wins over env_config
    np.testing.assert_array_equal(np.stack(obs_a), np.stack(obs_b))
    assert rew_a == rew_b
    obs_c, rew_c = _rollout(b, actions, seed=8)
    assert not np.array_equal(obs_a[0], obs_c[0]) and rew_a != rew_c


def test_reset_without_seed_continues_stream():
    env = make_env("dmc/cheetah-run", {"seed": 7})
    first, second = env.reset()[0], env.reset()[0]
    assert not np.array_equal(first, second)  # a new initial state ...
    other = make_env("dmc/cheetah-run", {})
    np.testing.assert_array_equal(other.reset(seed=7)[0], first)
    np.testing.assert_array_equal(other.reset()[0], second)  # ... that the seed determines


def test_pixel_episode_reproducible(pixel_env):
    actions = _actions(5, 1)
    first, rew1 = _rollout(pixel_env, actions, seed=11)
    second, rew2 = _rollout(pixel_env, actions, seed=11)
    np.testing.assert_array_equal(np.stack(first), np.stack(second))
    assert rew1 == rew2


def test_end_flags_pure():
    assert end_flags(False, 1.0) == (False, False)
    assert end_flags(True, 0.0) == (True, False)  # task termination
    assert end_flags(True, 1.0) == (False, True)  # time limit


def test_time_limit_truncates():
    env = make_env("dmc/cartpole-balance", {"seed": 0})
    env.reset()
    for t in range(1, 1001):  # noqa: B007 -- t is read after the loop
        _, _, terminated, truncated, info = env.step(np.zeros(1, np.float32))
        if terminated or truncated:
            break
    assert (t, terminated, truncated, info["discount"]) == (1000, False, True, 1.0)
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(np.zeros(1, np.float32))
    short = make_env("dmc/cartpole-balance", {"time_limit": 0.1})  # 10 control steps of 0.01 s
    short.reset(seed=0)
    assert len(_rollout(short, np.zeros((50, 1), np.float32))[1]) == 10


def test_task_termination_is_terminated():
    # lqr ends the episode with discount 0 when the state reaches the origin: put it there.
    env = make_env("dmc/lqr-lqr_2_1", {"seed": 0})
    env.reset()
    env.physics.data.qpos[:] = 0.0
    env.physics.data.qvel[:] = 0.0
    env.physics.forward()  # dm_control's legacy step reuses the previous mj_step1 results
    _, _, terminated, truncated, info = env.step(np.zeros(env.action_space.shape, np.float32))
    assert (terminated, truncated, info["discount"]) == (True, False, 0.0)


def test_non_finite_reward_and_observation_raise():
    env = make_env("dmc/cheetah-run", {"seed": 0})
    env.reset()
    for _ in range(36):
        env.step(np.zeros(6, np.float32))
    env.dm_env.task.get_reward = lambda physics: float("nan")  # unit test of the guard only
    with pytest.raises(FloatingPointError, match=r"dmc/cheetah-run returned a non-finite reward nan at step 37"):
        env.step(np.zeros(6, np.float32))

    env = make_env("dmc/cartpole-swingup", {"seed": 0})
    env.reset()
    env.dm_env.task.get_observation = lambda physics: {"position": np.full(3, np.inf), "velocity": np.zeros(2)}
    with pytest.raises(
        FloatingPointError,
        match=r"dmc/cartpole-swingup returned a non-finite observation "
        r"\(position\) at step 1",
    ):
        env.step(np.zeros(1, np.float32))


# ---------------------------------------------------------------- perturbations (paper Table 1)


@pytest.mark.parametrize("std", [0.01, 0.05])
def test_gaussian_noise_std(std):
    image = np.full((64, 64, 3), 128, np.uint8)
    out = P.gaussian_noise(image, std, np.random.default_rng(0))
    assert out.dtype == np.uint8 and out.shape == image.shape
    measured = ((out.astype(np.float64) - 128) / 255).std()
    assert measured == pytest.approx(std, rel=0.05)  # uint8 rounding adds ~0.001 in quadrature
    np.testing.assert_array_equal(out, P.gaussian_noise(image, std, np.random.default_rng(0)))
    assert not np.array_equal(out, P.gaussian_noise(image, std, np.random.default_rng(1)))
    clipped = P.gaussian_noise(np.full((8, 8, 3), 255, np.uint8), 0.5, np.random.default_rng(0))
    assert clipped.dtype == np.uint8 and clipped.max() == 255  # clipped, no uint8 wrap-around


@pytest.mark.parametrize("prob", [0.01, 0.05, 0.5])
def test_sensor_missing_fraction(prob):
    image = np.full((128, 128, 3), 200, np.uint8)
    out = P.sensor_missing(image, prob, np.random.default_rng(0))
    assert out.dtype == np.uint8
    assert set(np.unique(out)) <= {0, 200}
    n = image.size
    assert np.mean(out == 0) == pytest.approx(prob, abs=4 * np.sqrt(prob * (1 - prob) / n))
    np.testing.assert_array_equal(out, P.sensor_missing(image, prob, np.random.default_rng(0)))


def test_perturb_noop_and_validation():
    image = np.random.default_rng(0).integers(0, 256, (16, 16, 3), dtype=np.uint8)
    assert P.perturb(image, pixel_noise_std=0.0, sensor_missing_prob=0.0, rng=np.random.default_rng(0)) is image
    with pytest.raises(ValueError, match="pixel_noise_std=-0.1 must be a finite std >= 0"):
        P.validate_perturbations(-0.1, 0.0)
    with pytest.raises(ValueError, match=r"sensor_missing_prob=1.5 must be a probability in \[0, 1\]"):
        make_env("dmc/cartpole-swingup", {"from_pixels": True, "sensor_missing_prob": 1.5})
    with pytest.raises(ValueError, match="set from_pixels=True"):
        make_env("dmc/cartpole-swingup", {"pixel_noise_std": 0.01})


def test_env_perturbations_seeded():
    config = {"from_pixels": True, "fast_render": True, "pixel_noise_std": 0.05, "sensor_missing_prob": 0.05}
    a, b = (make_env("dmc/cartpole-swingup", config) for _ in range(2))
    clean = make_env("dmc/cartpole-swingup", {"from_pixels": True, "fast_render": True})
    obs_a, obs_b, obs_clean = a.reset(seed=4)[0], b.reset(seed=4)[0], clean.reset(seed=4)[0]
    np.testing.assert_array_equal(obs_a, obs_b)
    assert obs_a.dtype == np.uint8 and not np.array_equal(obs_a, obs_clean)
    assert np.mean(obs_a == 0) >= 0.04  # missing values
    assert not np.array_equal(a.reset(seed=5)[0], obs_b)


# ---------------------------------------------------------------- names, env_config, registration


def test_names_and_parse():
    names = env_names()
    assert len(names) == len(suite.ALL_TASKS) and len(set(names)) == len(names)
    assert {"dmc/cheetah-run", "dmc/ball_in_cup-catch", "dmc/cartpole-swingup", "dmc/lqr-lqr_2_1"} <= set(names)
    assert parse_env_name("dmc/ball_in_cup-catch") == ("ball_in_cup", "catch")
    assert parse_env_name("walker-walk") == ("walker", "walk")  # prefix optional


@pytest.mark.parametrize(
    "name, suggestion",
    [
        ("dmc/cheetah-walk", "did you mean dmc/cheetah-run?"),
        ("dmc/chetah-run", "did you mean dmc/cheetah-run?"),
        ("dmc/cartpol-swingup", "dmc/cartpole-swingup"),
    ],
)
def test_unknown_env_suggests_close_matches(name, suggestion):
    with pytest.raises(ValueError) as err:
        make_env(name, {})
    assert f"unknown env '{name}'" in str(err.value) and suggestion in str(err.value)
    assert "python -m smac_rllib.envs --list" in str(err.value)


def test_unknown_env_config_key():
    with pytest.raises(ValueError, match=r"unknown env_config key 'image_sise' .*did you mean 'image_size'\?"):
        make_env("dmc/cheetah-run", {"image_sise": 64})
    with pytest.raises(ValueError, match="vector_entry_point"):
        make_env("dmc/cheetah-run", {"num_envs": 4})
    assert {
        "from_pixels",
        "image_size",
        "camera_id",
        "action_repeat",
        "fast_render",
        "pixel_noise_std",
        "sensor_missing_prob",
        "seed",
    } <= set(ENV_CONFIG_KEYS)


def test_list_cli(capsys):
    envs_main(["--list"])
    assert capsys.readouterr().out.split() == env_names()


def test_register_with_tune_and_gymnasium(ray_never_starts):
    import gymnasium as gym
    from ray.rllib.env.env_context import EnvContext
    from ray.tune.registry import ENV_CREATOR, _global_registry

    assert "dmc/cheetah-run" in register_dmc_envs()
    creator = _global_registry.get(ENV_CREATOR, "dmc/cartpole-swingup")
    env = creator(EnvContext({"seed": 3}, worker_index=0))
    assert isinstance(env, DMCEnv) and env.observation_space.shape == (5,)
    first = env.reset()[0]
    np.testing.assert_array_equal(first, make_env("dmc/cartpole-swingup", {"seed": 3}).reset()[0])
    # Distinct seeds per env runner and per sub-env.
    obs = [
        creator(EnvContext({"seed": 3}, worker_index=w, vector_index=v)).reset()[0] for w, v in [(1, 0), (2, 0), (1, 1)]
    ]
    assert not any(np.array_equal(first, o) for o in obs)
    assert len({derive_seed(3, w, v) for w in range(4) for v in range(4)}) == 16
    # RLlib builds a runner's sub-envs from one EnvContext (vector_index 0), as this SyncVectorEnv does.
    ctx = EnvContext({"seed": 3}, worker_index=1)
    vec = gym.vector.SyncVectorEnv([lambda: creator(ctx)] * 2)
    sub_obs = vec.reset()[0]
    assert not np.array_equal(sub_obs[0], sub_obs[1])
    np.testing.assert_array_equal(sub_obs[0], obs[0])  # sub-env 0 of runner 1
    gym_env = gym.make("dmc/cartpole-swingup", seed=3)
    np.testing.assert_array_equal(gym_env.reset()[0], first)


def test_gl_backend_guard_names_the_fix():
    # dm_control imported before MUJOCO_GL is set picks GLFW; headless, MuJoCo would abort at the first render.
    code = (
        "from dm_control import suite\n"
        "from smac_rllib.envs import make_env\n"
        "make_env('dmc/cartpole-swingup', {'from_pixels': True})\n"
    )
    env = {
        k: v for k, v in os.environ.items() if k not in ("MUJOCO_GL", "PYOPENGL_PLATFORM", "DISPLAY", "WAYLAND_DISPLAY")
    }
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "Export MUJOCO_GL=egl" in proc.stderr
