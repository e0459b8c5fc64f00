"""Shared fixtures: one real local Ray for the integration tests, W&B off, torch on 1 thread."""

from __future__ import annotations

import os

import smac_rllib  # noqa: E402,F401 -- sets MUJOCO_GL before anything imports dm_control (smac_rllib.headless_gl)

os.environ.setdefault("RAY_AUTH_MODE", "disabled")
os.environ.setdefault("WANDB_MODE", "disabled")
os.environ.setdefault("RAY_DEDUP_LOGS", "0")
# `make test` runs the modules on two pytest-xdist workers (one file per worker at a time, `--dist loadfile`): each
# worker's Ray gets a temp dir of its own, so neither reads the other's session files or "latest cluster" address.
if os.environ.get("PYTEST_XDIST_WORKER") and "RAY_TMPDIR" not in os.environ:
    os.environ["RAY_TMPDIR"] = f"/tmp/ray_{os.environ['PYTEST_XDIST_WORKER']}"  # short: Ray's socket paths live there

import pytest  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(1)

# The files whose tests train through a real Ray (learners, env runners, the CLI's runs, clusters): `make test-fast`
# (`-m "not slow"`) runs the rest -- the math against closed forms, the components, the CLI's checks before Ray.
SLOW_FILES = frozenset(
    {
        "test_async.py",
        "test_baselines.py",
        "test_cli.py",
        "test_cluster.py",
        "test_dreamer.py",
        "test_evaluation.py",
        "test_live_progress.py",
        "test_pixel_update.py",
        "test_reliability.py",
        "test_slac.py",
        "test_smac_integration.py",
        "test_smac_pixels.py",
    }
)


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: trains through a real Ray (tests/conftest.py: SLOW_FILES)")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.name in SLOW_FILES:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def _one_ray_per_session(tmp_path_factory):
    """Shuts down at the end of the session the Ray that ``ray_local`` started and kept. An algorithm built outside
    Tune logs to a new directory under Tune's default storage path: the session's temporary one, not ~/ray_results."""
    from ray.tune.trainable import trainable

    trainable.DEFAULT_STORAGE_PATH = str(tmp_path_factory.mktemp("ray_results"))
    yield
    import ray

    if ray.is_initialized():
        ray.shutdown()


@pytest.fixture(scope="module")
def ray_local(_one_ray_per_session):
    """A real local Ray with 4 logical CPUs on this 2-core machine (learners + env runners + driver), started once and
    kept from module to module (each start costs 5-8 s). A module that leaves anything holding resources (an actor
    not stopped) gets its Ray shut down at its end, so the next module starts a clean one; a module that needs another
    Ray (a cluster, the CLI's own) shuts it down itself. Modules that check that a mistake never starts Ray use
    ``ray_never_starts``."""
    import ray

    smac_rllib.register()
    if not ray.is_initialized():
        ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield ray
    if ray.is_initialized() and not _all_resources_free(ray):
        ray.shutdown()


def _all_resources_free(ray, wait_s: float = 5.0) -> bool:
    """Every CPU and GPU of the local Ray free again (stopped actors give theirs back within a moment)."""
    import time

    deadline = time.monotonic() + wait_s
    while True:
        total, free = ray.cluster_resources(), ray.available_resources()
        if all(free.get(k, 0) >= total[k] for k in ("CPU", "GPU") if k in total):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)


@pytest.fixture
def ray_never_starts(monkeypatch):
    """The test fails if anything calls ``ray.init`` (whether or not the session's Ray is up): a mistake must be
    caught before Ray starts."""
    import ray

    def refuse(*args, **kwargs):
        raise AssertionError("ray.init was called: a mistake must be caught before Ray starts")

    monkeypatch.setattr(ray, "init", refuse)
