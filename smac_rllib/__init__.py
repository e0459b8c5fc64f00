"""smac_rllib: Stochastic Marginal Actor-Critic (Zhang et al., ICLR 2023) on Ray RLlib.

``register()`` registers the algorithms (``TRAINABLES``) and the ``dmc/<domain>-<task>`` envs with Tune; importing
the package does not import Ray (``from smac_rllib import SMACConfig`` registers on first use).
``MUJOCO_GL`` must be set before dm_control is first imported (and ``import ray.rllib`` imports it), so it is
set here, first thing: EGL renders headless (Mesa on CPU, the NVIDIA driver on GPU nodes).
"""

import importlib
import importlib.util
import os
import sys


def headless_gl() -> None:
    """``MUJOCO_GL=egl`` unless set, and PyOpenGL on the same platform for egl / osmesa: dm_control picks its GL backend
    once, when first imported, and ``import ray.rllib`` imports it (docs/design.md §4). The one place that sets them:
    importing ``smac_rllib`` runs it; scripts that start without the package call it before importing ray."""
    os.environ.setdefault("MUJOCO_GL", "egl")
    if os.environ["MUJOCO_GL"] in ("egl", "osmesa"):
        os.environ.setdefault("PYOPENGL_PLATFORM", os.environ["MUJOCO_GL"])


headless_gl()

# Modules that moved to the layered layout (docs/design.md §2). Checkpoints written before the move name classes by
# their old module path (pickles of the algorithm, its learner, RLModule and callbacks); the finder below makes each
# old path import as the new module itself, so those checkpoints restore. Nothing in the package uses the old paths.
MOVED = {
    "smac_rllib.algorithms.off_policy": "smac_rllib.training.off_policy",
    "smac_rllib.algorithms.async_loop": "smac_rllib.training.async_driver",
    "smac_rllib.algorithms.replay_learner": "smac_rllib.training.async_learner",
    "smac_rllib.training.replay_learner": "smac_rllib.training.async_learner",
    "smac_rllib.training.async_loop": "smac_rllib.training.async_driver",
    "smac_rllib.algorithms.lean_update": "smac_rllib.training.fast_update",  # the package names all it held
    "smac_rllib.training.lean_update": "smac_rllib.training.fast_update",
    "smac_rllib.training.fast_update.lean_update": "smac_rllib.training.fast_update.metrics_logger",
    "smac_rllib.algorithms.sac_baseline": "smac_rllib.algorithms.baselines.sac_baseline",
    "smac_rllib.algorithms.td3": "smac_rllib.algorithms.baselines.td3",
    "smac_rllib.algorithms.sac_flow": "smac_rllib.algorithms.baselines.sac_flow",
    "smac_rllib.algorithms.sac_moe": "smac_rllib.algorithms.baselines.sac_moe",
    "smac_rllib.algorithms.policy_sac": "smac_rllib.algorithms.baselines.policy_sac",
    "smac_rllib.algorithms.slac": "smac_rllib.algorithms.baselines.slac",
    "smac_rllib.algorithms.dreamer": "smac_rllib.algorithms.baselines.dreamer",
    "smac_rllib.estimators": "smac_rllib.core.estimators",
    "smac_rllib.elbo": "smac_rllib.core.elbo",
    "smac_rllib.optim": "smac_rllib.core.optim",
    "smac_rllib.models.distributions": "smac_rllib.core.distributions",
    "smac_rllib.losses": "smac_rllib.objectives.losses",
    "smac_rllib.pixel_update": "smac_rllib.objectives.pixel_update",
    "smac_rllib.imagination": "smac_rllib.objectives.imagination",
    "smac_rllib.rate_limiter": "smac_rllib.training.rate_limiter",
    "smac_rllib.replay": "smac_rllib.training.replay",
    "smac_rllib.captured_update": "smac_rllib.training.fast_update.captured_update",
    "smac_rllib.training.captured_update": "smac_rllib.training.fast_update.captured_update",
    "smac_rllib.algorithms.smac.connectors": "smac_rllib.algorithms.connectors",  # shared by the pixel algorithms
}


def _moved_to(fullname: str) -> str | None:
    """The new path of an old module path (a moved package's submodules included), else None."""
    for old, new in MOVED.items():
        if fullname == old or fullname.startswith(old + "."):
            return new + fullname[len(old) :]
    return None


class _MovedModules:
    """``sys.meta_path`` finder: an old module path imports as the new module object (the same classes)."""

    @staticmethod
    def find_spec(fullname, path=None, target=None):
        new = _moved_to(fullname)
        return importlib.util.spec_from_loader(fullname, _MovedModules(), is_package=True) if new else None

    @staticmethod
    def create_module(spec):
        return importlib.import_module(_moved_to(spec.name))

    @staticmethod
    def exec_module(module):
        pass


if not any(isinstance(f, _MovedModules) for f in sys.meta_path):
    sys.meta_path.insert(0, _MovedModules())  # first: a moved package's old submodule path must not load twice

__version__ = "0.1.0"


def register() -> None:
    """Register "SMAC", the state baselines ("SACBaseline", "TD3", "SACFlow", "SACMoE"), the pixel baselines ("SLAC",
    "Dreamer") and every
    ``dmc/<domain>-<task>`` env with Tune/RLlib (idempotent, no Ray start)."""
    # lazy: importing the package imports neither Ray nor the algorithms and envs (dm_control, torch)
    from ray.tune.registry import register_trainable

    from smac_rllib import algorithms
    from smac_rllib.envs import register_dmc_envs

    for name in TRAINABLES:
        register_trainable(name, getattr(algorithms, name))
    register_dmc_envs()


TRAINABLES = (
    "SMAC",
    "SACBaseline",
    "TD3",
    "SACFlow",
    "SACMoE",
    "SLAC",
    "Dreamer",
)  # Tune names = class names in smac_rllib.algorithms


def __getattr__(name):
    if name in TRAINABLES or (name.endswith("Config") and name[: -len("Config")] in TRAINABLES):
        register()
        from smac_rllib import algorithms  # lazy: `from smac_rllib import SMACConfig` without Ray on every import

        return getattr(algorithms, name)
    raise AttributeError(f"module 'smac_rllib' has no attribute {name!r}")
