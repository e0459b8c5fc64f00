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
    return SMACConfig().environment(observation_space=SPACES["__env__"][0], action_space=SPACES["__env__"][1]).training(**kw)


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
    torch.testing.assert_close(runner.forward_inference(obs)[Columns.ACTIONS], full.forward_inference(obs)[Columns.ACTIONS])


@pytest.mark.parametrize("fast_update", [True, False])
def test_cached_train_mode_still_switches_every_submodule(fast_update):
    """``CachedTrainModeMixin`` (fast_update/train_mode.py) skips ``train()``'s walk only when nothing would change:
    eval() and train() on the root still reach every submodule, and a submodule switched on its own is switched back.
    With ``fast_update: false`` the module's ``train`` is torch's own walk (switch.py), with the same outcome."""
    module = tiny_config(fast_update=fast_update).build_learner(spaces=SPACES).module[DEFAULT_MODULE_ID]
    module.train()
    assert ("_train_mode_modules" in module.__dict__) is fast_update  # the cache exists on the fast path only
    assert type(module).fast_path is fast_update
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
        results = learner.update(batch=learner_batch(fake_batch(seed)), timesteps={"num_env_steps_sampled_lifetime": 10_000})
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
    config = tiny_config(estimator=estimator, beta=0.5).build_learner(spaces=SPACES).config
    learner = tiny_config(estimator=estimator, beta=0.5).build_learner(spaces=SPACES)
    module = learner.module[DEFAULT_MODULE_ID]
    batch = fake_batch()
    torch.manual_seed(0)
    fwd = module.forward_train(batch)
    learner.compute_loss_for_module(module_id=DEFAULT_MODULE_ID, config=config, batch=batch, fwd_out=fwd)
    learner.device_metrics.flush(learner.metrics)  # per-update metrics stay on the device until a flush (async_learner.py)
    alpha = module.log_alpha.exp().detach()
    entropy_B = estimators.ESTIMATORS[estimator](fwd[LOG_W])
    expected_actor = (-fwd[Q_PI] - alpha * entropy_B + alpha * 0.5 * (-fwd[LOG_W][0])).mean()  # Eq. (11) + App. B.3
    logged = learner.metrics.peek((DEFAULT_MODULE_ID, "actor/loss"))
    assert logged == pytest.approx(expected_actor.item(), rel=1e-5)
    assert learner.metrics.peek((DEFAULT_MODULE_ID, f"estimator/entropy_{estimator}")) == pytest.approx(entropy_B.mean().item(), rel=1e-5)
    # the TD target uses the same estimator at x' (Eq. 10)
    target = losses.td_target(batch[Columns.REWARDS], batch[Columns.TERMINATEDS], fwd[Q_NEXT_TARGET],
                              estimators.ESTIMATORS[estimator](fwd[LOG_W_NEXT]), alpha=alpha, discount_B=0.99)
    assert learner.metrics.peek((DEFAULT_MODULE_ID, "critic/target_mean")) == pytest.approx(target.mean().item(), rel=1e-5)


@pytest.mark.parametrize("fast_update", [True, False])
def test_nonfinite_updates_are_skipped_counted_and_finally_stop_the_run(fast_update):
    learner = tiny_config(max_consecutive_nonfinite_updates=3, fast_update=fast_update).build_learner(spaces=SPACES)
    assert learner.fast_path is fast_update
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
    with pytest.raises(NonFiniteUpdateError, match="3 consecutive SMAC updates had non-finite"):
        learner.update(batch=learner_batch(fake_batch(3, reward_value=float("inf"))), timesteps=ts)


@pytest.mark.parametrize(
    "training, message",
    [
        (dict(num_particles=6), "num_particles=6 must be 0 or a power of two for estimator='mlmc' (try 4 or 8)"),
        (dict(num_particles=-2, estimator="nested"), "num_particles=-2 must be an integer >= 0"),
        (dict(num_particles=0, estimator="naive"), "estimator='naive' needs num_particles >= 1"),
        (dict(estimator="exact"), "estimator='exact' is unknown; use one of ['iwae', 'mlmc', 'naive', 'nested']"),
        (dict(actor_lr=-1e-4), "actor_lr=-0.0001 must be a positive number"),
        (dict(critic_lr=0.0), "critic_lr=0.0 must be a positive number"),
        (dict(latent_dim=0), "latent_dim=0 must be an integer >= 1"),
        (dict(beta=-1.0), "beta=-1.0 must be >= 0"),
        (dict(critic_loss="l1"), "critic_loss='l1' is unknown"),
        (dict(updates_per_env_step=0), "updates_per_env_step=0 must be > 0"),
    ],
)
def test_validate_names_the_fix(training, message):
    with pytest.raises(ValueError) as info:
        tiny_config(**training).validate()
    assert message in str(info.value)


def test_validate_accepts_pixels_and_checks_their_settings():
    config = SMACConfig().environment("dmc/cartpole-swingup", env_config={"from_pixels": True})
    assert config.smac_errors() == [] and config.is_pixels
    config.training(particle_mode="exact")
    assert config.smac_errors() == ["particle_mode='exact' is unknown; use 'history' (reference) or 'step'"]


def test_default_config_is_the_papers():
    c = SMACConfig()
    assert (c.actor_lr, c.critic_lr, c.alpha_lr, c.tau, c.gamma) == (3e-4, 3e-4, 3e-4, 0.005, 0.99)
    assert (c.resolved_num_particles, c.latent_dim, c.estimator, c.beta, c.hidden_dim, c.critic_loss) == (16, 16, "mlmc", 0.0, 256, "mse")
    pixels = SMACConfig().environment("dmc/cartpole-swingup", env_config={"from_pixels": True})
    assert pixels.resolved_num_particles == 32  # the reference's num_p (default.yaml:48)
    assert c.replay_buffer_config["type"] == "EpisodeReplayBuffer"  # uniform, not prioritized


def test_lean_update_matches_rllibs_own_update():
    """``LeanUpdateMixin`` (lean_update.py: its ``update``, numpy->tensor conversion, ``postprocess_gradients``,
    ``apply_gradients``, Polyak averaging and ``LeanMetricsLogger``) against the same learner with the speed layer off
    (``fast_update: false``: RLlib's own methods and ``MetricsLogger``): after three updates the weights, Adam's moments
    and the target critics agree, and so does every reduced metric (throughputs, which depend on wall time, aside)."""
    import tree
    from ray.rllib.utils.metrics.metrics_logger import MetricsLogger

    from smac_rllib.algorithms.smac.smac_learner import SMACTorchLearner, SMACTorchLearnerRLlibPath
    from smac_rllib.algorithms.smac.smac_rl_module import SMACTorchRLModule, SMACTorchRLModuleRLlibPath
    from smac_rllib.training.fast_update.lean_update import LeanMetricsLogger

    lean = tiny_config().build_learner(spaces=SPACES)
    reference = tiny_config(fast_update=False).build_learner(spaces=SPACES)
    assert type(lean) is SMACTorchLearner and type(reference) is SMACTorchLearnerRLlibPath
    assert type(lean.module[DEFAULT_MODULE_ID].unwrapped()) is SMACTorchRLModule
    assert type(reference.module[DEFAULT_MODULE_ID].unwrapped()) is SMACTorchRLModuleRLlibPath
    reference.set_state(lean.get_state())
    assert type(lean.metrics) is LeanMetricsLogger and type(reference.metrics) is MetricsLogger

    def not_on_the_lean_path(*args, **kwargs):
        raise AssertionError("the lean update fell back to RLlib's conversion or log_value")

    timesteps = {"num_env_steps_sampled_lifetime": 10_000}
    lean._convert_batch_type = not_on_the_lean_path
    for seed in range(3):
        batch = learner_batch(fake_batch(seed))
        torch.manual_seed(seed)
        ours = lean.update(batch=batch, timesteps=timesteps)
        lean.metrics._maybe_create_stats_object = not_on_the_lean_path  # every key exists after update 1: pushes only
        torch.manual_seed(seed)
        theirs = reference.update(batch=batch, timesteps=timesteps)
    assert type(reference.metrics) is MetricsLogger
    state, ref_state = lean.module[DEFAULT_MODULE_ID].state_dict(), reference.module[DEFAULT_MODULE_ID].state_dict()
    for key in state:
        torch.testing.assert_close(state[key], ref_state[key], rtol=1e-5, atol=1e-6, msg=key)
    for name, optimizer in lean._named_optimizers.items():
        for p_state, ref_p_state in zip(optimizer.state.values(), reference._named_optimizers[name].state.values()):
            for field in ("step", "exp_avg", "exp_avg_sq"):
                torch.testing.assert_close(p_state[field], ref_p_state[field], rtol=1e-5, atol=1e-9)
    flat = {path: v for path, v in tree.flatten_with_path(ours) if "throughput" not in str(path)}
    ref_flat = {path: v for path, v in tree.flatten_with_path(theirs) if "throughput" not in str(path)}
    assert flat.keys() == ref_flat.keys()
    assert len(flat) > 30
    for path, value in flat.items():
        a, b = (float(v.peek() if hasattr(v, "peek") else v) for v in (value, ref_flat[path]))
        assert np.isclose(a, b, rtol=1e-4, atol=1e-6, equal_nan=True), (path, a, b)


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


def test_nonfinite_gradients_flag_checks_entries_and_leaves_gradients_as_they_are():
    """``nonfinite_gradients_flag`` (smac_learner.py): False for finite gradients, which stay bitwise the same, even
    when a norm would overflow (1e30 squared); True for one inf or one NaN entry anywhere."""
    from smac_rllib.algorithms.smac.smac_learner import nonfinite_gradients_flag

    torch.manual_seed(0)
    grads = [torch.randn(7, 3), torch.randn(5), torch.full((4,), 1e30)]
    copies = [g.clone() for g in grads]
    assert not bool(nonfinite_gradients_flag(grads))
    assert all(torch.equal(g, c) for g, c in zip(grads, copies))
    for bad in (float("inf"), float("-inf"), float("nan")):
        broken = [g.clone() for g in grads]
        broken[1][3] = bad
        assert bool(nonfinite_gradients_flag(broken)), bad


def test_td_discount_is_the_float_gamma_for_one_step_replays_and_gamma_to_the_n_otherwise():
    """``async_learner.td_discount``: with ``n_step=1`` (our replay's only kind) the float gamma, whatever the batch
    holds; otherwise RLlib SAC's ``gamma ** n_step`` per transition; without the column, gamma."""
    from types import SimpleNamespace

    from smac_rllib.training.async_learner import td_discount

    n_step_B = torch.tensor([1.0, 2.0, 3.0])
    assert td_discount(SimpleNamespace(gamma=0.99, n_step=1), {"n_step": torch.ones(3)}) == 0.99
    assert torch.allclose(td_discount(SimpleNamespace(gamma=0.9, n_step=3), {"n_step": n_step_B}), torch.tensor([0.9, 0.81, 0.729]))
    assert td_discount(SimpleNamespace(gamma=0.9, n_step=(1, 3)), {}) == 0.9


def test_rllib_learner_update_equals_the_reference_state_update():
    """``SMACTorchLearner.update`` (RLlib's learner with the lean update) against ``objectives/state_update.py:
    StateUpdate.step`` (Alg. 1's update as one plain function) from the same weights on the same batches and noise:
    after three updates the weights, target critics and Adam moments agree."""
    import copy

    from smac_rllib.objectives.state_update import StateUpdate

    learner = tiny_config().build_learner(spaces=SPACES)
    module = copy.deepcopy(learner.module[DEFAULT_MODULE_ID].unwrapped())
    reference = StateUpdate.from_config(module, tiny_config(), action_dim=ACT_DIM)
    timesteps = {"num_env_steps_sampled_lifetime": 10_000}
    for seed in range(3):
        batch = fake_batch(seed)
        torch.manual_seed(seed)
        learner.update(batch=learner_batch(batch), timesteps=timesteps)
        torch.manual_seed(seed)
        out = reference.step(batch)
        assert torch.isfinite(out.critic) and torch.isfinite(out.actor)
    ours, theirs = learner.module[DEFAULT_MODULE_ID].unwrapped().state_dict(), module.state_dict()
    assert ours.keys() == theirs.keys() and any("target" in k for k in ours)
    for key in ours:
        torch.testing.assert_close(ours[key], theirs[key], rtol=1e-5, atol=1e-6, msg=key)
    for name, optimizer in reference.optimizers.items():
        for p_state, ref_p_state in zip(learner._named_optimizers[f"{DEFAULT_MODULE_ID}_{name}"].state.values(), optimizer.state.values()):
            for field in ("step", "exp_avg", "exp_avg_sq"):
                torch.testing.assert_close(p_state[field], ref_p_state[field], rtol=1e-5, atol=1e-9)


@pytest.mark.parametrize("algo", ["SMAC", "SMAC-pixels", "SLAC", "Dreamer"])
def test_fast_update_switch_picks_the_learner_and_module_pair_a_checkpoint_can_find(algo):
    """``fast_update`` (training/fast_update/switch.py) is one switch for both sides: ``false`` gives the
    ``...RLlibPath`` learner and module classes, ``true`` the plain ones; each is a module-level name of its module
    (a checkpoint names classes by module path) and differs from the plain class only in ``fast_path``."""
    import importlib
    import pickle

    import smac_rllib

    def config(**kw):
        cls = getattr(smac_rllib, ("SMAC" if algo.startswith("SMAC") else algo) + "Config")
        c = cls().training(**kw)
        return c.environment("dmc/cartpole-swingup", env_config={"from_pixels": True}) if algo == "SMAC-pixels" else c

    for fast in (True, False):
        c = config(fast_update=fast)
        learner_class, module_class = c.get_default_learner_class(), c.get_default_rl_module_spec().module_class
        for cls in (learner_class, module_class):
            assert cls.__name__.endswith("RLlibPath") is not fast, cls
            assert getattr(importlib.import_module(cls.__module__), cls.__name__) is cls
            assert pickle.loads(pickle.dumps(cls)) is cls
            own = set(vars(cls)) - {"__module__", "__doc__", "__abstractmethods__", "_abc_impl"}  # ABC bookkeeping aside
            assert cls.fast_path is fast and (fast or own == {"fast_path"}), own
    from smac_rllib.algorithms.baselines.sac_baseline import SACBaselineTorchLearner
    from smac_rllib.training.fast_update.switch import rllib_path

    for no_switch in (SACBaselineTorchLearner, learner_class):  # a learner without the layer; one already switched
        with pytest.raises(TypeError, match="has no speed layer to switch off"):
            rllib_path(no_switch)


def test_profiling_aids_asked_for_but_missing_stop_the_learner_build_in_one_line(monkeypatch, tmp_path):
    """``SMAC_OP_PROBE`` / ``SMAC_PROFILE_THREADS`` load benchmarks/stack_sampler.py (not in the package) when the learner
    is built, not after the warm-up; a path that holds no aids is named, and nothing half-loaded stays behind."""
    import sys

    monkeypatch.delitem(sys.modules, "smac_profiling_aids", raising=False)
    monkeypatch.setenv("SMAC_OP_PROBE", "5")
    monkeypatch.setenv("SMAC_PROFILING_AIDS", str(tmp_path / "nowhere.py"))
    with pytest.raises(RuntimeError, match=r"need the profiling aids at .*nowhere\.py .*SMAC_PROFILING_AIDS=<absolute path"):
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


def test_a_skipped_update_backs_off_rllibs_own_grad_scaler():
    """With RLlib's grad scaler (``_torch_grad_scaler_class``) a non-finite update is skipped on the host before
    RLlib's step, so the learner backs the scale off itself, as the scaler's own step would have: it halves."""
    import functools

    config = tiny_config()
    config.experimental(_torch_grad_scaler_class=functools.partial(torch.amp.GradScaler, "cpu"))
    learner = config.build_learner(spaces=SPACES)
    ts = {"num_env_steps_sampled_lifetime": 10_000}
    learner.update(batch=learner_batch(fake_batch(0)), timesteps=ts)
    scaler = learner._grad_scalers[DEFAULT_MODULE_ID]
    before = scaler.get_scale()
    learner.update(batch=learner_batch(fake_batch(1, reward_value=float("nan"))), timesteps=ts)
    assert scaler.get_scale() == before * scaler.get_backoff_factor() == before / 2
