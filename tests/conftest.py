"""Shared fixtures: one real local Ray for the integration tests, W&B off, torch on 1 thread."""

from __future__ import annotations

import os

import smac_rllib  # noqa: E402,F401 -- sets MUJOCO_GL before anything imports dm_control (smac_rllib.headless_gl)

os.environ.setdefault("RAY_AUTH_MODE", "disabled")
os.environ.setdefault("WANDB_MODE", "disabled")
os.environ.setdefault("RAY_DEDUP_LOGS", "0")

import pytest  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def ray_local():
    """A real local Ray with 4 logical CPUs on this 2-core machine (learners + env runners + driver), one per test
    module: modules that check that a mistake never starts Ray (test_mistakes.py, test_envs.py) see none."""
    import ray

    smac_rllib.register()
    if not ray.is_initialized():
        ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield ray
    ray.shutdown()
