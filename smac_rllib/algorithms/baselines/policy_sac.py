"""SAC with another policy family, on our plumbing: the shared base of the Flow and MoE baselines (Fig. 9).

Everything but the policy is the paper's SAC baseline (``sac_baseline.py``): the same config defaults (lr 3e-4,
initial alpha 0.1, tau 0.005, batch 256, 1 update per env step, 5000 uniform random steps first, replay 1M,
async loop), the same critic (twin Q = MLP(x || a), ReLU, width ``hidden_dim`` = 400), the MSE critic loss of
``smac_rllib.objectives.losses`` and the soft TD target with the entropy term ``-log pi(a'|x')`` (``losses.td_target``),
the actor loss ``E[alpha log pi(a|x) - min_i Q_i(x, a)]`` and alpha auto-tuned to the target entropy -|A|.
A subclass only says how to build the policy (``build_policy``) and, if it needs to, how to form the actor's
terms (``actor_terms``, e.g. the MoE's per-expert choice).

The module and learner are ours (not RLlib's SAC ones, whose losses assume a squashed Gaussian's dist inputs):
``PolicySACTorchRLModule`` (policy, twin Q, target twin Q, log(alpha); inference-only copy = the policy) and
``PolicySACTorchLearner`` (one optimizer per component: critic, actor, alpha; one backward of the summed losses,
since every parameter gets its gradient from exactly one term, as SMAC's learner). Adam with torch's default eps
1e-8 (pytorch_sac's; the SAC baseline keeps RLlib's 1e-7).

Legend: B = batch, T2 = twin critics, X = obs dim, A = action dim.
"""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import torch
from ray.rllib.algorithms.sac.torch.sac_torch_learner import SACTorchLearner
from ray.rllib.core.columns import Columns
from ray.rllib.core.learner.torch.torch_learner import TorchLearner
from ray.rllib.core.rl_module.torch.torch_rl_module import TorchRLModule
from torch import nn

from smac_rllib.objectives import losses
from smac_rllib.training.async_learner import AsyncLearnerMixin, td_discount
from smac_rllib.algorithms.baselines.sac_baseline import SACBaselineConfig
from smac_rllib.algorithms.twin_q_module import TwinQModuleAPI
from smac_rllib.models.critic import TwinQ, frozen

# Keys of the training forward pass (Q_PRED / Q_PI / Q_NEXT_TARGET as SMAC's, smac_rllib.objectives.losses).
Q_PRED, Q_PI, Q_NEXT_TARGET = losses.Q_PRED, losses.Q_PI, losses.Q_NEXT_TARGET
LOGP = "logp_B"  # log pi(a|x) of the actor's action a ~ pi(.|x), with gradients to the policy
LOGP_NEXT = "logp_next_B"  # log pi(a'|x'), a' ~ pi(.|x'), no gradient
EXTRA_ACTOR_LOSS = "extra_actor_loss"  # a scalar added to the actor loss (the MoE's gate loss)


def check_flat_spaces(observation_space: gym.Space, action_space: gym.Space, name: str) -> None:
    if not isinstance(action_space, gym.spaces.Box) or len(action_space.shape) != 1:
        raise ValueError(f"{name} needs a 1-D continuous (Box) action space; got {action_space}")
    if not isinstance(observation_space, gym.spaces.Box) or len(observation_space.shape) != 1:
        raise ValueError(f"{name} needs flat state observations (a 1-D Box); got {observation_space} (no pixel variant)")


class PolicySACConfig(SACBaselineConfig):
    """``SACBaselineConfig`` (same defaults, async fields and checks) with our module and learner."""

    module_class: type = None  # set by subclasses

    def get_default_rl_module_spec(self):
        from ray.rllib.core.rl_module.rl_module import RLModuleSpec

        return RLModuleSpec(module_class=self.module_class)

    def get_default_learner_class(self):
        return PolicySACTorchLearner

    @property
    def _model_config_auto_includes(self) -> dict[str, Any]:
        return super()._model_config_auto_includes | {
            "hidden_dim": self.hidden_dim,
            "initial_log_alpha": math.log(self.initial_alpha) if isinstance(self.initial_alpha, (int, float)) and self.initial_alpha > 0 else 0.0,
        }

    def validate(self) -> None:
        super().validate()
        if not (isinstance(self.initial_alpha, (int, float)) and self.initial_alpha > 0 and math.isfinite(self.initial_alpha)):
            raise ValueError(f"initial_alpha={self.initial_alpha!r} must be > 0 (pytorch_sac: 0.1)")


class PolicySACTorchRLModule(TorchRLModule, TwinQModuleAPI):
    """Policy + twin Q + target twin Q + log(alpha). Subclasses implement ``build_policy``.

    The policy must offer ``rsample(obs) -> (action, log pi(action|obs))`` (reparameterized) and
    ``deterministic_action(obs)`` (evaluation with ``explore=False``).
    """

    framework = "torch"
    algorithm_name = "SAC"

    def build_policy(self, obs_dim: int, action_dim: int, cfg: dict) -> nn.Module:
        raise NotImplementedError

    def setup(self):
        cfg = self.model_config
        check_flat_spaces(self.observation_space, self.action_space, self.algorithm_name)
        obs_dim, action_dim = int(self.observation_space.shape[0]), int(self.action_space.shape[0])
        self.policy = self.build_policy(obs_dim, action_dim, cfg)
        if not self.inference_only:
            self.qf = TwinQ(obs_dim, action_dim, int(cfg["hidden_dim"]), 2)
            self.log_alpha = nn.Parameter(torch.tensor(float(cfg["initial_log_alpha"])))

    # --- RLlib APIs -------------------------------------------------------------------------------------
    # --- forward passes ---------------------------------------------------------------------------------
    def _forward_inference(self, batch: dict[str, Any], **kwargs) -> dict[str, Any]:
        return {Columns.ACTIONS: self.policy.deterministic_action(batch[Columns.OBS])}

    def _forward_exploration(self, batch: dict[str, Any], **kwargs) -> dict[str, Any]:
        return {Columns.ACTIONS: self.policy.rsample(batch[Columns.OBS])[0]}

    def actor_terms(self, obs_B_X: torch.Tensor) -> dict[str, torch.Tensor]:
        """a ~ pi(.|x) (reparameterized): min_i Q_i(x, a) with the critics frozen, and log pi(a|x)."""
        action_B_A, logp_B = self.policy.rsample(obs_B_X)
        with frozen(self.qf):  # the actor loss trains the policy only
            q_pi_B = self.qf(obs_B_X, action_B_A).min(dim=0).values
        return {Q_PI: q_pi_B, LOGP: logp_B}

    def _forward_train(self, batch: dict[str, Any], **kwargs) -> dict[str, Any]:
        obs_B_X, next_obs_B_X = batch[Columns.OBS], batch[Columns.NEXT_OBS]
        out = {Q_PRED: self.qf(obs_B_X, batch[Columns.ACTIONS])}
        out.update(self.actor_terms(obs_B_X))
        with torch.no_grad():  # the soft TD target at x': a' ~ pi(.|x'), log pi(a'|x'), Qbar(x', a')
            next_action_B_A, out[LOGP_NEXT] = self.policy.rsample(next_obs_B_X)
            out[Q_NEXT_TARGET] = self.target_qf(next_obs_B_X, next_action_B_A)
        return out


class PolicySACTorchLearner(AsyncLearnerMixin, SACTorchLearner):
    """SAC's losses (``smac_rllib.objectives.losses``) on a ``PolicySACTorchRLModule``; targets soft-updated every update
    (RLlib's DQN/SAC learner, ``target_network_update_freq`` 0).

    Speed layer (training/lean_update.py): not used, for the same reason as ``SACBaselineTorchLearner``: RLlib's
    update path does the non-finite checks these baselines rely on."""

    def configure_optimizers_for_module(self, module_id, config=None) -> None:
        module = self._module[module_id].unwrapped()
        for name, params, lr in (
            ("critic", self.get_parameters(module.qf), config.critic_lr),
            ("actor", self.get_parameters(module.policy), config.actor_lr),
            ("alpha", [module.log_alpha], config.alpha_lr),
        ):
            self.register_optimizer(module_id=module_id, optimizer_name=name, optimizer=torch.optim.Adam(params),
                                    params=params, lr_or_lr_schedule=lr)

    def compute_loss_for_module(self, *, module_id, config, batch: dict[str, Any], fwd_out: dict[str, Any]) -> torch.Tensor:
        module = self._module[module_id].unwrapped()
        discount_B = td_discount(config, batch)
        alpha = module.log_alpha.exp().detach()
        target_entropy = float(self.target_entropy[module_id])
        target_B = losses.td_target(
            batch[Columns.REWARDS], batch[Columns.TERMINATEDS], fwd_out[Q_NEXT_TARGET], -fwd_out[LOGP_NEXT],
            alpha=alpha, discount_B=discount_B,
        )
        critic = losses.critic_loss(fwd_out[Q_PRED], target_B, kind=config.critic_loss)
        entropy_B = -fwd_out[LOGP]
        actor = losses.actor_loss(fwd_out[Q_PI], entropy_B, alpha=alpha)
        extra = fwd_out.get(EXTRA_ACTOR_LOSS)
        if extra is not None:
            actor = actor + extra
        temperature = losses.alpha_loss(module.log_alpha, entropy_B, target_entropy=target_entropy)
        metrics = {
            "critic/loss": critic,
            "critic/q_mean": fwd_out[Q_PRED].mean(),
            "critic/target_mean": target_B.mean(),
            "actor/loss": actor,
            "actor/q_pi": fwd_out[Q_PI].mean(),
            "actor/entropy": entropy_B.mean(),
            "alpha/loss": temperature,
            "alpha/value": alpha,
        }
        if extra is not None:
            metrics["actor/gate_loss"] = extra
        self.device_metrics.log_dict({k: v.detach() for k, v in metrics.items()}, key=module_id)
        return critic + actor + temperature

    def compute_gradients(self, loss_per_module, **kwargs):
        # One backward of the summed losses (each parameter's gradient comes from one term), not SAC's per-optimizer ones.
        return TorchLearner.compute_gradients(self, loss_per_module, **kwargs)
