"""RLlib's ``MetricsLogger`` with a short path for keys already logged (``LeanMetricsLogger``), on every learner of the
project (``LeanMetricsMixin``, through ``AsyncLearnerMixin``).

Each ``MetricsLogger.log_value`` (~30 per update: steps trained, learning rates, target updates, the loss diagnostics)
flattens its key with ``tree``, walks the nested stats dict twice and re-checks its keywords before the ``Stats.push``
it ends with: a fixed cost per key and update that the short path skips.
``tests/test_smac_components.py`` holds it to RLlib's own logger: the same reduced metrics.
"""

from __future__ import annotations

from ray._common.deprecation import DEPRECATED_VALUE
from ray.rllib.utils.metrics.metrics_logger import MetricsLogger
from ray.rllib.utils.metrics.stats.base import StatsBase

_WARNED_EACH_CALL = frozenset({"clear_on_reduce", "throughput_ema_coeff", "reduce_per_index_on_aggregate"})  # if set


class LeanMetricsLogger(MetricsLogger):
    """RLlib's ``MetricsLogger`` whose ``log_value`` of a key already logged goes straight to its ``Stats`` object's
    ``push`` (what RLlib's ends with, after a ``tree.flatten`` of the key, two walks of the nested stats dict and its
    keyword checks, ~25 us each on one CPU thread). The first call for a key is RLlib's, which creates it: the
    keywords (reduce, window, ...) only matter then, as in RLlib's; deprecated ones (warned on every call) go to
    RLlib's too. Everything else is RLlib's logger."""

    def log_value(self, key, value, **kwargs) -> None:
        node = self.stats
        for k in (key,) if isinstance(key, str) else key:
            node = node.get(k) if isinstance(node, dict) else None
            if node is None:
                break
        if isinstance(node, StatsBase) and (
            _WARNED_EACH_CALL.isdisjoint(kwargs)
            or all(kwargs.get(k, DEPRECATED_VALUE) is DEPRECATED_VALUE for k in _WARNED_EACH_CALL)
        ):  # log_dict passes them unset
            node.push(value)
        else:
            super().log_value(key, value, **kwargs)


class LeanMetricsMixin:
    """A learner whose ``metrics`` is a ``LeanMetricsLogger``: the ``MetricsLogger`` RLlib's ``Learner`` creates (in
    ``__init__`` and ``_reset``) becomes one as it is assigned. Any other logger is kept as given."""

    @property
    def metrics(self) -> MetricsLogger:
        return self.__dict__["metrics"]

    @metrics.setter
    def metrics(self, logger: MetricsLogger) -> None:
        if type(logger) is MetricsLogger:
            logger.__class__ = LeanMetricsLogger  # a subclass with no state of its own
        self.__dict__["metrics"] = logger
