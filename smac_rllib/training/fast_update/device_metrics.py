"""``DeviceMetrics``: per-update metrics kept on the learner's device, moved to the host once per reporting period.

A GPU learner that called ``.item()`` on ~20 scalars per update would wait for the device after each; here the
values stay tensors until ``flush``, one stacked copy for all of them, then the same ``MetricsLogger`` calls a direct
per-update log makes. In the synchronous loop ``flush`` runs after every update.
"""

from __future__ import annotations

import inspect
from typing import Any

import torch
from ray.rllib.utils.metrics.metrics_logger import MetricsLogger


class DeviceMetrics:
    """Per-update scalars kept as device tensors; ``flush`` moves them to the host in one transfer.

    ``flush`` then logs every update's values in order through the same ``MetricsLogger`` call (``log_value``
    or ``log_dict``, which reduce differently in RLlib 2.60) as a direct per-update log, so results read the
    same as the synchronous loop's.
    """

    def __init__(self):
        self._rows: list[tuple[str, tuple, Any, dict]] = []
        self._watched: dict[str, torch.Tensor] = {}

    def watch(self, name: str, value: torch.Tensor) -> None:
        """A device scalar (the latest one given under ``name``) for the learner to check at the next ``flush``, moved
        to the host in the same transfer as the metrics: e.g. the longest non-finite streak (smac_learner.py)."""
        self._watched[name] = value.detach()

    def log(self, key: tuple, value, **log_kwargs) -> None:
        self._rows.append(("value", key, value.detach() if torch.is_tensor(value) else value, log_kwargs))

    def log_dict(self, values: dict[str, Any], *, key: str, **log_kwargs) -> None:
        for name, value in values.items():
            self._rows.append(("dict", (key, name), value.detach() if torch.is_tensor(value) else value, log_kwargs))

    def flush(self, metrics_logger) -> dict[str, float]:
        """Logs the rows; returns the watched values (``watch``) on the host."""
        rows, self._rows = self._rows, []
        watched, self._watched = self._watched, {}
        rows += [("watch", name, value, {}) for name, value in watched.items()]  # ride along in the one transfer
        if not rows:
            return {}
        tensors = [(i, v) for i, (_, _, v, _) in enumerate(rows) if torch.is_tensor(v)]
        host = {}
        if tensors:
            device = tensors[0][1].device
            stacked = torch.stack(
                [
                    v
                    if v.dtype == torch.float32 and v.dim() == 0 and v.device == device
                    else v.float().reshape(()).to(device)
                    for _, v in tensors
                ]
            )  # most are: no extra ops
            # the one device -> host copy
            host = dict(zip((i for i, _ in tensors), stacked.cpu().tolist(), strict=True))
        out = {}
        for i, (kind, key, value, log_kwargs) in enumerate(rows):
            value = host.get(i, value)
            if kind == "watch":
                out[key] = value
            elif kind == "dict":  # what log_dict({name: value}, key=k) does for one flat entry, without its tree walk
                metrics_logger.log_value((*_as_tuple(key[0]), key[1]), value, **(_log_dict_defaults() | log_kwargs))
            else:
                metrics_logger.log_value(_as_tuple(key), value, **log_kwargs)
        return out


def _as_tuple(key) -> tuple:
    return tuple(key) if isinstance(key, (tuple, list)) else (key,)


def _log_dict_defaults() -> dict:
    """The keyword defaults ``MetricsLogger.log_dict`` forwards to ``log_value`` (they differ from log_value's own)."""
    global _LOG_DICT_DEFAULTS
    if _LOG_DICT_DEFAULTS is None:
        _LOG_DICT_DEFAULTS = {
            name: p.default
            for name, p in inspect.signature(MetricsLogger.log_dict).parameters.items()
            if p.kind is p.KEYWORD_ONLY and name != "key"
        }
    return _LOG_DICT_DEFAULTS


_LOG_DICT_DEFAULTS = None
