"""One SMAC update from states (Alg. 1's inner loop): the function the RLlib learner runs (``SMACTorchLearner``,
eager or captured, docs/design.md §9).

    forward  the module's ``_forward_train``: K+1 latents s ~ q(s|x), a ~ pi(.|s0), their log-weights, Q(x, a_replay),
             min_i Q_i(x, a) with the critics frozen, and (no gradient) a', the log-weights at x' and Qbar(x', a')
    losses   ``losses.soft_actor_critic_losses``: the TD target (Eq. 10, or Eq. 12 with td_entropy: conditional),
             the critic's MSE, the actor loss (Eq. 11) with the marginal entropy estimate (Eq. 6/7), alpha's loss
    tail     ``update_step.backward_and_step``: one backward of their sum (each parameter gets its gradient from one
             term), the non-finite skip, the optional clip, one Adam per component (critic; actor = q(s|x) and
             pi(a|s); alpha), Polyak averaging of the target critics

Pure torch over a built ``SMACTorchRLModule`` (no Ray).
"""

from __future__ import annotations

import dataclasses

import torch
from ray.rllib.core.columns import Columns

from smac_rllib.core.optim import adam
from smac_rllib.objectives import losses
from smac_rllib.objectives.update_step import TOTAL_LOSS, backward_and_step, clip_each, target_pairs


def td_discount(gamma: float, n_step, batch: dict):
    """The TD target's discount: ``gamma ** n_step`` per transition (RLlib SAC's ``n_step`` column) or, where every
    transition is 1-step (``n_step=1``, the paper's and the only one our replay takes), the float ``gamma`` itself: no
    ``pow`` over the batch and a scalar multiply in the target (the same float32 values)."""
    if n_step == 1 or "n_step" not in batch:
        return gamma
    return gamma ** batch["n_step"]


@dataclasses.dataclass
class StateUpdate:
    module: torch.nn.Module  # a SMACTorchRLModule with target networks (make_target_networks())
    optimizers: dict[str, torch.optim.Optimizer]  # critic, actor, alpha
    settings: losses.ObjectiveSettings
    target_entropy: float  # -|A| (SAC's heuristic, RLlib's default)
    gamma: float
    tau: float
    num_particles: int = 0  # K, for the metrics
    grad_clip: float | None = None  # global norm per optimizer (RLlib's grad_clip; None: no clip)
    n_step: int = 1

    @classmethod
    def from_config(
        cls,
        module,
        config,
        action_dim: int | None = None,
        make_optimizer=adam,
        optimizers=None,
        target_entropy: float | None = None,
    ) -> "StateUpdate":
        """``config``'s update of ``module``: its optimizers (``optimizer_groups``) unless given (the learner's own);
        the target entropy -|A| unless given (the learner's: RLlib's ``target_entropy``)."""
        if optimizers is None:
            optimizers = {name: make_optimizer(params, lr=lr) for name, params, lr in optimizer_groups(module, config)}
        if target_entropy is None:
            target_entropy = -float(action_dim)
        return cls(
            module,
            optimizers,
            losses.ObjectiveSettings.from_config(config),
            target_entropy,
            config.gamma,
            config.tau,
            config.resolved_num_particles,
            config.grad_clip,
            config.n_step,
        )

    def step(self, batch: dict[str, torch.Tensor], average_targets: bool = True) -> dict[str, torch.Tensor]:
        """One update on a batch of transitions {obs, new_obs, actions, rewards, terminateds} (tensors); returns the
        metrics (0-d tensors on the device, no host sync)."""
        module = self.module
        fwd = module._forward_train(
            {
                Columns.OBS: batch[Columns.OBS],
                Columns.NEXT_OBS: batch[Columns.NEXT_OBS],
                Columns.ACTIONS: batch[Columns.ACTIONS],
            }
        )
        out = losses.soft_actor_critic_losses(  # Eqs. (9)-(11)
            fwd,
            batch[Columns.REWARDS],
            batch[Columns.TERMINATEDS],
            log_alpha=module.log_alpha,
            target_entropy=self.target_entropy,
            discount_B=td_discount(self.gamma, self.n_step, batch),
            settings=self.settings,
        )
        total = out.critic + out.actor + out.alpha
        if average_targets and not hasattr(self, "_polyak"):
            self._polyak = target_pairs(module.get_target_network_pairs())
        tail = backward_and_step(
            total,
            [out.critic, out.actor, out.alpha],
            self.optimizers,
            clip=clip_each(self.optimizers, self.grad_clip),
            polyak=(*self._polyak, self.tau) if average_targets else None,
        )
        metrics = losses.loss_metrics(
            fwd, out, target_entropy=self.target_entropy, num_particles=self.num_particles, settings=self.settings
        )
        return metrics | tail | {TOTAL_LOSS: total.detach()}

    def state_tensors(self) -> list[torch.Tensor]:
        """Every tensor ``step`` writes besides the optimizers' state (what a graph capture's warm-up restores)."""
        return list(self.module.parameters()) + list(self.module.buffers())


def optimizer_groups(module, config) -> list[tuple[str, list, float]]:
    """(optimizer name, parameters, learning rate): one Adam per component, each with its own loss term (Alg. 1)."""
    return [
        ("critic", list(module.qf.parameters()), config.critic_lr),
        ("actor", list(module.policy.parameters()), config.actor_lr),  # q(s|x) and pi(a|s)
        ("alpha", [module.log_alpha], config.alpha_lr),
    ]
