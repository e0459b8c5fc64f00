"""How the learners run fast, none of it math: the metrics logger, device-side metrics, the cached train mode, and
``learner_capture`` (the one update captured in a CUDA graph). The update itself is one function per algorithm
(``objectives/``), run by the learner shell (``training/step_learner.py``; docs/design.md §9).

================================  ==========================================================================
``metrics_logger.py``             ``LeanMetricsLogger``: RLlib's logger, a short path for keys already logged
``train_mode.py``                 ``CachedTrainModeMixin`` (modules): ``train()`` without the submodule walk
``device_metrics.py``             ``DeviceMetrics``: per-update metrics on the device, one host copy per period
``captured_update.py``            ``learner_capture``: the update captured whole in one CUDA graph and replayed
================================  ==========================================================================

Also for speed, outside this package: fused Adam (``smac_rllib.core.optim.adam``) and the relaxed CUDA seeding
settings (``training/cuda_settings.py``, switched by ``cuda_deterministic``).
"""

import importlib

_HOMES = {  # lazy: ``captured_update`` (pure torch) imports without Ray, as the device benchmarks need
    "CAPTURE_MODES": "captured_update",
    "CaptureUnavailable": "captured_update",
    "GraphedUpdate": "captured_update",
    "resolve_capture": "captured_update",
    "DeviceMetrics": "device_metrics",
    "LeanMetricsLogger": "metrics_logger",
    "LeanMetricsMixin": "metrics_logger",
    "CachedTrainModeMixin": "train_mode",
}
__all__ = list(_HOMES)


def __getattr__(name):
    if name in _HOMES:
        return getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
