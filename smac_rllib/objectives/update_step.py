"""The tail every update shares (docs/design.md §9): one backward of the summed losses, the gradients averaged over
the learners, one non-finite flag, a global-norm clip per optimizer, the optimizer steps (skipped on the device when
the flag is set) and Polyak averaging of the target networks. Pure torch, no ray, no host sync (fp32/bf16, fused Adam).

Each algorithm's update (``StateUpdate.step``, ``PixelUpdate.step``, SLAC's and Dreamer's) is its forward and losses,
then ``backward_and_step``: the RLlib learners run exactly that function, eagerly or captured in a CUDA graph
(``smac_rllib.training.fast_update.captured_update``).
"""

from __future__ import annotations

from typing import Iterable

import torch

from smac_rllib.core.optim import all_reduce_mean_, clip_global_norm_, nonfinite_flag, step_unless_nonfinite

NONFINITE = "nonfinite_update"  # metric: 1.0 where this update's losses or gradients were inf/NaN (it was skipped)
TOTAL_LOSS = "total_loss"


def backward_and_step(
    total: torch.Tensor,
    loss_terms: Iterable[torch.Tensor],
    optimizers: dict[str, torch.optim.Optimizer],
    *,
    clip: dict[str, float],
    scaler: torch.amp.GradScaler | None = None,
    polyak: tuple[list[torch.Tensor], list[torch.Tensor], float] | None = None,
) -> dict[str, torch.Tensor]:
    """One backward of ``total`` and the optimizer steps; returns the tail's metrics (0-d tensors on the device).

    ``loss_terms``: the 0-d losses checked for inf/NaN with the gradients. ``clip``: optimizer name -> max global norm
    (absent or 0: no clip; its norm is logged as ``gradients/<name>_global_norm``). ``scaler``: fp16's GradScaler (it
    finds and skips overflowing gradients itself; ``nonfinite_update`` then flags non-finite losses only). ``polyak``:
    (target tensors, main tensors, tau), target <- target + tau (main - target), also after a skipped update (toward the
    unchanged mains)."""
    for optimizer in optimizers.values():
        optimizer.zero_grad(set_to_none=True)
    (scaler.scale(total) if scaler is not None else total).backward()  # one backward (Alg. 1 / Alg. 2)
    grads = {
        name: [p.grad for group in opt.param_groups for p in group["params"] if p.grad is not None]
        for name, opt in optimizers.items()
    }
    all_reduce_mean_([g for gs in grads.values() for g in gs])  # num_learners >= 2
    metrics: dict[str, torch.Tensor] = {}
    terms = [t.detach().float().reshape(1) for t in loss_terms]
    checked = ([torch.cat(terms)] if terms else []) + (
        [g for gs in grads.values() for g in gs] if scaler is None else []
    )
    found_inf = (
        nonfinite_flag(checked) if checked else None
    )  # fp16: the losses only; overflowing grads are the scaler's
    if found_inf is not None:
        metrics[NONFINITE] = found_inf
    for name, optimizer in optimizers.items():
        if scaler is not None:
            scaler.unscale_(optimizer)
        if clip.get(name):
            metrics[f"gradients/{name}_global_norm"] = clip_global_norm_(grads[name], clip[name], total.device)
    if scaler is not None:
        if found_inf is None or not bool(found_inf):  # fp16 reads the loss flag on the host (its scaler syncs anyway)
            for optimizer in optimizers.values():
                scaler.step(optimizer)  # skipped where its gradients overflowed
        scaler.update()  # a non-finite loss: every step skipped, the scale backs off (its gradients overflowed)
        metrics["gradients/fp16_loss_scale"] = torch.as_tensor(scaler.get_scale())  # fp16 syncs in scaler.step anyway
    else:
        step_unless_nonfinite(optimizers.values(), found_inf)
    if polyak is not None and polyak[0]:
        targets, mains, tau = polyak
        with torch.no_grad():
            torch._foreach_lerp_(targets, mains, tau)
    return metrics


def target_pairs(
    pairs: Iterable[tuple[torch.nn.Module, torch.nn.Module]],
) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """(target tensors, main tensors) of (main, target) network pairs: parameters and floating buffers, in one order."""
    targets, mains = [], []
    for main_net, target_net in pairs:
        main_params, target_params = dict(main_net.named_parameters()), dict(target_net.named_parameters())
        if main_params.keys() != target_params.keys():
            raise ValueError("a target network does not match its main network")
        targets += [target_params[name] for name in main_params]
        mains += [main_params[name] for name in main_params]
        main_buffers = dict(main_net.named_buffers())
        for name, buffer in target_net.named_buffers():
            if buffer is not None and buffer.is_floating_point():
                targets.append(buffer)
                mains.append(main_buffers[name])
    return targets, mains


def clip_each(optimizers: dict, max_norm: float | None) -> dict[str, float]:
    """The same global-norm clip for every optimizer (``max_norm`` None or 0: none)."""
    return {name: max_norm for name in optimizers} if max_norm else {}


class ModuleUpdate:
    """An update whose forward is the module's own ``_forward_train`` and whose losses are ``losses_fn(fwd_out, batch)
    -> (named 0-d loss terms, metrics)``; the tail is ``backward_and_step``. The form of the baselines' steps (SLAC's,
    Dreamer's), whose forward passes live in their RLModules."""

    def __init__(
        self,
        module: torch.nn.Module,
        optimizers: dict[str, torch.optim.Optimizer],
        losses_fn,
        *,
        clip: dict[str, float] | None = None,
        tau: float | None = None,
    ):
        self.module, self.optimizers, self.losses_fn, self.clip, self.tau = (
            module,
            optimizers,
            losses_fn,
            clip or {},
            tau,
        )
        self._polyak = target_pairs(module.get_target_network_pairs()) if tau is not None else None

    def step(self, batch: dict, average_targets: bool = True) -> dict[str, torch.Tensor]:
        terms, metrics = self.losses_fn(self.module._forward_train(batch), batch)
        total = sum(terms.values())
        tail = backward_and_step(
            total,
            terms.values(),
            self.optimizers,
            clip=self.clip,
            polyak=(*self._polyak, self.tau) if self._polyak and average_targets else None,
        )
        return metrics | tail | {TOTAL_LOSS: total.detach()}

    def state_tensors(self) -> list[torch.Tensor]:
        return list(self.module.parameters()) + list(self.module.buffers())
