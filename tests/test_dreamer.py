"""RLlib's DreamerV3 on our dmc pixel envs: the float-frame bridge, the CLI, checkpoints, the mistakes it refuses.

Real Ray, real dm_control (MUJOCO_GL=egl), tiny sizes: tests/data/dreamerv3_tiny.yaml is RLlib's "nano" DreamerV3
on cartpole-swingup, 64x64 frames (the only size RLlib's DreamerV3 builds), 20-step episodes, 2 iterations of 40
agent steps with an evaluation each. One CLI run (a subprocess, as users run it) is shared by the tests that read
its results; the restore test continues its checkpoint from Python.
"""

from __future__ import annotations

import glob
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from smac_rllib.cli.main import main

REPO = Path(__file__).resolve().parents[1]
TINY = REPO / "tests" / "data" / "dreamerv3_tiny.yaml"
RLLIB = str(Path(sys.executable).parent / "rllib")
EVAL_RETURN = ("evaluation", "env_runners", "episode_return_mean")
pytestmark = pytest.mark.timeout(900)  # ~60 s on an idle 2-core machine; generous for a loaded one


# --------------------------------------------------------------------------------------------- the bridge


def test_float_frames_are_the_uint8_frames_scaled_to_plus_minus_half():
    from smac_rllib.envs import make_env

    kwargs = {"from_pixels": True, "seed": 3, "time_limit": 0.2}
    raw_env, float_env = (
        make_env("dmc/cartpole-swingup", kwargs),
        make_env("dmc/cartpole-swingup", {**kwargs, "pixel_format": "float"}),
    )
    assert raw_env.observation_space.dtype == np.uint8, "the default (SMAC's) stays raw uint8 frames"
    assert float_env.observation_space.dtype == np.float32 and float_env.observation_space.shape == (64, 64, 3)
    assert (float_env.observation_space.low.min(), float_env.observation_space.high.max()) == (-0.5, 0.5)
    raw, _ = raw_env.reset()
    obs, _ = float_env.reset()
    frames = [(raw, obs)]
    for action in (np.array([0.7], np.float32), np.array([-1.0], np.float32)):
        frames.append((raw_env.step(action)[0], float_env.step(action)[0]))
    for raw, obs in frames:
        assert obs.dtype == np.float32 and obs.shape == (64, 64, 3)
        assert float_env.observation_space.contains(obs)
        np.testing.assert_array_equal(
            obs, raw.astype(np.float32) / 255.0 - 0.5
        )  # the same pixels, RLlib DMCEnv's scale
    assert frames[-1][0].std() > 0 and not np.array_equal(frames[0][0], frames[-1][0]), "real, moving renders"
    ends = np.array([[0, 255]], np.uint8).astype(np.float32) / np.float32(255.0) - np.float32(0.5)
    assert ends.tolist() == [[-0.5, 0.5]]  # the Box bounds are reached exactly


def test_cli_fills_in_float_frames_for_dreamerv3_only():
    import smac_rllib
    from smac_rllib.cli.yaml_loader import load_experiments

    smac_rllib.register()
    (spec,) = load_experiments(str(TINY))
    (config,) = spec.configs
    assert config.env_config["pixel_format"] == "float" and config.model_size == "nano"
    (pixels,) = load_experiments(str(REPO / "tuned_examples" / "dreamerv3_pixels.yaml"))
    assert pixels.configs[0].env_config["pixel_format"] == "float"
    assert (pixels.configs[0].model_size, pixels.configs[0].training_ratio) == ("S", 512)
    from smac_rllib.algorithms.baselines.dreamerv3 import effective_training_ratio as dreamerv3_effective_training_ratio

    assert dreamerv3_effective_training_ratio(pixels.configs[0]) == 512, "4 envs x 512 = 2 whole 16 x 64 batches"
    assert dreamerv3_effective_training_ratio(config) == 8
    (smac,) = load_experiments(str(REPO / "tuned_examples" / "smac_pixels_quick.yaml"))
    assert "pixel_format" not in smac.configs[0].env_config, "SMAC keeps uint8 frames"


# --------------------------------------------------------------------------------------------- mistakes

_MISTAKES = {
    "model_size": ("model_size: XXL", "model_size='XXL' is not a DreamerV3 size"),
    "batch_length_T": ("batch_length_T: 1", "batch_length_T=1 must be an integer >= 2"),
    "image_size": ("image_size: 32", "env_config.image_size=32: RLlib's DreamerV3 builds"),
    "pixel_format": ("pixel_format: uint8", "env_config.pixel_format='uint8': RLlib's DreamerV3 takes float"),
    "training_ratio": ("training_ratio: 0", "training_ratio=0 must be > 0"),
    "capacity": (
        "replay_buffer_config: {type: EpisodeReplayBuffer, capacity: 10}",
        "capacity=10 must be >= the batch size 16",
    ),
}


@pytest.mark.parametrize("name", list(_MISTAKES))
def test_bad_dreamerv3_setting_is_one_line_exit_2_before_ray(name, tmp_path, capfd, ray_never_starts):
    line, expect = _MISTAKES[name]
    key = line.split(":")[0]
    indent = "      " if key in ("image_size", "pixel_format") else "    "  # env_config's keys | config's
    anchor = "      action_repeat: 2\n" if key in ("image_size", "pixel_format") else "    seed: 0\n"
    text, replaced = re.subn(rf"^{indent}{key}:.*$", indent + line, TINY.read_text(), count=1, flags=re.M)
    if not replaced:
        text = text.replace(anchor, anchor + indent + line + "\n", 1)
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    code = main(["train", "file", str(path), "--dry-run"])
    out, err = capfd.readouterr()
    lines = err.strip().splitlines()
    assert code == 2, (out, err)
    assert "Traceback" not in out + err and len(lines) == 1, err
    assert lines[0].startswith("rllib: error: ") and expect in lines[0], lines[0]
    assert f"{path}:" in lines[0], "the message names the file (and line)"


# --------------------------------------------------------------------------------------------- training


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """`rllib train file tests/data/dreamerv3_tiny.yaml`: 2 iterations, an evaluation and a checkpoint each."""
    storage = tmp_path_factory.mktemp("dreamer_run")
    env = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_")}
    env.update(PYTHONUNBUFFERED="1", MUJOCO_GL="egl")
    proc = subprocess.run(
        [RLLIB, "train", "file", str(TINY), "--storage-path", str(storage)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=REPO,
    )
    (trial_dir,) = glob.glob(str(storage / "dreamerv3-tiny" / "DreamerV3_*"))
    return {"proc": proc, "storage": storage, "trial_dir": trial_dir}


def _results(trial_dir: str) -> list[dict]:
    with open(os.path.join(trial_dir, "result.json")) as f:
        return [json.loads(line) for line in f if line.strip()]


def _get(row: dict, path: tuple) -> float | None:
    for key in path:
        row = row.get(key) if isinstance(row, dict) else None
    return row


def test_cli_trains_two_iterations_from_pixels_with_evaluation(run):
    proc = run["proc"]
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    rows = _results(run["trial_dir"])
    assert [r["training_iteration"] for r in rows] == [1, 2]
    assert [r["env_runners"]["num_env_steps_sampled_lifetime"] for r in rows] == [40, 80]
    assert rows[-1]["num_grad_updates_lifetime"] >= 20, "the world model, critic and actor were updated"
    assert np.isfinite(rows[-1]["learners"]["default_policy"]["WORLD_MODEL_L_total"])
    for row in rows:  # RLlib's evaluation works for DreamerV3: a deterministic episode every iteration
        assert np.isfinite(_get(row, EVAL_RETURN)), row.get("evaluation")
        assert _get(row, ("evaluation", "env_runners", "episode_len_mean")) == 20
    # the progress lines, the summary and the curves report the evaluation return
    assert " it   2 | 80 steps | return eval " in proc.stdout, proc.stdout
    assert "== dreamerv3-tiny: 1 trial(s), 1 finished, 0 failed" in proc.stdout
    assert "eval return  last " in proc.stdout
    assert os.path.getsize(run["storage"] / "dreamerv3-tiny" / "curves.png") > 10_000


def test_checkpoint_restores_from_python_and_training_continues(run, ray_local):
    from ray.rllib.algorithms.algorithm import Algorithm

    from smac_rllib.cli.checkpoints import checkpoint_dirs, is_complete

    checkpoint = [d for d in checkpoint_dirs(run["trial_dir"]) if is_complete(d)][-1]
    algo = Algorithm.from_checkpoint(checkpoint)
    try:
        assert type(algo).__name__ == "DreamerV3" and algo.config.env_config["pixel_format"] == "float"
        assert algo.iteration == 2
        before = algo.metrics.peek(("env_runners", "num_env_steps_sampled_lifetime"))
        result = algo.train()
        assert result["training_iteration"] == 3
        assert before == 80 and result["env_runners"]["num_env_steps_sampled_lifetime"] > 80, "counters restored"
        assert result["num_grad_updates_lifetime"] > _results(run["trial_dir"])[-1]["num_grad_updates_lifetime"]
        assert np.isfinite(_get(result, EVAL_RETURN))
    finally:
        algo.stop()
