"""The pixel update as pure torch (smac_rllib/pixel_update.py): equal to the RLlib learner's update, importable
and benchmarkable without Ray (the GPU device has no ray, dm_control or gymnasium)."""

from __future__ import annotations

import csv
import math
import subprocess
import sys
from pathlib import Path

import torch
from ray.rllib.core import DEFAULT_MODULE_ID
from ray.rllib.policy.sample_batch import MultiAgentBatch, SampleBatch

from smac_rllib.pixel_update import PixelUpdate
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
        results = learner.update(batch=MultiAgentBatch({DEFAULT_MODULE_ID: SampleBatch(data)}, env_steps=18),
                                 timesteps={"num_env_steps_sampled_lifetime": 10_000})
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
        "import sys, runpy; sys.modules['ray'] = None; sys.modules['gymnasium'] = None; sys.modules['dm_control'] = None\n"
        f"sys.argv = ['gpu_learner.py', '--device', 'cpu', '--sizes', '4x8', '--preset', 'tiny', '--num-particles', '4',"
        f" '--iters', '1', '--warmup', '1', '--precisions', 'fp32', '--compile-modes', 'eager', '--out', {str(tmp_path)!r}]\n"
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
        [sys.executable, "benchmarks/gpu_rllib_learner.py", "--device", "cpu", "--preset", "tiny", "--sizes", "4x8",
         "--num-particles", "4", "--iters", "1", "--warmup", "1", "--profile-iters", "1", "--render-procs", "0,1p,1", "--in-ray-task",
         "--out", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
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
