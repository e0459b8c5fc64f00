"""Byte-compile exactly the modules a run imports, once, after ``pip install --no-compile`` (``make setup``).

pip byte-compiles every file of every wheel it installs: for torch and Ray that is most of the install's time
(measured on a 2-core machine: 122 s with compiling, 66 s without), while a run imports a small part of them. This
imports what ``rllib train`` and the tests import (every module of the package, the RLlib algorithms it names,
dm_control's suite, the loggers and the plots) with bytecode writing on, even where ``PYTHONDONTWRITEBYTECODE`` is
set, so that later processes load ``.pyc`` files instead of compiling the sources again at every start.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import time
import warnings

sys.dont_write_bytecode = False  # before any import below: their .pyc files are written

# What a run imports beyond the package's own modules (lazily imported ones included).
EXTRA = (
    "dm_control.suite",
    "gymnasium.envs.mujoco",
    "matplotlib.pyplot",
    "pytest",
    "ray.rllib.algorithms.dqn",
    "ray.rllib.algorithms.dreamerv3",
    "ray.rllib.algorithms.ppo",
    "ray.rllib.algorithms.sac",
    "ray.tune.schedulers",
    "ray.tune.search",
    "tensorboardX",
    "torch.distributed",
    "wandb",
    "yaml",
)


def main() -> int:
    warnings.simplefilter("ignore")  # import-time warnings of the libraries: not this step's business
    started, before = time.perf_counter(), len(sys.modules)
    import smac_rllib

    names = [info.name for info in pkgutil.walk_packages(smac_rllib.__path__, "smac_rllib.")]
    failed = []
    for name in [*names, *EXTRA]:
        try:
            importlib.import_module(name)
        except Exception as e:  # an optional extra that is not installed: compiled when it is
            failed.append(f"{name} ({type(e).__name__})")
    print(
        f"compile_imports: {len(sys.modules) - before} modules imported and byte-compiled in "
        f"{time.perf_counter() - started:.0f}s" + (f"; not importable here: {', '.join(failed)}" if failed else "")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
