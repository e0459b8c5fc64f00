"""The speed layer: what the learners and modules do for speed and nothing they do for the math, behind one switch.

``fast_update: true`` (the default of SMAC, SLAC and Dreamer) runs it; ``fast_update: false`` runs the same learners
and modules on RLlib's and torch's own code paths (``switch.py`` says exactly what each piece hands back), which the
tests hold equal to it: weights, Adam moments and target networks (state and pixel SMAC, SLAC) and every reduced
metric (state SMAC); fp16's scaler and the non-finite stop run on both (docs/design.md §9, §10).

================================  ==========================================================================
``lean_update.py``                ``LeanUpdateMixin``: ``Learner.update`` straight to ``_update`` for one replay
                                  batch, no gradient re-checks, foreach Polyak averaging; ``LeanMetricsLogger``
``train_mode.py``                 ``CachedTrainModeMixin`` (modules): ``train()`` without the submodule walk
``device_metrics.py``             ``DeviceMetrics``: per-update metrics on the device, one host copy per period
``captured_update.py``            ``learner_capture``: the pixel update (``PixelUpdate.step``) in one CUDA graph
``switch.py``                     ``rllib_path``: the ``...RLlibPath`` classes ``fast_update: false`` picks
================================  ==========================================================================

Not in the layer, the same on both paths: fused Adam (``smac_rllib.core.optim.adam``; the reference updates in
``objectives/`` step with it too) and the relaxed CUDA seeding settings (``training/cuda_settings.py``, switched by
``cuda_deterministic``). The SACBaseline, TD3 and SACFlow / SACMoE (``PolicySAC``) learners have no switch: they keep
RLlib's update path and module ``train()``, and take only the metrics logger and ``DeviceMetrics`` (through
``AsyncLearnerMixin``, the same logged values); their learners say why.
"""

import importlib

_HOMES = {  # lazy: ``captured_update`` (pure torch) imports without Ray, as the device benchmarks need
    "CAPTURE_MODES": "captured_update", "CaptureUnavailable": "captured_update", "GraphedUpdate": "captured_update",
    "resolve_capture": "captured_update", "DeviceMetrics": "device_metrics", "LeanMetricsLogger": "lean_update",
    "LeanMetricsMixin": "lean_update", "LeanUpdateMixin": "lean_update", "rllib_path": "switch",
    "CachedTrainModeMixin": "train_mode",
}
__all__ = list(_HOMES)


def __getattr__(name):
    if name in _HOMES:
        return getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
