"""The one switch of the speed layer: ``fast_update: false`` runs the same learners and modules on RLlib's and torch's own
code paths (docs/design.md §9).

The layer's pieces read one class attribute, ``fast_path`` (``LeanMetricsMixin`` and ``CachedTrainModeMixin`` set it
True). ``rllib_path(cls)`` is ``cls`` with ``fast_path = False`` and nothing else changed: each piece then hands over
to RLlib's (or torch's) own method at its own place in the method order, so a learner's overrides above it (SMAC's
fp16 scaler step, SLAC's model-update count, the non-finite streak check) run on both paths. What ``fast_path = False``
turns off:

- ``LeanUpdateMixin``: ``Learner.update``, ``postprocess_gradients``, ``TorchLearner.apply_gradients`` (an update the
  learner found non-finite is still skipped as a whole) and ``DQNLearner.after_gradient_based_update`` (Polyak
  averaging through the state dicts) in place of the lean ones;
- ``LeanMetricsMixin``: RLlib's own ``MetricsLogger``;
- ``DeviceMetrics``: flushed to the host after every update, as a direct per-update log (``AsyncLearnerMixin``);
- ``CachedTrainModeMixin``: torch's own ``nn.Module.train`` walk on every call;
- ``learner_capture``: eager (a config that asks for a graph mode without the fast path is refused).

A config picks the class by its ``fast_update`` field (``get_default_learner_class``, ``get_default_rl_module_spec``).
The ``...RLlibPath`` classes are built at module level next to the class they wrap, so a checkpoint, which names
classes by their module path, finds them. The tests run both paths: the same weights, Adam moments and targets for
state and pixel SMAC and SLAC (``test_smac_components.py``, ``test_pixel_update.py``, ``test_slac.py``), every
reduced metric for state SMAC, and fp16's scaler, SLAC's pretraining and the non-finite stop on each path.
"""

from __future__ import annotations


def rllib_path(cls: type) -> type:
    """``cls`` (a learner or an RLModule class of the speed layer) with the layer off; call it at module level
    (``<Name>RLlibPath = rllib_path(<Name>)``) so that checkpoints find the class."""
    from smac_rllib.training.fast_update.lean_update import LeanUpdateMixin
    from smac_rllib.training.fast_update.train_mode import CachedTrainModeMixin

    if not issubclass(cls, (LeanUpdateMixin, CachedTrainModeMixin)) or cls.fast_path is not True:
        raise TypeError(f"{cls.__name__} has no speed layer to switch off (neither a LeanUpdateMixin learner nor a "
                        "CachedTrainModeMixin module, or already switched)")
    if issubclass(cls, LeanUpdateMixin) and not hasattr(cls, "_skip_update"):
        raise TypeError(f"{cls.__name__} must say in _skip_update whether it found this update non-finite (switch.py)")
    return type(f"{cls.__name__}RLlibPath", (cls,), {
        "fast_path": False, "__module__": cls.__module__,
        "__doc__": f"{cls.__name__} with the speed layer off (fast_update: false; training/fast_update/switch.py)."})
