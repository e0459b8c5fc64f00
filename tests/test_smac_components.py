"""Tier 2: SMAC's RLModule and Learner on fake batches (real RLlib classes, no Ray cluster)."""

from __future__ import annotations

import os

import gymnasium as gym
import numpy as np
import pytest
import torch
from ray.rllib.core import ALL_MODULES, DEFAULT_MODULE_ID
from ray.rllib.core.columns import Columns

from smac_rllib.core import estimators
from smac_rllib.objectives import losses
from smac_rllib.algorithms import SMACConfig
from ray.rllib.algorithms.sac.torch.sac_torch_learner import SACTorchLearner
from ray.rllib.core.learner.torch.torch_learner import TorchLearner

from smac_rllib.algorithms.smac.smac_learner import NonFiniteUpdateError
from smac_rllib.objectives.losses import LOG_W, LOG_W_NEXT, Q_NEXT_TARGET, Q_PI, Q_PRED

OBS_DIM, ACT_DIM, B, K = 5, 2, 16, 4
SPACES = {
    "__env__": (gym.spaces.Box(-np.inf, np.inf, (OBS_DIM,), np.float32), gym.spaces.Box(-1, 1, (ACT_DIM,), np.float32)),
}
SPACES[DEFAULT_MODULE_ID] = SPACES["__env__"]


def tiny_config(**training) -> SMACConfig:
    kw = dict(num_particles=K, latent_dim=3, hidden_dim=16, critic_hidden_dim=16, train_batch_size_per_learner=B)
    kw.update(training)
    return (
        SMACConfig()
        .environment(observation_space=SPACES["__env__"][0], action_space=SPACES["__env__"][1])
        .training(**kw)
    )


def fake_batch(seed: int = 0, reward_value: float | None = None) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    reward = torch.rand(B, generator=g) if reward_value is None else torch.full((B,), reward_value)
    return {
        Columns.OBS: torch.randn(B, OBS_DIM, generator=g),
        Columns.NEXT_OBS: torch.randn(B, OBS_DIM, generator=g),
        Columns.ACTIONS: torch.rand(B, ACT_DIM, generator=g) * 2 - 1,
        Columns.REWARDS: reward,
        Columns.TERMINATEDS: torch.zeros(B, dtype=torch.bool),
    }


def learner_batch(batch: dict[str, torch.Tensor]):
    """The MultiAgentBatch that Learner.update(batch=...) takes."""
    from ray.rllib.policy.sample_batch import MultiAgentBatch, SampleBatch

    return MultiAgentBatch({DEFAULT_MODULE_ID: SampleBatch({k: v.numpy() for k, v in batch.items()})}, env_steps=B)


def build_module(inference_only: bool = False, **training):
    module = tiny_config(**training).get_rl_module_spec(spaces=SPACES, inference_only=inference_only).build()
    if not inference_only:
        module.make_target_networks()
    return module


def test_module_forward_shapes_and_action_bounds():
    module = build_module()
    batch = fake_batch()
    for out in (module.forward_exploration({Columns.OBS: batch[Columns.OBS] * 100}), module.forward_inference(batch)):
        action = out[Columns.ACTIONS]
        assert action.shape == (B, ACT_DIM) and action.abs().max() <= 1.0
    out = module.forward_train(batch)
    assert out[Q_PRED].shape == (2, B) and out[Q_NEXT_TARGET].shape == (2, B) and out[Q_PI].shape == (B,)
    assert out[LOG_W].shape == (K + 1, B) and out[LOG_W_NEXT].shape == (K + 1, B)
    assert out[LOG_W].requires_grad and not out[LOG_W_NEXT].requires_grad
    # the actor's Q carries gradient to the policy only (critic frozen), the critic's Q to the critic only
    (grad_pi,) = torch.autograd.grad(out[Q_PI].sum(), [module.policy.latent_encoder[0].weight], retain_graph=True)
    assert grad_pi.abs().sum() > 0
    assert all(p.grad is None for p in module.qf.parameters())
    out[Q_PI].sum().backward()
    assert all(p.grad is None for p in module.qf.parameters())


def test_inference_only_copy_has_no_critic_and_acts_uniformly_only_while_flagged():
    full, runner = build_module(), build_module(inference_only=True)
    assert not hasattr(runner, "qf") and not hasattr(runner, "log_alpha")
    assert not bool(runner.uniform_exploration) and not bool(full.uniform_exploration)
    obs = {Columns.OBS: torch.zeros(2000, OBS_DIM)}
    runner.uniform_exploration.fill_(True)  # what OffPolicyLoop's warm-up sets for its sample calls
    uniform = runner.forward_exploration(obs)[Columns.ACTIONS]
    assert abs(uniform.mean().item()) < 0.05 and abs(uniform.var().item() - 1 / 3) < 0.03  # U[-1, 1]
    runner.set_state(full.get_state(inference_only=True))  # what sync_weights does
    assert not bool(runner.uniform_exploration)
    torch.testing.assert_close(
        runner.forward_inference(obs)[Columns.ACTIONS], full.forward_inference(obs)[Columns.ACTIONS]
    )


def test_cached_train_mode_still_switches_every_submodule():
    """``CachedTrainModeMixin`` (fast_update/train_mode.py) skips ``train()``'s walk only when nothing would change:
    eval() and train() on the root still reach every submodule, and a submodule switched on its own is switched back."""
    module = tiny_config().build_learner(spaces=SPACES).module[DEFAULT_MODULE_ID]
    module.train()
    assert "_train_mode_modules" in module.__dict__
    assert all(m.training for m in module.modules())
    module.eval()
    assert not any(m.training for m in module.modules())
    module.train()
    module.train()  # the cached no-op
    assert all(m.training for m in module.modules())
    module.qf.q1.eval()  # behind the root's back
    module.train()
    assert all(m.training for m in module.modules())
    assert module.train() is module
    module.eval()
    module.extra_head = torch.nn.Linear(2, 2)  # a submodule added later (training by default) joins the check
    module.eval()
    assert not module.extra_head.training
    module.train()
    module.extra_head = torch.nn.Linear(2, 2).eval()  # and one replaced
    module.train()
    assert module.extra_head.training


def test_learner_update_changes_weights_and_stays_finite():
    learner = tiny_config().build_learner(spaces=SPACES)
    module = learner.module[DEFAULT_MODULE_ID]
    before = {k: v.detach().clone() for k, v in module.state_dict().items()}
    for seed in range(3):
        results = learner.update(
            batch=learner_batch(fake_batch(seed)), timesteps={"num_env_steps_sampled_lifetime": 10_000}
        )
    after = module.state_dict()
    for prefix in ("policy.latent_encoder", "policy.action_head", "qf.q1", "qf.q2", "log_alpha", "target_qf.q1"):
        changed = [not torch.equal(before[k], after[k]) for k in before if k.startswith(prefix)]
        assert changed and all(changed), prefix
    assert all(torch.isfinite(v).all() for v in after.values() if v.is_floating_point())
    metrics = results[DEFAULT_MODULE_ID]
    for key in ("critic/loss", "actor/loss", "alpha/value", "estimator/entropy_mlmc", "estimator/mlmc_delta_level2"):
        assert np.isfinite(metrics[key].peek()), key


@pytest.mark.parametrize("estimator", ["mlmc", "nested", "naive"])
def test_the_entropy_fed_to_the_actor_is_the_estimators(estimator):
    """The learner's one update (``StateUpdate.step``) reports the actor loss of Eq. (11) + App. B.3 with the chosen
    estimator's entropy, and the TD target of Eq. (10) with the same estimator at x'."""
    learner = tiny_config(estimator=estimator, beta=0.5).build_learner(spaces=SPACES)
    module = learner.module[DEFAULT_MODULE_ID].unwrapped()
    batch = fake_batch()
    torch.manual_seed(0)
    with torch.no_grad():
        fwd = module.forward_train(batch)
    alpha = module.log_alpha.exp().detach()
    torch.manual_seed(0)  # the same draws inside the step's forward
    metrics = learner.make_update(DEFAULT_MODULE_ID).step(batch)
    entropy_B = estimators.ESTIMATORS[estimator](fwd[LOG_W])
    expected_actor = (-fwd[Q_PI] - alpha * entropy_B + alpha * 0.5 * (-fwd[LOG_W][0])).mean()  # Eq. (11) + App. B.3
    assert metrics["actor/loss"].item() == pytest.approx(expected_actor.item(), rel=1e-5)
    assert metrics[f"estimator/entropy_{estimator}"].item() == pytest.approx(entropy_B.mean().item(), rel=1e-5)
    # the TD target uses the same estimator at x' (Eq. 10)
    target = losses.td_target(
        batch[Columns.REWARDS],
        batch[Columns.TERMINATEDS],
        fwd[Q_NEXT_TARGET],
        estimators.ESTIMATORS[estimator](fwd[LOG_W_NEXT]),
        alpha=alpha,
        discount_B=0.99,
    )
    assert metrics["critic/target_mean"].item() == pytest.approx(target.mean().item(), rel=1e-5)


def test_nonfinite_updates_are_skipped_counted_and_finally_stop_the_run():
    learner = tiny_config(max_consecutive_nonfinite_updates=3).build_learner(spaces=SPACES)
    module = learner.module[DEFAULT_MODULE_ID]
    ts = {"num_env_steps_sampled_lifetime": 10_000}
    learner.update(batch=learner_batch(fake_batch(0)), timesteps=ts)
    before = {k: v.detach().clone() for k, v in module.state_dict().items() if not k.startswith("target_")}
    skipped = 0
    for _ in range(2):
        results = learner.update(batch=learner_batch(fake_batch(1, reward_value=float("nan"))), timesteps=ts)
        skipped += results[ALL_MODULES]["nonfinite_updates_skipped"].peek()  # per-update count; the algorithm sums them
    after = module.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before), "a non-finite update reached the weights"
    assert skipped == 2
    learner.update(batch=learner_batch(fake_batch(2)), timesteps=ts)  # a finite update resets the streak
    assert any(not torch.equal(before[k], module.state_dict()[k]) for k in before)
    for _ in range(2):
        learner.update(batch=learner_batch(fake_batch(3, reward_value=float("inf"))), timesteps=ts)
    with pytest.raises(NonFiniteUpdateError, match="3 consecutive updates had non-finite"):
        learner.update(batch=learner_batch(fake_batch(3, reward_value=float("inf"))), timesteps=ts)


@pytest.mark.parametrize(
    "training, message",
    [
        (dict(num_particles=6), "num_particles=6 must be 0 or a power of two for estimator='mlmc' (try 4 or 8)"),
        (dict(num_particles=-2, estimator="nested"), "num_particles=-2 must be an integer >= 0"),
        (dict(num_particles=0, estimator="naive"), "estimator='naive' needs num_particles >= 1"),
        (dict(estimator="exact"), "estimator='exact' is unknown; use one of 'mlmc', 'nested', 'naive', 'iwae'"),
        (dict(actor_lr=-1e-4), "actor_lr=-0.0001 must be a number > 0"),
        (dict(critic_lr=0.0), "critic_lr=0.0 must be a number > 0"),
        (dict(latent_dim=0), "latent_dim=0 must be an integer >= 1"),
        (dict(beta=-1.0), "beta=-1.0 must be a number >= 0"),
        (dict(critic_loss="l1"), "critic_loss='l1' is unknown"),
        (dict(updates_per_env_step=0), "updates_per_env_step=0 must be a number in [0.01, 64]"),
    ],
)
def test_validate_names_the_fix(training, message):
    with pytest.raises(ValueError) as info:
        tiny_config(**training).validate()
    assert message in str(info.value)


def test_validate_accepts_pixels_and_checks_their_settings():
    config = SMACConfig().environment("dmc/cartpole-swingup", env_config={"from_pixels": True})
    assert config.config_errors() == [] and config.is_pixels
    config.training(particle_mode="exact")
    assert config.config_errors() == ["particle_mode='exact' is unknown; use one of 'history', 'step'"]


def test_default_config_is_the_papers():
    c = SMACConfig()
    assert (c.actor_lr, c.critic_lr, c.alpha_lr, c.tau, c.gamma) == (3e-4, 3e-4, 3e-4, 0.005, 0.99)
    assert (c.resolved_num_particles, c.latent_dim, c.estimator, c.beta, c.hidden_dim, c.critic_loss) == (
        16,
        16,
        "mlmc",
        0.0,
        256,
        "mse",
    )
    pixels = SMACConfig().environment("dmc/cartpole-swingup", env_config={"from_pixels": True})
    assert pixels.resolved_num_particles == 32  # the reference's num_p (default.yaml:48)
    assert c.replay_buffer_config["type"] == "EpisodeReplayBuffer"  # uniform, not prioritized


class RLlibOracleLearner(SACTorchLearner):
    """RLlib's own update path as the test oracle for state SMAC: ``Learner.update``, ``TorchLearner``'s forward,
    ``compute_gradients``, ``postprocess_gradients`` and ``apply_gradients`` (its finite checks), ``DQNLearner``'s
    Polyak averaging through the state dicts and RLlib's ``MetricsLogger``; only the loss is SMAC's
    (``objectives/losses.py``)."""

    def configure_optimizers_for_module(self, module_id, config=None) -> None:
        from smac_rllib.core.optim import adam
        from smac_rllib.objectives.state_update import optimizer_groups

        for name, params, lr in optimizer_groups(self._module[module_id].unwrapped(), config):
            self.register_optimizer(
                module_id=module_id, optimizer_name=name, optimizer=adam(params), params=params, lr_or_lr_schedule=lr
            )

    def compute_loss_for_module(self, *, module_id, config, batch, fwd_out):
        out = losses.soft_actor_critic_losses(
            fwd_out,
            batch[Columns.REWARDS],
            batch[Columns.TERMINATEDS],
            log_alpha=self._module[module_id].unwrapped().log_alpha,
            target_entropy=float(self.target_entropy[module_id]),
            discount_B=config.gamma,
            settings=losses.ObjectiveSettings.from_config(config),
        )
        return out.critic + out.actor + out.alpha

    compute_gradients = TorchLearner.compute_gradients  # one backward of the sum (SAC's own expects its three losses)


def test_the_one_update_matches_rllibs_own_update_path():
    """The learner's update (``StepLearnerMixin`` running ``StateUpdate.step``: one backward, the non-finite flag, fused
    Adam, foreach Polyak, ``LeanMetricsLogger``) against RLlib's own update path (``RLlibOracleLearner``) from the same
    weights on the same batches and noise: after three updates the weights, Adam's moments and the target critics
    agree, both report the same steps trained, and the lean path never falls back to RLlib's conversion or logger."""
    from ray.rllib.utils.metrics import NUM_MODULE_STEPS_TRAINED_LIFETIME

    from smac_rllib.algorithms.smac.smac_learner import SMACTorchLearner
    from smac_rllib.training.fast_update.metrics_logger import LeanMetricsLogger

    ours = tiny_config().build_learner(spaces=SPACES)
    oracle_config = tiny_config()
    oracle_config._learner_class = RLlibOracleLearner
    oracle = oracle_config.build_learner(spaces=SPACES)
    assert type(ours) is SMACTorchLearner and type(oracle) is RLlibOracleLearner
    oracle.module[DEFAULT_MODULE_ID].load_state_dict(ours.module[DEFAULT_MODULE_ID].state_dict())
    assert type(ours.metrics) is LeanMetricsLogger

    def not_on_the_lean_path(*args, **kwargs):
        raise AssertionError("the lean update fell back to RLlib's conversion or log_value")

    timesteps = {"num_env_steps_sampled_lifetime": 10_000}
    ours._convert_batch_type = not_on_the_lean_path
    for seed in range(3):
        batch = learner_batch(fake_batch(seed))
        torch.manual_seed(seed)
        result = ours.update(batch=batch, timesteps=timesteps)
        ours.metrics._maybe_create_stats_object = not_on_the_lean_path  # every key exists after update 1: pushes only
        torch.manual_seed(seed)
        oracle_result = oracle.update(batch=batch, timesteps=timesteps)
    state, ref_state = ours.module[DEFAULT_MODULE_ID].state_dict(), oracle.module[DEFAULT_MODULE_ID].state_dict()
    assert any("target" in k for k in state)
    for key in state:
        torch.testing.assert_close(state[key], ref_state[key], rtol=1e-5, atol=1e-6, msg=key)
    for name, optimizer in ours._named_optimizers.items():
        for p_state, ref_p_state in zip(
            optimizer.state.values(), oracle._named_optimizers[name].state.values(), strict=True
        ):
            for field in ("step", "exp_avg", "exp_avg_sq"):
                torch.testing.assert_close(p_state[field], ref_p_state[field], rtol=1e-5, atol=1e-9)
    steps = [r[DEFAULT_MODULE_ID][NUM_MODULE_STEPS_TRAINED_LIFETIME] for r in (result, oracle_result)]
    assert [float(s.peek() if hasattr(s, "peek") else s) for s in steps] == [3 * 32, 3 * 32] or steps[0] == steps[1]
    assert float(result[DEFAULT_MODULE_ID]["critic/loss"].peek()) > 0


@pytest.mark.parametrize("cuda_deterministic", [False, True])
def test_seeded_learner_keeps_rllibs_cuda_determinism_settings_only_when_asked(monkeypatch, cuda_deterministic):
    """RLlib's seeding (``set_torch_seed``, from ``Learner.__init__`` with a config seed) on a CUDA torch sets
    ``CUBLAS_WORKSPACE_CONFIG=:4096:8`` and ``cudnn.deterministic`` (1.4-1.7x slower pixel updates on an H100,
    docs/gpu.md); our learners' ``build`` undoes both unless ``cuda_deterministic=True``. The CUDA branch of RLlib's
    own seeding runs here on the CPU build by reporting a CUDA version (its ``torch.cuda`` seeding is lazy)."""
    monkeypatch.setattr(torch.version, "cuda", "13.0")
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    monkeypatch.setattr(torch.backends.cudnn, "deterministic", False)
    monkeypatch.setattr(torch.backends.cudnn, "benchmark", False)
    config = tiny_config().debugging(seed=3).training(cuda_deterministic=cuda_deterministic)
    learner = config.build_learner(spaces=SPACES)
    assert learner.config.seed == 3
    if cuda_deterministic:
        assert os.environ.get("CUBLAS_WORKSPACE_CONFIG") == ":4096:8" and torch.backends.cudnn.deterministic
    else:
        assert "CUBLAS_WORKSPACE_CONFIG" not in os.environ and not torch.backends.cudnn.deterministic


def test_nonfinite_flag_checks_entries_and_leaves_gradients_as_they_are():
    """``core/optim.py: nonfinite_flag``: 0 for finite gradients, which stay bitwise the same, even when a norm would
    overflow (1e30 squared); 1 for one inf or one NaN entry anywhere."""
    from smac_rllib.core.optim import nonfinite_flag

    torch.manual_seed(0)
    grads = [torch.randn(7, 3), torch.randn(5), torch.full((4,), 1e30)]
    copies = [g.clone() for g in grads]
    assert float(nonfinite_flag(grads)) == 0.0
    assert all(torch.equal(g, c) for g, c in zip(grads, copies, strict=True))
    for bad in (float("inf"), float("-inf"), float("nan")):
        broken = [g.clone() for g in grads]
        broken[1][3] = bad
        assert float(nonfinite_flag(broken)) == 1.0, bad


def test_td_discount_is_the_float_gamma_for_one_step_replays_and_gamma_to_the_n_otherwise():
    """``state_update.td_discount``: with ``n_step=1`` (our replay's only kind) the float gamma, whatever the batch
    holds; otherwise RLlib SAC's ``gamma ** n_step`` per transition; without the column, gamma."""
    from smac_rllib.objectives.state_update import td_discount

    n_step_B = torch.tensor([1.0, 2.0, 3.0])
    assert td_discount(0.99, 1, {"n_step": torch.ones(3)}) == 0.99
    assert torch.allclose(td_discount(0.9, 3, {"n_step": n_step_B}), torch.tensor([0.9, 0.81, 0.729]))
    assert td_discount(0.9, (1, 3), {}) == 0.9


@pytest.mark.parametrize("algo", ["SMAC", "SMAC-pixels", "SLAC", "Dreamer"])
def test_the_retired_switch_is_refused_and_its_class_names_still_restore(algo):
    """``fast_update: false`` picked ``...RLlibPath`` twins of the learners and modules until every run took the one
    update: the setting is now refused in one line, and the names those checkpoints pickled resolve to the classes
    (``training/checkpoint_names.py``)."""
    import importlib
    import pickle

    import smac_rllib

    def config(**kw):
        cls = getattr(smac_rllib, ("SMAC" if algo.startswith("SMAC") else algo) + "Config")
        c = cls().training(**kw)
        return c.environment("dmc/cartpole-swingup", env_config={"from_pixels": True}) if algo != "SMAC" else c

    assert not any("fast_update" in e for e in config().config_errors())
    assert any(
        "fast_update=False must be True (the switch was retired" in e for e in config(fast_update=False).config_errors()
    )
    c = config()
    for cls in (c.get_default_learner_class(), c.get_default_rl_module_spec().module_class):
        home = importlib.import_module(cls.__module__)
        assert getattr(home, cls.__name__ + "RLlibPath") is cls
        assert pickle.loads(pickle.dumps(cls)) is cls
        with pytest.raises(AttributeError):
            _ = home.NoSuchClassRLlibPath


def test_profiling_aids_asked_for_but_missing_stop_the_learner_build_in_one_line(monkeypatch, tmp_path):
    """``SMAC_OP_PROBE`` / ``SMAC_PROFILE_THREADS`` load benchmarks/stack_sampler.py (not in the package) when the
    learner is built, not after the warm-up; a path that holds no aids is named, and nothing half-loaded stays
    behind."""
    import sys

    monkeypatch.delitem(sys.modules, "smac_profiling_aids", raising=False)
    monkeypatch.setenv("SMAC_OP_PROBE", "5")
    monkeypatch.setenv("SMAC_PROFILING_AIDS", str(tmp_path / "nowhere.py"))
    with pytest.raises(
        RuntimeError, match=r"need the profiling aids at .*nowhere\.py .*SMAC_PROFILING_AIDS=<absolute path"
    ):
        tiny_config().build_learner(spaces=SPACES)
    assert "smac_profiling_aids" not in sys.modules
    monkeypatch.setenv("SMAC_PROFILING_AIDS", str(tmp_path))  # a directory, not a .py file
    with pytest.raises(RuntimeError, match="need the profiling aids at"):
        tiny_config().build_learner(spaces=SPACES)
    broken = tmp_path / "broken.py"
    broken.write_text("raise ImportError('half-written aids')\n")
    monkeypatch.setenv("SMAC_PROFILING_AIDS", str(broken))
    with pytest.raises(ImportError, match="half-written"):
        tiny_config().build_learner(spaces=SPACES)
    assert "smac_profiling_aids" not in sys.modules


def test_rllibs_own_grad_scaler_is_refused_at_build():
    """The update is one function with its own fp16 scaler (pixels, ``autocast: fp16``): RLlib's
    ``_torch_grad_scaler_class`` would never step, so the learner refuses it in one line."""
    import functools

    from smac_rllib.training.fast_update.captured_update import CaptureUnavailable

    config = tiny_config()
    config.experimental(_torch_grad_scaler_class=functools.partial(torch.amp.GradScaler, "cpu"))
    with pytest.raises(CaptureUnavailable, match="_torch_grad_scaler_class is not used"):
        config.build_learner(spaces=SPACES)
