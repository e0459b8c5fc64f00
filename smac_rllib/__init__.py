"""smac_rllib: Stochastic Marginal Actor-Critic (Zhang et al., ICLR 2023) on Ray RLlib.

Importing the package registers the algorithm ``"SMAC"`` and the ``dmc/<domain>-<task>`` envs with Tune.
``MUJOCO_GL`` must be set before dm_control is first imported (and ``import ray.rllib`` imports it), so it is
set here, first thing: EGL renders headless (Mesa on CPU, the NVIDIA driver on GPU nodes).
"""

import os



def headless_gl() -> None:
    """``MUJOCO_GL=egl`` unless set, and PyOpenGL on the same platform for egl / osmesa: dm_control picks its GL backend
    once, when first imported, and ``import ray.rllib`` imports it (docs/design.md §4). The one place that sets them:
    importing ``smac_rllib`` runs it; scripts that start without the package call it before importing ray."""
    os.environ.setdefault("MUJOCO_GL", "egl")
    if os.environ["MUJOCO_GL"] in ("egl", "osmesa"):
        os.environ.setdefault("PYOPENGL_PLATFORM", os.environ["MUJOCO_GL"])


headless_gl()

__version__ = "0.1.0"


def register() -> None:
    """Register "SMAC", the state baselines ("SACBaseline", "TD3", "SACFlow", "SACMoE"), the pixel baselines ("SLAC",
    "Dreamer") and every
    ``dmc/<domain>-<task>`` env with Tune/RLlib (idempotent, no Ray start)."""
    from ray.tune.registry import register_trainable

    from smac_rllib import algorithms
    from smac_rllib.envs import register_dmc_envs

    for name in TRAINABLES:
        register_trainable(name, getattr(algorithms, name))
    register_dmc_envs()


TRAINABLES = ("SMAC", "SACBaseline", "TD3", "SACFlow", "SACMoE", "SLAC", "Dreamer")  # Tune names = class names in smac_rllib.algorithms


def __getattr__(name):  # lazy: `from smac_rllib import SMACConfig` without paying for Ray on every import
    if name in TRAINABLES or (name.endswith("Config") and name[: -len("Config")] in TRAINABLES):
        register()
        from smac_rllib import algorithms

        return getattr(algorithms, name)
    raise AttributeError(f"module 'smac_rllib' has no attribute {name!r}")
