"""Tier 1: the estimators against closed forms (paper Eq. 6, 7, 9; Prop. 1-2). No Ray, seconds."""

from __future__ import annotations

import math

import pytest
import torch

from smac_rllib.core import estimators as est
from tests.lvm import LinearGaussianLVM

N = 200_000  # samples per Monte Carlo mean: SE of each mean is ~0.003 nats here


@pytest.fixture(scope="module")
def lvm() -> LinearGaussianLVM:
    # Strong latent influence (|W| >> sigma) so the nested bound is far below H at small K.
    return LinearGaussianLVM(torch.tensor([[2.0, -1.0], [0.5, 1.5]], dtype=torch.float64), sigma=0.3)


def _mean_se(x: torch.Tensor) -> tuple[float, float]:
    return x.mean().item(), x.std().item() / math.sqrt(x.numel())


def _loop_mlmc(log_w: torch.Tensor) -> torch.Tensor:
    """Plain per-level loop of Eq. (7) read literally, written independently of the vectorized code."""
    k = log_w.shape[0] - 1
    num_levels = int(math.log2(k)) + 1
    total = torch.zeros_like(log_w[0])
    for level in range(num_levels):
        n = 2**level
        h_full = est.nested_entropy(log_w[: n + 1])
        if level == 0:
            total = total + h_full
            continue
        half = n // 2
        h_a = est.nested_entropy(log_w[: half + 1])
        h_b = est.nested_entropy(torch.cat([log_w[:1], log_w[half + 1 : n + 1]]))
        total = total + h_full - 0.5 * (h_a + h_b)
    return total


def _loop_mlmc_reference(log_w: torch.Tensor) -> torch.Tensor:
    """The reference code's MLMC (visual_control/network.py:344-389 + smac.py:226-238) as a plain loop.

    mlcum[l] = log((pi(a|s0) + sum_{k<=2^l} pi(a|s_k)) / (1 + 2^l)), then mlcum[0] is overwritten by
    mean_k log(½(pi(a|s0) + pi(a|s_k))); half[l] uses particles 2^{l-1}+1..2^l; the log-marginal is
    mlcum[0] + sum_l (mlcum[l] - ½(mlcum[l-1] + half[l])) and the entropy its negative.
    """
    k = log_w.shape[0] - 1
    num_levels = int(math.log2(k)) + 1
    w = log_w.exp()
    mlcum = [torch.log((w[0] + w[1 : 2**level + 1].sum(0)) / (1 + 2**level)) for level in range(num_levels)]
    mlcum[0] = torch.stack([torch.log(0.5 * (w[0] + w[j])) for j in range(1, k + 1)]).mean(0)  # the "optional" line
    log_p = mlcum[0].clone()
    for level in range(1, num_levels):
        lo, hi = 2 ** (level - 1), 2**level
        half = torch.log((w[0] + w[lo + 1 : hi + 1].sum(0)) / (1 + hi - lo))
        log_p = log_p + mlcum[level] - 0.5 * (mlcum[level - 1] + half)
    return -log_p


def test_nested_is_a_lower_bound_increasing_in_k_and_converging(lvm):
    gen = torch.Generator().manual_seed(0)
    h_true = lvm.true_entropy().item()
    means = []
    for k in [0, 1, 4, 16, 64, 256]:
        m, se = _mean_se(est.nested_entropy(lvm.log_w(k, N if k < 64 else N // 8, gen)))
        assert m < h_true + 3 * se, (k, m, h_true)
        means.append(m)
    assert all(b > a for a, b in zip(means, means[1:], strict=False)), means  # Prop. 2: increasing in K
    assert h_true - means[0] > 1.0  # K = 0 is the conditional entropy, far below
    assert h_true - means[-1] < 0.1 * (h_true - means[0])  # approaches H as K grows (gap ~5% at K=256)
    assert h_true - means[-1] > 0  # ... from below


def test_naive_and_iwae_are_upper_bounds(lvm):
    gen = torch.Generator().manual_seed(1)
    h_true = lvm.true_entropy().item()
    for k in [1, 8, 32]:
        log_w = lvm.log_w(k, N, gen)
        m_naive, se_naive = _mean_se(est.naive_entropy(log_w))
        m_iwae, se_iwae = _mean_se(est.iwae_entropy(log_w))
        assert m_naive > h_true + 5 * se_naive, (k, m_naive, h_true)
        assert m_iwae > h_true + 5 * se_iwae, (k, m_iwae, h_true)
        assert m_naive >= m_iwae - 1e-9  # Jensen: IWAE tightens the naive bound


@pytest.mark.parametrize("average_level0", [True, False])
def test_mlmc_has_the_nested_expectation_at_the_same_k(lvm, average_level0):
    gen = torch.Generator().manual_seed(2)
    for k in [2, 8, 32]:
        log_w = lvm.log_w(k, N, gen)
        diff = est.mlmc_entropy(log_w, average_level0=average_level0) - est.nested_entropy(log_w)
        m, se = _mean_se(diff)
        assert abs(m) < 4 * se + 1e-6, (k, m, se)
        assert diff.abs().max() > 1e-3  # ... but they differ sample by sample


def test_averaged_level0_is_below_the_true_entropy_and_less_noisy_than_literal(lvm):
    gen = torch.Generator().manual_seed(5)
    h_true = lvm.true_entropy().item()
    log_w = lvm.log_w(8, N, gen)
    averaged, literal = est.mlmc_entropy(log_w), est.mlmc_entropy(log_w, average_level0=False)
    m, se = _mean_se(averaged)
    assert m < h_true - 10 * se  # a lower bound in expectation, as the nested one (Prop. 2)
    assert averaged.std() < literal.std()  # the average over K pairs removes part of level 0's noise


def test_mlmc_is_nested_plus_antithetic_terms_sample_by_sample(lvm):
    log_w = lvm.log_w(16, 64, torch.Generator().manual_seed(3))
    expected = est.nested_entropy(log_w)
    for level in range(1, 5):
        half = 2 ** (level - 1)
        h_a = est.nested_entropy(log_w[: half + 1])
        h_b = est.nested_entropy(torch.cat([log_w[:1], log_w[half + 1 : 2 * half + 1]]))
        expected = expected + 0.5 * (h_a - h_b)
    torch.testing.assert_close(est.mlmc_entropy(log_w, average_level0=False), expected)


@pytest.mark.parametrize("k", [1, 2, 4, 8, 32, 128])
def test_vectorized_mlmc_equals_per_level_loop(k):
    log_w = 3 * torch.randn(k + 1, 5, 7, dtype=torch.float64, generator=torch.Generator().manual_seed(k))
    torch.testing.assert_close(est.mlmc_entropy(log_w, average_level0=False), _loop_mlmc(log_w))
    terms = est.mlmc_level_terms(log_w, average_level0=False)
    assert terms.shape == (int(math.log2(k)) + 1, 5, 7)
    torch.testing.assert_close(terms[0], est.nested_entropy(log_w[:2]))  # ΔH_1 = H_1


@pytest.mark.parametrize("k", [1, 2, 4, 8, 32, 128])
def test_averaged_level0_mlmc_equals_the_reference_formula(k):
    log_w = 3 * torch.randn(k + 1, 5, 7, dtype=torch.float64, generator=torch.Generator().manual_seed(100 + k))
    torch.testing.assert_close(est.mlmc_entropy(log_w), _loop_mlmc_reference(log_w), rtol=0, atol=1e-6)
    terms = est.mlmc_level_terms(log_w)
    pairs_K = torch.stack([est.nested_entropy(log_w[[0, j]]) for j in range(1, k + 1)])
    torch.testing.assert_close(terms[0], pairs_K.mean(0))  # level 0 = H_1 averaged over the K pairs (s0, s_k)
    if k >= 2:  # ... and reused as H^(a)_1 of the level-1 residual
        h_b = est.nested_entropy(log_w[[0, 2]])
        torch.testing.assert_close(terms[1], est.nested_entropy(log_w[:3]) - 0.5 * (pairs_K.mean(0) + h_b))
    torch.testing.assert_close(est.entropy_estimate(log_w, "mlmc", mlmc_average_level0=False), _loop_mlmc(log_w))


def test_k0_and_k1_edge_cases():
    log_w = torch.randn(1, 6)
    for fn in (est.nested_entropy, est.mlmc_entropy, est.conditional_entropy):
        torch.testing.assert_close(fn(log_w), -log_w[0])
    log_w2 = torch.randn(2, 6)
    by_hand = -torch.log(0.5 * (log_w2[0].exp() + log_w2[1].exp()))
    torch.testing.assert_close(est.nested_entropy(log_w2), by_hand)
    torch.testing.assert_close(est.mlmc_entropy(log_w2), by_hand)  # L = 0: MLMC is H_1
    torch.testing.assert_close(est.naive_entropy(log_w2), -log_w2[1])
    torch.testing.assert_close(est.iwae_entropy(log_w2), -log_w2[1])
    with pytest.raises(ValueError, match="at least one fresh particle"):
        est.iwae_entropy(log_w)


@pytest.mark.parametrize("k, hint", [(6, "try 4 or 8"), (3, "try 2 or 4"), (12, "try 8 or 16"), (-1, "try 0 or 1")])
def test_mlmc_rejects_k_not_a_power_of_two(k, hint):
    with pytest.raises(ValueError, match=f"num_particles={k} must be 0 or a power of two.*{hint}"):
        est.mlmc_levels(k)
    if k > 0:
        with pytest.raises(ValueError, match=hint):
            est.mlmc_entropy(torch.zeros(k + 1, 3))


def test_stable_for_log_weights_of_magnitude_1e3():
    base = torch.tensor([-1000.0, -1003.0, -999.0, -1001.0, -1000.5], dtype=torch.float32)
    log_w = base[:, None].repeat(1, 2)
    log_w[:, 1] += 2000.0  # magnitude ~ +1e3 too
    ref = -(torch.logsumexp(log_w.double(), 0) - math.log(5))
    for fn in (est.nested_entropy, est.mlmc_entropy, est.naive_entropy, est.iwae_entropy):
        out = fn(log_w)
        assert torch.isfinite(out).all(), fn.__name__
    torch.testing.assert_close(est.nested_entropy(log_w).double(), ref, rtol=1e-6, atol=1e-3)
    log_w.requires_grad_(True)
    est.mlmc_entropy(log_w).sum().backward()
    assert torch.isfinite(log_w.grad).all()


def test_gradients_reach_the_intended_inputs(lvm):
    log_w = torch.randn(9, 4, dtype=torch.float64, requires_grad=True)
    for fn, rows_with_grad in [
        (est.nested_entropy, range(9)),
        (est.mlmc_entropy, range(9)),
        (est.naive_entropy, range(1, 9)),
        (est.iwae_entropy, range(1, 9)),
        (est.conditional_entropy, [0]),
    ]:
        (grad,) = torch.autograd.grad(fn(log_w).sum(), log_w)
        has_grad = (grad.abs().sum(dim=1) > 0).tolist()
        assert has_grad == [i in rows_with_grad for i in range(9)], fn.__name__
    # gradcheck of the vectorized MLMC (masked rows must not leak gradient)
    assert torch.autograd.gradcheck(est.mlmc_entropy, (torch.randn(9, 3, dtype=torch.float64, requires_grad=True),))
    # end to end: the policy parameters W get a gradient through the reparameterized log-weights
    weight = lvm.weight_M_D.clone().requires_grad_(True)
    model = LinearGaussianLVM(weight, lvm.sigma)
    est.mlmc_entropy(model.log_w(8, 256, torch.Generator().manual_seed(0))).mean().backward()
    assert weight.grad is not None and torch.isfinite(weight.grad).all() and weight.grad.abs().sum() > 0


def test_entropy_gradient_points_towards_more_entropy(lvm):
    # d H_true / d W is positive along W (larger weights spread the marginal): the MLMC gradient agrees.
    weight = lvm.weight_M_D.clone().requires_grad_(True)
    model = LinearGaussianLVM(weight, lvm.sigma)
    est.mlmc_entropy(model.log_w(32, 50_000, torch.Generator().manual_seed(4))).mean().backward()
    w = lvm.weight_M_D.clone().requires_grad_(True)
    (g_true,) = torch.autograd.grad(LinearGaussianLVM(w, lvm.sigma).true_entropy(), w)
    cos = torch.nn.functional.cosine_similarity(weight.grad.flatten(), g_true.flatten(), dim=0)
    assert cos > 0.9, (weight.grad, g_true)


def test_marginal_q_closed_form():
    q_K_B = torch.tensor([[1.0, -2.0], [3.0, -2.0]])
    expected = torch.log(0.5 * (torch.exp(q_K_B[0]) + torch.exp(q_K_B[1])))
    torch.testing.assert_close(est.marginal_q(q_K_B), expected)
    torch.testing.assert_close(est.marginal_q(q_K_B[:1]), q_K_B[0])
    # lies between mean and max (log-mean-exp), equal when all particles agree
    q = torch.randn(16, 100)
    m = est.marginal_q(q)
    assert (m >= q.mean(0) - 1e-6).all() and (m <= q.max(0).values + 1e-6).all()
    torch.testing.assert_close(est.marginal_q(torch.full((8, 3), 1e3)), torch.full((3,), 1e3))


def test_dispatch_names_the_valid_estimators():
    log_w = torch.randn(5, 2)
    torch.testing.assert_close(est.entropy_estimate(log_w, "mlmc"), est.mlmc_entropy(log_w))
    with pytest.raises(
        ValueError, match=r"estimator='foo' is unknown; use one of \['iwae', 'mlmc', 'naive', 'nested'\]"
    ):
        est.entropy_estimate(log_w, "foo")
