"""Shared by the acting benchmarks: env steps/s that a config's remote env runners sample, in parallel."""

from __future__ import annotations

import time


def sampled_steps_per_s(config, steps: int, warmup_steps: int) -> float:
    """Build ``config``, warm every remote env runner up (EGL context, torch), then time ``steps`` per runner."""
    algo = config.build_algo()
    try:
        group = algo.env_runner_group
        group.foreach_env_runner(lambda r: r.sample(num_timesteps=warmup_steps), local_env_runner=False)
        t0 = time.perf_counter()
        group.foreach_env_runner(lambda r: r.sample(num_timesteps=steps), local_env_runner=False)
        return config.num_env_runners * steps / (time.perf_counter() - t0)
    finally:
        algo.stop()
