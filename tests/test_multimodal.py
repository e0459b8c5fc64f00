"""The multi-modal experiment (App. B.1, Fig. 7): pure pieces in milliseconds, then one small end-to-end run."""

from __future__ import annotations

import json
import math

import pytest
import torch

from smac_rllib.experiments import multimodal as mm
from smac_rllib.experiments import multimodal_policies as policies
from smac_rllib.experiments import multimodal_task as task

torch.set_num_threads(1)


# ----------------------------------------------------------------------------------------------- pure pieces
def test_tanh_gaussian_log_prob_matches_torch_transformed_distribution():
    torch.manual_seed(0)
    mean_B_A, log_std_B_A = torch.randn(64, 2), torch.randn(64, 2).clamp(-2, 1)
    u_B_A = mean_B_A + log_std_B_A.exp() * torch.randn(64, 2)
    ref = torch.distributions.TransformedDistribution(
        torch.distributions.Normal(mean_B_A.double(), log_std_B_A.exp().double()),
        [torch.distributions.TanhTransform()],
    )
    expected_B = ref.log_prob(torch.tanh(u_B_A.double())).sum(-1)
    got_B = policies.tanh_gaussian_log_prob(u_B_A.double(), mean_B_A.double(), log_std_B_A.double())
    torch.testing.assert_close(got_B, expected_B, rtol=1e-6, atol=1e-6)


def test_tanh_gaussian_density_integrates_to_one_on_the_square():
    grid_G_A, cell_area = task.grid_points(400)
    log_p_G = policies.tanh_gaussian_log_prob(
        policies.atanh_clamped(grid_G_A.double()),
        torch.tensor([0.3, -0.2]).double(),
        torch.tensor([-0.5, -1.0]).double(),
    )
    assert abs(log_p_G.exp().sum().item() * cell_area - 1) < 1e-3


def test_log_tanh_jacobian_is_exact_and_finite_at_saturation():
    u = torch.linspace(-4, 4, 101, dtype=torch.float64).unsqueeze(-1)
    torch.testing.assert_close(policies.log_tanh_jacobian(u), torch.log(1 - torch.tanh(u).pow(2)).squeeze(-1))
    assert torch.isfinite(policies.log_tanh_jacobian(torch.tensor([[50.0, -50.0]]))).all()


def test_reward_is_maximal_at_the_four_centres():
    centres_M_A = task.mode_centres()
    r_M = task.reward(centres_M_A, centres_M_A, width=0.2)
    torch.testing.assert_close(r_M, torch.ones(4), atol=1e-4, rtol=0)
    assert task.reward(torch.zeros(1, 2), centres_M_A, width=0.2).item() < 0.01


def test_mode_fractions_and_count_on_hand_made_samples():
    c = task.mode_centres()
    samples_N_A = torch.cat(
        [
            c[0].expand(50, 2),  # exactly on mode 0
            (c[1] + torch.tensor([0.1, -0.1])).expand(30, 2),  # 0.14 from mode 1: inside the 0.2 radius
            (c[2] + torch.tensor([0.3, 0.0])).expand(15, 2),  # 0.3 from mode 2: outside
            c[3].expand(5, 2),  # on mode 3, but only 5%
        ]
    )
    fractions_M = task.mode_fractions(samples_N_A, c, radius=0.2)
    torch.testing.assert_close(fractions_M, torch.tensor([0.5, 0.3, 0.0, 0.05]))
    assert task.count_modes(fractions_M, min_fraction=0.1) == 2


def test_kl_on_grid_is_zero_for_the_target_and_log4_for_one_quadrant_of_it():
    cfg = task.MultimodalConfig()
    grid_G_A, cell_area = task.grid_points(100)
    log_t_G = task.reward(grid_G_A, task.mode_centres(), cfg.bump_width) / cfg.alpha
    assert abs(task.kl_on_grid(log_t_G, log_t_G, cell_area)) < 1e-6
    one_quadrant_G = torch.where((grid_G_A > 0).all(-1), log_t_G, torch.full_like(log_t_G, -1e4))
    assert task.kl_on_grid(one_quadrant_G, log_t_G, cell_area) == pytest.approx(math.log(4), abs=1e-3)


# ------------------------------------------------------------------------------------------------ policies
def test_lvp_log_w_rows_and_reparameterized_gradients():
    cfg = task.MultimodalConfig(num_particles=8)
    torch.manual_seed(0)
    policy = policies.LatentVariablePolicy(cfg)
    u_B_A, s0_B_D = policy.sample(5)
    log_w_K1_B = policy.log_w(u_B_A, s0_B_D, cfg.num_particles)
    assert log_w_K1_B.shape == (9, 5)
    torch.testing.assert_close(log_w_K1_B[0], policies.tanh_gaussian_log_prob(u_B_A, *policy.head(s0_B_D)))
    mm.lvp_loss(policy, cfg)[0].backward()
    assert policy.latent_mu_D.grad.abs().sum() > 0 and policy.latent_log_std_D.grad.abs().sum() > 0


def test_lvp_initial_marginal_is_broad_and_isotropic():
    cfg = task.MultimodalConfig(init_mean_spread=0.5)
    torch.manual_seed(3)
    policy = policies.LatentVariablePolicy(cfg)
    with torch.no_grad():
        mean_S_A, log_std_S_A = policy.head(policy.sample_latent(20_000))
    torch.testing.assert_close(torch.cov(mean_S_A.T), 0.25 * torch.eye(2), atol=0.03, rtol=0)
    torch.testing.assert_close(log_std_S_A.exp(), torch.full_like(log_std_S_A, cfg.init_noise_std), atol=0.02, rtol=0)


def test_bad_arguments_are_one_line_exit_2(capsys):
    for argv, needle in [
        (["--out", "x", "--steps", "0"], "--steps"),
        (["--out", "x", "--particles", "6"], "power of two"),
        (["--steps", "10"], "--out"),
        (["--out", "x", "--estimator", "exact"], "--estimator"),
    ]:
        with pytest.raises(SystemExit) as exit_info:
            mm.parse_args(argv)
        assert exit_info.value.code == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and needle in err, err


def test_nested_estimator_takes_any_particle_count():
    """Only Eq. 7 needs K a power of two; ``--estimator nested`` (Eq. 6) runs the same task with K = 6."""
    _, cfg = mm.parse_args(["--out", "x", "--estimator", "nested", "--particles", "6"])
    assert (cfg.estimator, cfg.num_particles) == ("nested", 6)
    policy = policies.LatentVariablePolicy(cfg)
    loss, metrics = mm.lvp_loss(policy, cfg)
    assert loss.requires_grad and math.isfinite(metrics["entropy"])


# ----------------------------------------------------------------------------------------------- end to end
def test_experiment_lvp_covers_all_four_modes_gaussian_collapses(tmp_path):
    result = mm.main(["--out", str(tmp_path), "--seed", "0", "--steps", "400"])
    assert (tmp_path / "multimodal.png").stat().st_size > 10_000
    on_disk = json.loads((tmp_path / "multimodal.json").read_text())
    assert on_disk["lvp"]["modes_covered"] == result["lvp"]["modes_covered"]
    assert {"lvp", "gaussian", "seed", "steps", "K", "alpha", "wall_time_s"} <= on_disk.keys()
    for name in ("lvp", "gaussian"):
        assert {"modes_covered", "mode_centres", "mode_fractions", "kl_to_target"} <= on_disk[name].keys()
        assert len(on_disk[name]["mode_centres"]) == len(on_disk[name]["mode_fractions"]) == 4
    assert on_disk["steps"] == 400 and on_disk["K"] == 16
    lvp, gauss = on_disk["lvp"], on_disk["gaussian"]
    assert lvp["modes_covered"] == 4, lvp
    assert gauss["modes_covered"] in (1, 2), gauss
    assert lvp["kl_to_target"] < 0.5 < gauss["kl_to_target"]


def test_benchmark_driver_writes_rows_and_reads_finished_runs_back(tmp_path):
    """``benchmarks/multimodal.py``: one CSV row per (K, seed) with the run's own numbers; a second call reads the
    finished runs back instead of re-running them (the same wall time recorded), and the summary counts the seeds."""
    import csv
    import json
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import multimodal as bench

    args = ["--particles", "2", "--seeds", "0", "1", "--steps", "20", "--out", str(tmp_path)]
    bench.main(args)
    rows = list(csv.DictReader(open(tmp_path / "multimodal.csv")))
    assert [(r["K"], r["seed"], r["steps"]) for r in rows] == [("2", "0", "20"), ("2", "1", "20")]
    run0 = json.loads((tmp_path / "runs" / "K2_seed0" / "multimodal.json").read_text())
    assert (
        float(rows[0]["lvp_kl"]) == run0["lvp"]["kl_to_target"]
        and int(rows[0]["lvp_modes"]) == run0["lvp"]["modes_covered"]
    )
    bench.main(args)
    assert list(csv.DictReader(open(tmp_path / "multimodal.csv"))) == rows  # read back: nothing re-ran
    table = (tmp_path / "multimodal.md").read_text()
    assert "| mlmc | 2 | 2 |" in table
