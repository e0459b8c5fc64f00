"""``CachedTrainModeMixin``: the module side of the speed layer.

RLlib's ``TorchRLModule.forward_train`` calls ``self.train()`` before every update, and torch's ``train`` sets the flag
on every submodule through ``nn.Module.__setattr__`` (~40 of them in the state module, 4,100 calls per 100 updates in a
cProfile, ~2% of a K=0 update; docs/design.md §9). The mixin skips that walk when every submodule already is in the
asked mode.
"""

from __future__ import annotations

import torch


class CachedTrainModeMixin:
    """``nn.Module.train(mode)`` that returns at once when the module and all its submodules already are in ``mode``.

    RLlib's ``forward_train`` calls ``train()`` before every update, and ``forward_exploration`` /
    ``forward_inference`` call ``eval()`` (and ``train()`` after, if the module was training) around every acting
    step; torch's ``train`` walks all ~40 submodules each time (~2% of a K=0 state update, ~6% of a 1-env pixel
    acting step). The check runs over the submodule list of the last real walk, so a submodule switched on its own
    is still caught; the list is rebuilt when a submodule is set, added or deleted on the root.
    Put it before ``TorchRLModule``: ``class M(CachedTrainModeMixin, TorchRLModule, ...)``."""

    _CACHE = "_train_mode_modules"  # kept in __dict__, where nn.Module registers nothing

    def train(self, mode: bool = True):
        modules = self.__dict__.get(self._CACHE)
        if modules is not None and all(m.training == mode for m in modules):
            return self
        out = super().train(mode)
        if modules is None:
            self.__dict__[self._CACHE] = tuple(self.modules())  # self first
        return out

    def __setattr__(self, name, value) -> None:
        if isinstance(value, torch.nn.Module) or name in self.__dict__.get("_modules", {}):
            self.__dict__.pop(self._CACHE, None)
        super().__setattr__(name, value)

    def __delattr__(self, name) -> None:
        self.__dict__.pop(self._CACHE, None)
        super().__delattr__(name)

    def add_module(self, name: str, module) -> None:
        self.__dict__.pop(self._CACHE, None)
        super().add_module(name, module)
