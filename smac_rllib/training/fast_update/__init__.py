"""The speed layer: everything the learners do for speed and nothing they do for the math, behind one switch.

``fast_update: true`` (the default of SMAC, SLAC and Dreamer) runs it; ``fast_update: false`` runs the same learners
and modules on RLlib's and torch's own code paths (``switch.py``), which the tests hold equal to it: the same weights,
Adam moments, target networks and metrics (docs/design.md §9, §10).

================================  ==========================================================================
``lean_update.py``                ``LeanUpdateMixin``: ``Learner.update`` straight to ``_update`` for one replay
                                  batch, no gradient re-checks, foreach Polyak averaging; ``LeanMetricsLogger``
``train_mode.py``                 ``CachedTrainModeMixin`` (modules): ``train()`` without the submodule walk
``device_metrics.py``             ``DeviceMetrics``: per-update metrics on the device, one host copy per period
``captured_update.py``            ``learner_capture``: the pixel update (``PixelUpdate.step``) in one CUDA graph
``cuda_settings.py``              what RLlib's seeding adds on a CUDA torch, relaxed unless ``cuda_deterministic``
``switch.py``                     the ``...RLlibPath`` learner and module classes ``fast_update: false`` picks
================================  ==========================================================================

Fused Adam (``smac_rllib.core.optim``) is not here: the reference updates (``objectives/``) step with it too, so it
is part of the update both paths run. Learners that keep RLlib's path (SACBaseline, TD3, SACFlow, SACMoE) say why in
their docstrings.
"""

import importlib

_HOMES = {  # lazy: ``captured_update`` (pure torch) imports without Ray, as the device benchmarks need
    "CAPTURE_MODES": "captured_update", "CaptureUnavailable": "captured_update", "GraphedUpdate": "captured_update",
    "resolve_capture": "captured_update", "DeviceMetrics": "device_metrics", "LeanMetricsLogger": "lean_update",
    "LeanMetricsMixin": "lean_update", "LeanUpdateMixin": "lean_update", "PlainTrainMode": "switch",
    "RLlibUpdatePath": "switch", "rllib_module_path": "switch", "rllib_update_path": "switch",
    "CachedTrainModeMixin": "train_mode", "relax_seeded_cuda_settings": "cuda_settings",
}
__all__ = list(_HOMES)


def __getattr__(name):
    if name in _HOMES:
        return getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
