"""TD3 (Fujimoto et al. 2018) on our plumbing: the paper's TD3 baseline from states (Fig. 3), ``run: TD3``.

RLlib 2.60's new API stack has no TD3/DDPG, so the module and learner are ours:
- a deterministic actor mu(x) = tanh(MLP(x)) (2 hidden ReLU layers of width ``hidden_dim``);
- twin critics Q_i = MLP(x || a) as the SAC baseline's (``models.critic.TwinQ``), MSE loss (sum of the two);
- target policy smoothing: a' = clip(mu_bar(x') + clip(eps, -c, c), -1, 1), eps ~ N(0, ``target_noise``^2),
  c = ``target_noise_clip`` (0.2 and 0.5); target y = r + gamma (1 - d) min_i Qbar_i(x', a');
- delayed updates: the actor (loss -Q_1(x, mu(x)), critics frozen) and the soft target updates (tau, of the
  target actor and both target critics) happen every ``policy_delay`` (2) critic updates;
- exploration: a = clip(mu(x) + N(0, ``exploration_noise``^2), -1, 1) with 0.1; evaluation (``explore=False``): mu(x).

Settings as the paper runs it: lr 3e-4 for actor and critic (TD3's own: 1e-3), width 400 (as its SAC baseline),
and otherwise the SAC baseline's schedule (batch 256, 1 update per env step, replay 1M, tau 0.005, gamma 0.99,
5000 uniform random steps first -- TD3's own: 25000 --, async loop). Adam with torch's default eps.
``TD3Config`` extends ``SACBaselineConfig`` for that shared schedule; its alpha fields are unused.

With several learners (DDP) the actor is unused on critic-only updates: give
``torch_ddp_kwargs={"find_unused_parameters": True}``.
"""

from __future__ import annotations

from typing import Any

import torch
from ray.rllib.algorithms.sac.sac import SAC
from ray.rllib.core.columns import Columns
from ray.rllib.core.learner.torch.torch_learner import TorchLearner
from ray.rllib.core.learner.utils import make_target_network, update_target_network
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from ray.rllib.core.rl_module.torch.torch_rl_module import TorchRLModule

from smac_rllib.objectives import losses
from smac_rllib.training.off_policy import OffPolicyLoop, set_defaults
from smac_rllib.algorithms.baselines.policy_sac import check_flat_spaces
from smac_rllib.training.async_learner import AsyncLearnerMixin, td_discount
from smac_rllib.algorithms.baselines.sac_baseline import SACBaselineConfig
from smac_rllib.algorithms.twin_q_module import TwinQModuleAPI
from smac_rllib.models.critic import TwinQ, frozen
from smac_rllib.models.mlp import mlp

Q_PRED, Q_PI, Q_NEXT_TARGET = losses.Q_PRED, losses.Q_PI, losses.Q_NEXT_TARGET


def smoothed_target_action(target_action_B_A: torch.Tensor, noise_B_A: torch.Tensor, noise_clip: float) -> torch.Tensor:
    """TD3's target policy smoothing: clip(mu_bar(x') + clip(noise, -c, c), -1, 1) (``noise`` already scaled)."""
    return (target_action_B_A + noise_B_A.clamp(-noise_clip, noise_clip)).clamp(-1.0, 1.0)


def td3_target(reward_B, terminated_B, q_next_target_T2_B, *, discount_B) -> torch.Tensor:
    """y = r + gamma^n (1 - d) min_i Qbar_i(x', a'): the soft target of ``losses.td_target`` without entropy."""
    return losses.td_target(reward_B, terminated_B, q_next_target_T2_B, torch.zeros_like(reward_B), alpha=0.0, discount_B=discount_B)


_FIELDS = {  # name: (default, meaning) -- TD3's own fields (Fujimoto et al. 2018)
    "policy_delay": (2, "critic updates per actor and target update"),
    "target_noise": (0.2, "std of the target policy smoothing noise"),
    "target_noise_clip": (0.5, "clip of the target policy smoothing noise"),
    "exploration_noise": (0.1, "std of the Gaussian exploration noise"),
}


class TD3Config(SACBaselineConfig):
    FIELDS = _FIELDS  # the fields training() takes (training/off_policy.py: FieldTableConfig)
    def __init__(self, algo_class=None):
        super().__init__(algo_class=algo_class or TD3)
        self.actor_lr = 3e-4  # the paper's (TD3: 1e-3)
        self.critic_lr = 3e-4
        self.hidden_dim = 400  # the paper's width (TD3's 2018 paper: 400-300)
        set_defaults(self, _FIELDS)

    def validate(self) -> None:
        super().validate()
        delay = self.policy_delay
        if not (isinstance(delay, int) and not isinstance(delay, bool) and delay >= 1):
            raise ValueError(f"policy_delay={delay!r} must be an integer >= 1 (TD3: 2 critic updates per actor update)")
        for name, paper in (("target_noise", 0.2), ("target_noise_clip", 0.5), ("exploration_noise", 0.1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf"):
                raise ValueError(f"{name}={value!r} must be a number >= 0 (TD3: {paper})")

    def get_default_rl_module_spec(self) -> RLModuleSpec:
        return RLModuleSpec(module_class=TD3TorchRLModule)

    def get_default_learner_class(self):
        return TD3TorchLearner

    @property
    def _model_config_auto_includes(self) -> dict[str, Any]:
        return super()._model_config_auto_includes | {
            "hidden_dim": self.hidden_dim, "target_noise": self.target_noise,
            "target_noise_clip": self.target_noise_clip, "exploration_noise": self.exploration_noise,
        }


class TD3TorchRLModule(TorchRLModule, TwinQModuleAPI):
    """Deterministic tanh actor + twin Q, their targets; inference-only copy = the actor."""

    framework = "torch"

    def setup(self):
        cfg = self.model_config
        check_flat_spaces(self.observation_space, self.action_space, "TD3")
        obs_dim, action_dim = int(self.observation_space.shape[0]), int(self.action_space.shape[0])
        width = int(cfg["hidden_dim"])
        self.policy = mlp(obs_dim, width, action_dim, 2)  # mu(x) = tanh(policy(x))
        self.exploration_noise = float(cfg["exploration_noise"])
        self.target_noise = float(cfg["target_noise"])
        self.target_noise_clip = float(cfg["target_noise_clip"])
        self.actor_step = True  # set by the learner before each update (delayed actor updates)
        if not self.inference_only:
            self.qf = TwinQ(obs_dim, action_dim, width, 2)

    def actor(self, obs_B_X: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.policy(obs_B_X))

    # --- RLlib APIs -------------------------------------------------------------------------------------
    def get_non_inference_attributes(self) -> list[str]:
        return ["qf", "target_qf", "target_policy"]

    def make_target_networks(self) -> None:
        self.target_policy = make_target_network(self.policy)
        self.target_qf = make_target_network(self.qf)

    def get_target_network_pairs(self):
        return [(self.policy, self.target_policy), (self.qf, self.target_qf)]

    # --- forward passes ---------------------------------------------------------------------------------
    def _forward_inference(self, batch: dict[str, Any], **kwargs) -> dict[str, Any]:
        return {Columns.ACTIONS: self.actor(batch[Columns.OBS])}

    def _forward_exploration(self, batch: dict[str, Any], **kwargs) -> dict[str, Any]:
        action_B_A = self.actor(batch[Columns.OBS])
        noise_B_A = self.exploration_noise * torch.randn_like(action_B_A)
        return {Columns.ACTIONS: (action_B_A + noise_B_A).clamp(-1.0, 1.0)}

    def _forward_train(self, batch: dict[str, Any], **kwargs) -> dict[str, Any]:
        obs_B_X, next_obs_B_X = batch[Columns.OBS], batch[Columns.NEXT_OBS]
        out = {Q_PRED: self.qf(obs_B_X, batch[Columns.ACTIONS])}
        with torch.no_grad():  # target policy smoothing
            target_action_B_A = torch.tanh(self.target_policy(next_obs_B_X))
            noise_B_A = self.target_noise * torch.randn_like(target_action_B_A)
            next_action_B_A = smoothed_target_action(target_action_B_A, noise_B_A, self.target_noise_clip)
            out[Q_NEXT_TARGET] = self.target_qf(next_obs_B_X, next_action_B_A)
        if self.actor_step:  # TD3's actor loss uses Q_1 only; the critics get no gradient from it
            with frozen(self.qf):
                out[Q_PI] = self.qf.q1(torch.cat([obs_B_X, self.actor(obs_B_X)], dim=-1)).squeeze(-1)
        return out


class TD3TorchLearner(AsyncLearnerMixin, TorchLearner):
    """Critic every update; actor and soft target updates every ``policy_delay`` updates (one backward per update).

    Speed layer (training/lean_update.py): not used; RLlib's ``TorchLearner`` update path with its non-finite checks."""

    def build(self) -> None:
        super().build()
        self._td3_updates = 0  # critic updates done by this learner (restarts at 0 after a restore: at most one delay shifted)
        self._actor_step = True
        self.module.foreach_module(lambda mid, mod: mod.make_target_networks() if isinstance(mod, TwinQModuleAPI) else None)

    def configure_optimizers_for_module(self, module_id, config=None) -> None:
        module = self._module[module_id].unwrapped()
        for name, params, lr in (
            ("critic", self.get_parameters(module.qf), config.critic_lr),
            ("actor", self.get_parameters(module.policy), config.actor_lr),
        ):
            self.register_optimizer(module_id=module_id, optimizer_name=name, optimizer=torch.optim.Adam(params),
                                    params=params, lr_or_lr_schedule=lr)

    def before_gradient_based_update(self, *, timesteps: dict[str, Any]) -> None:
        super().before_gradient_based_update(timesteps=timesteps)
        self._actor_step = (self._td3_updates + 1) % self.config.policy_delay == 0  # TD3: total_it % policy_freq == 0
        for module in self.module._rl_modules.values():
            module.unwrapped().actor_step = self._actor_step

    def compute_loss_for_module(self, *, module_id, config, batch: dict[str, Any], fwd_out: dict[str, Any]) -> torch.Tensor:
        discount_B = td_discount(config, batch)
        target_B = td3_target(batch[Columns.REWARDS], batch[Columns.TERMINATEDS], fwd_out[Q_NEXT_TARGET], discount_B=discount_B)
        critic = losses.critic_loss(fwd_out[Q_PRED], target_B, kind=config.critic_loss)
        metrics = {"critic/loss": critic, "critic/q_mean": fwd_out[Q_PRED].mean(), "critic/target_mean": target_B.mean()}
        total = critic
        if Q_PI in fwd_out:
            actor = -fwd_out[Q_PI].mean()
            metrics |= {"actor/loss": actor, "actor/q_pi": fwd_out[Q_PI].mean()}
            total = total + actor
        self.device_metrics.log_dict({k: v.detach() for k, v in metrics.items()}, key=module_id)
        return total

    def compute_gradients(self, loss_per_module, **kwargs):
        grads = super().compute_gradients(loss_per_module, **kwargs)
        return {pid: g for pid, g in grads.items() if g is not None}  # critic-only updates: the actor's Adam skips its step

    def after_gradient_based_update(self, *, timesteps: dict[str, Any]) -> None:
        self._td3_updates += 1
        if self._actor_step:  # delayed soft updates of the target actor and both target critics
            for module_id, module in self.module._rl_modules.items():
                tau = self.config.get_config_for_module(module_id).tau
                for main_net, target_net in module.unwrapped().get_target_network_pairs():
                    update_target_network(main_net=main_net, target_net=target_net, tau=tau)
        super().after_gradient_based_update(timesteps=timesteps)


class TD3(OffPolicyLoop, SAC):
    """TD3 (Fujimoto et al. 2018) with the paper's settings, trained by the same loop as SMAC."""

    @classmethod
    def get_default_config(cls) -> TD3Config:
        return TD3Config()
