"""CUDA settings the learners relax for speed, governed by their own switch ``cuda_deterministic`` (not
``fast_update``): what RLlib's seeding adds to the seeds on a CUDA torch."""

from __future__ import annotations

import os

import torch


RLLIB_CUBLAS_WORKSPACE_CONFIG = ":4096:8"  # what ray.rllib.utils.torch_utils.set_torch_seed sets on a CUDA torch


def relax_seeded_cuda_settings(config) -> None:
    """Undo what RLlib's seeding adds to the seeds on a CUDA torch, unless ``cuda_deterministic`` asks to keep it.

    With a config seed, RLlib's ``Learner.__init__`` (and each env runner's) calls ``set_torch_seed``, which on a CUDA
    build of torch also sets ``CUBLAS_WORKSPACE_CONFIG=:4096:8`` and ``cudnn.deterministic = True`` (on a CPU build:
    ``use_deterministic_algorithms(True)``, kept here: no measurable cost on the CPU). On an H100 those made the pixel
    update 1.43-1.71x slower and each ``F.linear`` call 2.4x dearer on the host (docs/gpu.md). Called from the
    learner's ``build``, after the trial process's own env runners have seeded (RLlib builds them first) and before
    the first update runs cuBLAS. Measured with it, the seeded live pixel run updated at 0.172 s per update against
    0.39-0.40 s before (one H100, benchmarks/results/gpu/session6/)."""
    if config.seed is None or getattr(config, "cuda_deterministic", False):
        return  # no seed: RLlib set nothing (a user's own settings stay)
    if os.environ.get("CUBLAS_WORKSPACE_CONFIG") == RLLIB_CUBLAS_WORKSPACE_CONFIG:
        del os.environ["CUBLAS_WORKSPACE_CONFIG"]
    torch.backends.cudnn.deterministic = False  # torch's default; RLlib leaves cudnn.benchmark at its default too
