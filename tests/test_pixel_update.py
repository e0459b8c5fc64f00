"""The pixel update as pure torch (smac_rllib/objectives/pixel_update.py): equal to the RLlib learner's update,
importable and benchmarkable without Ray (the GPU device has no ray, dm_control or gymnasium)."""

from __future__ import annotations

import csv
import math
import subprocess
import sys
from pathlib import Path

import torch
from ray.rllib.algorithms.sac.torch.sac_torch_learner import SACTorchLearner
from ray.rllib.core import DEFAULT_MODULE_ID
from ray.rllib.core.learner.torch.torch_learner import TorchLearner
from ray.rllib.utils.metrics import ALL_MODULES as ALL_MODULES_KEY
from ray.rllib.policy.sample_batch import MultiAgentBatch, SampleBatch

from smac_rllib.core.optim import adam
from smac_rllib.objectives import losses, pixel_update
from smac_rllib.objectives.pixel_update import PixelUpdate
from tests.test_smac_pixels import SPACES, fake_sequences, pixel_config

ROOT = Path(__file__).resolve().parent.parent


def test_one_update_through_rllib_equals_pixel_update():
    config = pixel_config(num_particles=4)
    learner = config.build_learner(spaces=SPACES)
    module = learner.module[DEFAULT_MODULE_ID].unwrapped()
    pure = PixelUpdate.like(module, config, float(learner.target_entropy[DEFAULT_MODULE_ID]))
    before = {k: v.detach().clone() for k, v in module.state_dict().items()}
    data = fake_sequences()
    for step in range(2):  # two updates: Adam's moments and the target critics carry over
        torch.manual_seed(100 + step)
        results = learner.update(
            batch=MultiAgentBatch({DEFAULT_MODULE_ID: SampleBatch(data)}, env_steps=18),
            timesteps={"num_env_steps_sampled_lifetime": 10_000},
        )
        torch.manual_seed(100 + step)
        metrics = pure.step({k: torch.from_numpy(v) for k, v in data.items()})
    theirs, ours = module.state_dict(), pure.state_dict()
    changed = 0
    for key, value in theirs.items():
        if key == "uniform_exploration":
            continue
        torch.testing.assert_close(ours[key], value, rtol=1e-4, atol=1e-5, msg=key)
        changed += not torch.equal(before[key], value)
    assert changed > 0.9 * len(theirs) - 2  # the update moved (nearly) every tensor
    rllib_metrics = results[DEFAULT_MODULE_ID]
    for key in ("critic/loss", "actor/loss", "alpha/loss", "world_model/loss", "estimator/entropy_mlmc"):
        assert math.isclose(float(metrics[key]), rllib_metrics[key].peek(), rel_tol=1e-4, abs_tol=1e-5), key


def test_gpu_learner_benchmark_runs_on_cpu_without_ray(tmp_path):
    """benchmarks/gpu_learner.py with `ray` made unimportable, at tiny sizes: the rows and the ratio come out."""
    code = (
        "import sys, runpy; sys.modules['ray'] = None; sys.modules['gymnasium'] = None;"
        " sys.modules['dm_control'] = None\n"
        "sys.argv = ['gpu_learner.py', '--device', 'cpu', '--sizes', '4x8', '--preset', 'tiny', '--num-particles', '4',"
        " '--iters', '1', '--warmup', '1', '--precisions', 'fp32', '--compile-modes', 'eager',"
        f" '--out', {str(tmp_path)!r}]\n"
        "runpy.run_path('benchmarks/gpu_learner.py', run_name='__main__')\n"
        "assert not any(m == 'ray' or m.startswith('ray.') for m in sys.modules if sys.modules[m] is not None)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = list(csv.DictReader(open(tmp_path / "gpu_learner.csv")))
    assert [r["variant"] for r in rows] == ["Latent-SAC K=0", "SMAC K=4 step", "SMAC K=4 history"]
    assert all(r["error"] == "" and float(r["s_per_update"]) > 0 for r in rows)
    assert float(rows[0]["ratio_to_k0"]) == 1.0
    for r in rows:  # frames/s = action repeat / updates per agent step / seconds per update
        assert math.isclose(float(r["learner_frames_per_s"]), 2 / 0.2 / float(r["s_per_update"]), rel_tol=1e-6)
    assert "| 4x8 | SMAC K=4 history | all | fp32 | eager |" in (tmp_path / "gpu_learner.md").read_text()


def test_rllib_learner_overhead_benchmark_runs_on_cpu(tmp_path):
    """benchmarks/gpu_rllib_learner.py (the device plan's probe of RLlib's overhead) at tiny sizes: every mode, the
    learner's own async stager + update threads included, timed alone, beside one physics-only process and beside one
    renderer process (``--render-procs 0,1p,1``: the device plan's test of GL rendering on the learner's GPU against
    the runners' CPU load; Mesa EGL here), all in a Ray worker process as in a live run (``--in-ray-task``)."""
    proc = subprocess.run(
        [
            sys.executable,
            "benchmarks/gpu_rllib_learner.py",
            "--device",
            "cpu",
            "--preset",
            "tiny",
            "--sizes",
            "4x8",
            "--num-particles",
            "4",
            "--iters",
            "1",
            "--warmup",
            "1",
            "--profile-iters",
            "1",
            "--render-procs",
            "0,1p,1",
            "--in-ray-task",
            "--out",
            str(tmp_path),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = list(csv.DictReader(open(tmp_path / "gpu_rllib_learner.csv")))
    modes = ["bare", "bare + h2d", "rllib", "rllib + replay", "rllib async threads"]
    assert [(r["render_procs"], r["mode"]) for r in rows] == [(n, m) for n in ("0", "1p", "1") for m in modes]
    assert all(math.isfinite(float(r["s_per_update"])) and float(r["s_per_update"]) > 0 for r in rows)
    assert float(rows[0]["ratio_to_bare"]) == 1.0 and float(rows[10]["ratio_to_bare"]) == 1.0  # each block's own bare
    frames_per_s = {r["render_procs"]: float(r["renderer_frames_per_s"]) for r in rows}
    assert frames_per_s["0"] == 0.0 and math.isfinite(frames_per_s["1"]) and frames_per_s["1"] > 0  # it really rendered
    assert frames_per_s["1p"] > frames_per_s["1"]  # physics-only steps outpace rendering ones (it rendered nothing)
    md = (tmp_path / "gpu_rllib_learner.md").read_text()
    assert "| 4x8 | rllib async threads | 0 |" in md and "| 4x8 | rllib async threads | 1 |" in md
    assert "Learner's process: a Ray worker (one task, --in-ray-task); pid " in md and "switch interval 5 ms" in md
    assert "Renderers' GL (render procs = 1): " in md and "(render procs = 1p): none (physics only" in md
    assert "run_backward" in (tmp_path / "profile.txt").read_text()


# ----- the sync-free update against the frozen 58c9715 update --------------------------------------------------
def _pure_update(num_particles: int, seed: int = 0, **settings):
    from smac_rllib.algorithms.smac.smac_fields import _FIELDS
    from smac_rllib.training.fields import resolved_defaults

    torch.manual_seed(seed)
    fields = resolved_defaults(  # a fresh pixel config's settings, tiny
        _FIELDS,
        pixels=True,
        world_model_preset="tiny",
        pixel_hidden_dim=16,
        actor_layers=2,
        critic_layers=2,
        num_particles=num_particles,
        autocast=None,
    )
    return PixelUpdate.from_fields(fields, 2, **settings)


def _batch(seed: int = 0) -> dict:
    return {k: torch.from_numpy(v) for k, v in fake_sequences(seed).items()}


def _noise(update, batch, seed):
    from smac_rllib.objectives.pixel_update import UpdateNoise

    B, T, A = batch["actions"].shape
    torch.manual_seed(seed)
    return UpdateNoise.draw(update.settings, B, T, update.world_model.rssm.stoch_size, A, torch.device("cpu"))


def _optimizer_state(update) -> dict:
    return {
        (name, i, k): v
        for name, opt in update.optimizers.items()
        for i, st in enumerate(opt.state.values())
        for k, v in st.items()
    }


import pytest  # noqa: E402


@pytest.mark.parametrize("num_particles", [0, 32])
def test_refactored_update_equals_the_58c9715_update_on_the_same_noise(num_particles):
    """The sync-free update (masks instead of boolean gathers, the prior head after the observe loop, the GRU input's
    action part precomputed, the device-side non-finite skip, the foreach clip and Polyak) against the frozen copy of
    the update before it (tests/reference_pixel_update.py), over 2 consecutive updates on identical pre-drawn noise:
    parameters, Adam moments and step counts, target critics and metrics at rtol 1e-5 (K=0 and K=32 history)."""
    import copy

    from tests.reference_pixel_update import as_58c9715_layout, reference_step

    new = _pure_update(num_particles)
    old = as_58c9715_layout(copy.deepcopy(new))
    for step in range(2):
        batch = _batch(step)
        noise = _noise(new, batch, 10 + step)
        ours, theirs = new.step(batch, noise), reference_step(old, batch, noise)
        assert set(theirs) <= set(ours) and float(ours["nonfinite_update"]) == 0.0
        for key, value in theirs.items():
            torch.testing.assert_close(
                torch.as_tensor(ours[key]), torch.as_tensor(value), rtol=1e-5, atol=1e-6, msg=key
            )
    for key, value in old.state_dict().items():
        torch.testing.assert_close(new.state_dict()[key], value, rtol=1e-5, atol=1e-6, msg=key)
    ours_opt, theirs_opt = _optimizer_state(new), _optimizer_state(old)
    assert ours_opt.keys() == theirs_opt.keys() and any(k[2] == "step" for k in ours_opt)
    for key, value in theirs_opt.items():
        torch.testing.assert_close(ours_opt[key], value, rtol=1e-5, atol=1e-7, msg=str(key))
    assert all(float(v) == 2.0 for k, v in ours_opt.items() if k[2] == "step")


def test_a_nan_reward_skips_the_update_on_the_device_and_is_counted():
    """A NaN in the rewards: weights, Adam moments and step counts unchanged, ``nonfinite_update`` = 1; the target
    critics move toward the unchanged critics only (Polyak runs, as in the RLlib learners); the next finite update
    steps."""
    update = _pure_update(4)
    update.step(_batch(0))
    before = {k: v.clone() for k, v in update.state_dict().items() if not k.startswith("target_qf")}
    moments = {k: v.clone() for k, v in _optimizer_state(update).items()}
    bad = _batch(1)
    bad["rewards"][0, 5] = float("nan")
    metrics = update.step(bad)
    assert float(metrics["nonfinite_update"]) == 1.0
    after = update.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before), "a non-finite update reached the weights"
    assert all(torch.equal(moments[k], v) for k, v in _optimizer_state(update).items())
    assert float(update.step(_batch(2))["nonfinite_update"]) == 0.0
    assert all(float(v) == 2.0 for k, v in _optimizer_state(update).items() if k[2] == "step")


class _NoSync(torch.utils._python_dispatch.TorchDispatchMode):
    """Fails on every op that reads a device value on the host or gives a data-dependent shape."""

    FORBIDDEN = ("_local_scalar_dense", "nonzero", "is_nonzero", "masked_select", "item", "argwhere", "unique")

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.__name__.split(".")[0]
        if name in self.FORBIDDEN:
            raise AssertionError(f"host sync in the update: aten.{func.__name__}")
        if name in ("index", "index_put", "index_put_") and any(
            isinstance(i, torch.Tensor) and i.dtype == torch.bool
            for i in (args[1] if len(args) > 1 else [])
            if i is not None
        ):
            raise AssertionError(f"boolean index in the update: aten.{func.__name__}")
        if name in ("_to_copy", "copy_") and any(isinstance(a, torch.Tensor) and a.device.type == "meta" for a in args):
            raise AssertionError(f"copy to an unexpected device: aten.{func.__name__}")
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("num_particles, mode", [(0, "history"), (4, "history"), (4, "step")])
def test_one_update_has_no_host_sync(num_particles, mode):
    """One whole update (forward, losses, backward, clip, the fused Adam steps with their non-finite skip, Polyak,
    metrics) under a dispatch mode that fails on ``_local_scalar_dense`` (``.item()``, ``bool()`` of a tensor),
    ``nonzero`` / ``is_nonzero`` / ``masked_select`` (boolean-mask gathers) and boolean indexing. On a CUDA device
    these would be host syncs and break graph capture (docs/design.md §10). The probe is shown to fire on a gather."""
    update = _pure_update(num_particles, particle_mode=mode)
    batch = _batch(0)
    update.step(batch)  # the first step creates Adam's state
    with _NoSync():
        update.step(batch)
    with pytest.raises(AssertionError, match="host sync|boolean index"), _NoSync():
        torch.randn(3)[torch.tensor([True, False, True])]


def test_one_rllib_learner_update_has_no_host_sync():
    """The RLlib pixel learner's update as its update thread runs it (asynchronous loop: metrics stay on the device
    until the period's flush) under the same probe: forward, losses, the one backward, the non-finite flag and streak
    counter, the foreach clip, the fused Adam steps skipped on the device, Polyak and the metric pushes."""
    config = pixel_config(num_particles=4)
    learner = config.build_learner(spaces=SPACES)
    data = {k: torch.from_numpy(v) for k, v in fake_sequences().items()}
    batch = lambda: MultiAgentBatch({DEFAULT_MODULE_ID: SampleBatch(dict(data))}, env_steps=18)  # noqa: E731
    learner._async = True  # as the update thread: no per-update flush
    ts = {"num_env_steps_sampled_lifetime": 10_000}
    learner.update(batch=batch(), timesteps=ts, _no_metrics_reduce=True)  # Adam's state, the metric keys
    with _NoSync():
        learner.update(batch=batch(), timesteps=ts, _no_metrics_reduce=True)
    learner.flush_device_metrics()
    assert learner.metrics.peek((ALL_MODULES_KEY, "nonfinite_updates_skipped")) == 0


def test_masked_losses_ignore_nan_outside_the_mask_in_value_and_gradient():
    """``masked_mean`` and the masked ``critic_loss`` (smac_rllib/objectives/losses.py): the closed form on the valid
    entries, and a NaN or inf outside the mask reaches neither the value nor the gradient (``where``, not ``0 *``)."""
    from smac_rllib.objectives.losses import critic_loss, masked_mean

    valid_B = torch.tensor([[True, False, True], [True, True, False]])
    x = torch.tensor([[1.0, float("nan"), 3.0], [5.0, 7.0, float("inf")]])
    assert float(masked_mean(x, valid_B)) == (1 + 3 + 5 + 7) / 4
    assert float(masked_mean(x[:, :0], valid_B[:, :0])) == 0.0  # nothing valid: 0, not NaN
    q_T2_R_B = torch.tensor([[[1.0, 2.0, 3.0], [0.0, 0.0, float("nan")]]] * 2, requires_grad=True)  # (2, 2, 3)
    target_R_B = torch.tensor([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]])
    valid = torch.tensor([True, True, False])  # (B,) broadcast over R
    loss = critic_loss(q_T2_R_B, target_R_B, valid_B=valid)
    expected_per_critic = (1 + 4 + 1 + 1) / 4  # the four valid (r, b) entries
    assert float(loss) == pytest.approx(2 * expected_per_critic)
    loss.backward()
    assert torch.isfinite(q_T2_R_B.grad).all() and float(q_T2_R_B.grad[..., 2].abs().sum()) == 0.0


def _two_updates(learner, data, seed: int):
    results = None
    for step in range(2):
        torch.manual_seed(seed + step)
        results = learner.update(
            batch=MultiAgentBatch({DEFAULT_MODULE_ID: SampleBatch(dict(data))}, env_steps=18),
            timesteps={"num_env_steps_sampled_lifetime": 10_000},
        )
    return results


def _assert_same_weights_and_adam_state(a, b) -> None:
    """Two pixel learners hold the same weights, target critics and Adam state (rtol 1e-5)."""
    wa, wb = a.module[DEFAULT_MODULE_ID].state_dict(), b.module[DEFAULT_MODULE_ID].state_dict()
    for key, value in wa.items():
        torch.testing.assert_close(wb[key], value, rtol=1e-5, atol=1e-6, msg=key)
    for name in ("world_model", "critic", "actor", "alpha"):
        sa = a.get_optimizer(DEFAULT_MODULE_ID, name).state_dict()["state"]
        sb = b.get_optimizer(DEFAULT_MODULE_ID, name).state_dict()["state"]
        for i in sa:
            for k in sa[i]:
                torch.testing.assert_close(sb[i][k], sa[i][k], rtol=1e-5, atol=1e-7, msg=f"{name} {i} {k}")


def test_captured_learner_path_equals_the_eager_one_on_the_cpu():
    """The learner's captured path (the same ``PixelUpdate.step`` through ``GraphedUpdate``'s static buffers and metric
    vector; on the CPU run eagerly, on a CUDA learner replayed from the graph) against the eager call (learner_capture
    'off'): after 2 updates on the same draws, the same weights, target critics, Adam state and reduced metrics. Only
    the CUDA graph itself is left to the device (benchmarks/gpu_graph.py)."""
    config = pixel_config(num_particles=4)
    eager, captured = config.build_learner(spaces=SPACES), config.build_learner(spaces=SPACES)
    captured.set_state(eager.get_state())
    captured._capture_mode = "graph"  # what resolve_capture gives a CUDA learner; GraphedUpdate runs eagerly here
    data = {k: torch.from_numpy(v) for k, v in fake_sequences().items()}
    theirs, ours = _two_updates(eager, data, 7), _two_updates(captured, data, 7)
    assert captured._updates[DEFAULT_MODULE_ID].use_graph is False
    _assert_same_weights_and_adam_state(eager, captured)
    mine, yours = ours[DEFAULT_MODULE_ID], theirs[DEFAULT_MODULE_ID]
    keys = [k for k in yours if "/" in k]  # the loss diagnostics, world-model metrics and gradient norms
    assert {"critic/loss", "world_model/loss", "gradients/critic_global_norm", "estimator/particle_feat_std"} <= set(
        keys
    )
    assert "gradients/alpha_global_norm" not in keys  # the reference clips model, critic and actor, not alpha
    for key in keys:
        assert math.isclose(mine[key].peek(), yours[key].peek(), rel_tol=1e-5, abs_tol=1e-6), key
    assert (
        ours[ALL_MODULES_KEY]["nonfinite_updates_skipped"].peek()
        == theirs[ALL_MODULES_KEY]["nonfinite_updates_skipped"].peek()
        == 0
    )
    captured.set_state(eager.get_state())  # a restore: the update (and its graph) is built again before the next replay
    assert DEFAULT_MODULE_ID not in captured._updates


def test_learner_capture_switch_resolves_and_refuses_in_one_line():
    from smac_rllib.training.fast_update.captured_update import CaptureUnavailable, resolve_capture

    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    assert resolve_capture("auto", cpu) == "off" and resolve_capture("off", cuda) == "off"
    assert resolve_capture("graph", cuda) == "graph" and resolve_capture("auto", cuda, autocast="fp16") == "off"
    assert resolve_capture("auto", cuda) == "graph", "the measured default (benchmarks/results/gpu/session7/)"
    assert resolve_capture("auto", cuda, num_learners=2) == "off", "several DDP learners: eager"
    assert resolve_capture("auto", cuda, eager_only=True) == "off", "an lr schedule, targets averaged every N steps"
    with pytest.raises(
        CaptureUnavailable, match=r"^learner_capture='graph' needs a CUDA learner .*use 'auto' or 'off'"
    ):
        resolve_capture("graph", cpu)
    with pytest.raises(CaptureUnavailable, match="fp16"):
        resolve_capture("graph+compile", cuda, autocast="fp16")
    config = pixel_config(num_particles=4)
    assert config.config_errors() == [] and config.learner_capture == "auto"
    learner = config.build_learner(spaces=SPACES)
    assert learner._capture_mode == "off"  # auto on the CPU: eager
    errors = pixel_config(num_particles=4, learner_capture="graph").config_errors()
    assert len(errors) == 1 and "needs a CUDA learner" in errors[0] and "num_gpus_per_learner: 1" in errors[0]
    assert "is unknown" in pixel_config(learner_capture="cudagraph").config_errors()[0]
    from smac_rllib.algorithms import SMACConfig

    state = SMACConfig().environment("dmc/cartpole-swingup").training(learner_capture="graph")
    assert "applies to pixel runs" in state.config_errors()[0]


def test_auto_capture_stays_eager_where_a_graph_cannot_run(monkeypatch):
    """``auto`` resolves to the graph on a CUDA learner; a setting the graph cannot honour (targets averaged only every
    N steps) keeps that learner eager instead of refusing what the user never asked for."""
    from smac_rllib.training import step_learner

    resolve = step_learner.resolve_capture  # as a CUDA learner resolves it (nothing is allocated on the device)
    monkeypatch.setattr(
        step_learner, "resolve_capture", lambda mode, device, **k: resolve(mode, torch.device("cuda"), **k)
    )
    learner = pixel_config(num_particles=4, target_network_update_freq=2).build_learner(spaces=SPACES)
    assert learner._capture_mode == "off"


def test_gpu_graph_benchmark_runs_on_cpu_without_ray(tmp_path):
    """benchmarks/gpu_graph.py (the device plan's captured-update script) with `ray` unimportable, at tiny sizes on the
    CPU: the checks run their eager/static halves (equal, replays move the weights, a NaN reward is skipped, a restore
    re-captures) and the eager rows come out with the issue's columns; graph rows need CUDA and are left out here."""
    code = (
        "import sys, runpy; sys.modules['ray'] = None; sys.modules['gymnasium'] = None;"
        " sys.modules['dm_control'] = None\n"
        "sys.argv = ['gpu_graph.py', '--device', 'cpu', '--preset', 'tiny', '--sizes', '4x8', '--num-particles', '4',"
        " '--iters', '1', '--warmup', '1', '--precisions', 'fp32', '--check-size', '4x8',"
        f" '--out', {str(tmp_path)!r}]\n"
        "runpy.run_path('benchmarks/gpu_graph.py', run_name='__main__')\n"
        "assert not any(m == 'ray' or m.startswith('ray.') for m in sys.modules if sys.modules[m] is not None)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = list(csv.DictReader(open(tmp_path / "pixel_update.csv")))
    assert [(r["variant"], r["mode"]) for r in rows] == [("k0", "eager"), ("k4_history", "eager"), ("k4_step", "eager")]
    assert {
        "card",
        "preset",
        "batch",
        "variant",
        "mode",
        "precision",
        "s_per_update",
        "launches_per_update",
        "gpu_ms_per_update",
    } <= set(rows[0])
    assert all(r["error"] == "" and float(r["s_per_update"]) > 0 and int(r["launches_per_update"]) > 100 for r in rows)
    checks = (tmp_path / "checks.md").read_text()
    assert "param 0.00e+00" in checks and "nonfinite_update = 1, weights/moments/steps unchanged: True" in checks
    # the CPU runs both halves eagerly: replays equal eager steps exactly, and the CPU kernels are deterministic
    assert "- (g) each replay vs an eager step from the same state: 0.00e+00, 0.00e+00, 0.00e+00" in checks
    assert "- (h) eager vs eager from the same state, 3 updates: largest relative difference 0.00e+00" in checks
    assert "- (f) rounding alone" in checks and "param 0.00e+00" not in checks.split("- (f)")[1]


class PixelRLlibOracle(SACTorchLearner):
    """RLlib's own update path as the test oracle for pixel SMAC: the module's training forward, RLlib's
    ``compute_gradients`` (one backward of the sum), ``clip_gradients`` per optimizer (alpha excluded, as the
    reference), ``apply_gradients`` with its finite checks, ``DQNLearner``'s Polyak averaging through the state
    dicts."""

    def configure_optimizers_for_module(self, module_id, config=None) -> None:
        module = self._module[module_id].unwrapped()
        for name, params, lr in [
            ("world_model", list(module.world_model.parameters()), config.world_model_lr),
            ("critic", list(module.qf.parameters()), config.critic_lr),
            ("actor", list(module.actor.parameters()), config.actor_lr),
            ("alpha", [module.log_alpha], config.alpha_lr),
        ]:
            self.register_optimizer(
                module_id=module_id, optimizer_name=name, optimizer=adam(params), params=params, lr_or_lr_schedule=lr
            )

    def compute_loss_for_module(self, *, module_id, config, batch, fwd_out):
        out = losses.soft_actor_critic_losses(
            fwd_out,
            fwd_out[pixel_update.REWARD_NEXT],
            fwd_out[pixel_update.TERMINATED_NEXT],
            log_alpha=self._module[module_id].unwrapped().log_alpha,
            target_entropy=float(self.target_entropy[module_id]),
            discount_B=config.gamma,
            settings=losses.ObjectiveSettings.from_config(config),
        )
        return fwd_out[pixel_update.WM_LOSS] + out.critic + out.actor + out.alpha

    compute_gradients = TorchLearner.compute_gradients

    def postprocess_gradients_for_module(self, *, module_id, config=None, module_gradients_dict):
        from ray.rllib.utils.torch_utils import clip_gradients

        clipped = {}
        for name, optimizer in self.get_optimizers_for_module(module_id):
            grads = self.filter_param_dict_for_optimizer(param_dict=module_gradients_dict, optimizer=optimizer)
            if name != "alpha":
                clip_gradients(grads, grad_clip=config.pixel_grad_clip, grad_clip_by="global_norm")
            clipped.update(grads)
        return clipped


def test_the_one_pixel_update_equals_rllibs_own_update_path():
    """The pixel learner's update (``PixelUpdate.step`` run by the learner shell) against RLlib's own update path with
    the same losses (``PixelRLlibOracle``): after 2 updates on the same draws, the same weights, target critics and
    Adam state."""
    ours = pixel_config(num_particles=4).build_learner(spaces=SPACES)
    oracle_config = pixel_config(num_particles=4)
    oracle_config._learner_class = PixelRLlibOracle
    oracle = oracle_config.build_learner(spaces=SPACES)
    oracle.module[DEFAULT_MODULE_ID].load_state_dict(ours.module[DEFAULT_MODULE_ID].state_dict())
    data = {k: torch.from_numpy(v) for k, v in fake_sequences().items()}
    _two_updates(ours, data, 7), _two_updates(oracle, data, 7)
    _assert_same_weights_and_adam_state(ours, oracle)
