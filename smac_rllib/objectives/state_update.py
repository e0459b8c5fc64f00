"""One SMAC update from states as one plain function (Alg. 1's inner loop): the reference the RLlib learner is held
equal to (tests/test_smac_components.py) and the plain loop the state speed benchmark times (benchmarks/state_speed.py).

    forward  the module's ``_forward_train``: K+1 latents s ~ q(s|x), a ~ pi(.|s0), their log-weights, Q(x, a_replay),
             min_i Q_i(x, a) with the critics frozen, and (no gradient) a', the log-weights at x' and Qbar(x', a')
    losses   ``losses.soft_actor_critic_losses``: the TD target (Eq. 10, or Eq. 12 with td_entropy: conditional),
             the critic's MSE, the actor loss (Eq. 11) with the marginal entropy estimate (Eq. 6/7), alpha's loss
    backward one backward of their sum (each parameter gets its gradient from one term)
    step     one Adam per component: critic (Q), actor (q(s|x) and pi(a|s)), alpha
    Polyak   target critics: target + tau (main - target)

Pure torch over a built ``SMACTorchRLModule`` (no Ray, no RLlib learner): what the RLlib learner adds around it (the
non-finite skip, metrics, the replay thread) is plumbing, not math.
"""

from __future__ import annotations

import dataclasses

import torch
from ray.rllib.core.columns import Columns

from smac_rllib.core.optim import adam
from smac_rllib.objectives import losses


@dataclasses.dataclass
class StateUpdate:
    module: torch.nn.Module  # a SMACTorchRLModule with target networks (make_target_networks())
    optimizers: dict[str, torch.optim.Optimizer]
    settings: losses.ObjectiveSettings
    target_entropy: float  # -|A| (SAC's heuristic, RLlib's default)
    gamma: float
    tau: float

    @classmethod
    def from_config(cls, module, config, action_dim: int, make_optimizer=adam) -> "StateUpdate":
        """The optimizers and settings the RLlib learner builds from ``config`` (``SMACTorchLearner.optimizer_groups``)."""
        optimizers = {
            "critic": make_optimizer(list(module.qf.parameters()), lr=config.critic_lr),
            "actor": make_optimizer(list(module.policy.parameters()), lr=config.actor_lr),  # q(s|x) and pi(a|s)
            "alpha": make_optimizer([module.log_alpha], lr=config.alpha_lr),
        }
        return cls(module, optimizers, losses.ObjectiveSettings.from_config(config), -float(action_dim), config.gamma, config.tau)

    def step(self, batch: dict[str, torch.Tensor]) -> losses.Losses:
        """One update on a batch of transitions {obs, new_obs, actions, rewards, terminateds} (tensors)."""
        module = self.module
        fwd = module._forward_train({Columns.OBS: batch[Columns.OBS], Columns.NEXT_OBS: batch[Columns.NEXT_OBS],
                                     Columns.ACTIONS: batch[Columns.ACTIONS]})
        out = losses.soft_actor_critic_losses(  # Eqs. (9)-(11)
            fwd, batch[Columns.REWARDS], batch[Columns.TERMINATEDS], log_alpha=module.log_alpha,
            target_entropy=self.target_entropy, discount_B=self.gamma, settings=self.settings,
        )
        for optimizer in self.optimizers.values():
            optimizer.zero_grad(set_to_none=True)
        (out.critic + out.actor + out.alpha).backward()
        for optimizer in self.optimizers.values():
            optimizer.step()
        with torch.no_grad():  # Polyak averaging of the target critics
            torch._foreach_lerp_(list(module.target_qf.parameters()), list(module.qf.parameters()), self.tau)
        return out
