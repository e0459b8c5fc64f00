"""Class names that older checkpoints pickled and the code no longer defines.

Until the update became one function (docs/design.md §9), ``fast_update: false`` picked ``<Name>RLlibPath`` twins of
the learners and RLModules; a checkpoint names classes by module path and name.
``__getattr__ = retired_twins(globals())`` at the end of a module makes ``<module>.<Name>RLlibPath`` the class
``<Name>`` of the same module, so they restore.
"""

from __future__ import annotations

SUFFIX = "RLlibPath"


def retired_twins(module_globals: dict):
    def __getattr__(name: str):
        if name.endswith(SUFFIX) and isinstance(module_globals.get(name[: -len(SUFFIX)]), type):
            return module_globals[name[: -len(SUFFIX)]]
        raise AttributeError(f"module {module_globals['__name__']!r} has no attribute {name!r}")

    return __getattr__
