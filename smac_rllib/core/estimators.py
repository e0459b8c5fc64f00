"""Entropy and marginal-value estimators of SMAC (Zhang et al., ICLR 2023). Pure torch.

Legend for shape suffixes: K = number of fresh particles s_1..s_K, K1 = K + 1 (s_0 included),
L = MLMC levels (K = 2^L), `*batch` = any trailing batch shape.

Every entropy estimator takes one tensor ``log_w`` of shape ``(K+1, *batch)``:

* ``log_w[0]``  = log pi(a | s_0) for the latent s_0 ~ q(s|h) that *produced* the action a ~ pi(.|s_0);
* ``log_w[k]``  = log pi(a | s_k), k = 1..K, for independent fresh s_k ~ q(s|h).

and returns a tensor of shape ``batch``. All are differentiable and stable for log-weights of
magnitude 1e3 (every reduction is a logsumexp).

Bounds (paper Prop. 1-2): for the marginal entropy H = H[pi(.|h)] of pi(a|h) = ∫ pi(a|s) q(s|h) ds,

    E[nested_entropy]  <=  H          (increasing in K, -> H as K -> inf)
    E[mlmc_entropy]     =  E[nested_entropy] at the same K (antithetic terms have mean zero)
    E[naive_entropy]   >=  H,   E[iwae_entropy] >= H   (upper bounds: ablation only, paper Fig. 3)
"""

from __future__ import annotations

import math

import torch

__all__ = [
    "nested_entropy",
    "mlmc_levels",
    "mlmc_level_terms",
    "mlmc_entropy",
    "naive_entropy",
    "iwae_entropy",
    "conditional_entropy",
    "marginal_q",
    "entropy_estimate",
    "ESTIMATORS",
]


def _num_particles(log_w: torch.Tensor) -> int:
    if log_w.dim() < 1 or log_w.shape[0] < 1:
        raise ValueError(
            f"log_w must have shape (K+1, *batch) with K+1 >= 1 (row 0 = log pi(a|s0)); got {tuple(log_w.shape)}"
        )
    return log_w.shape[0] - 1


def _log_mean_exp(x: torch.Tensor, dim: int = 0) -> torch.Tensor:
    return torch.logsumexp(x, dim=dim) - math.log(x.shape[dim])


def nested_entropy(log_w: torch.Tensor) -> torch.Tensor:
    """Nested lower bound, Eq. (6): ``H_K = -log( 1/(K+1) * sum_{k=0..K} pi(a|s_k) )``.

    log_w: (K+1, *batch) -> (*batch). With K = 0 this is ``-log pi(a|s0)`` (a conditional-entropy sample).
    """
    _num_particles(log_w)
    return -_log_mean_exp(log_w, dim=0)  # Eq. (6)


def mlmc_levels(num_particles: int) -> int:
    """L with K = 2^L; raises ValueError naming the nearest valid K otherwise (K = 0 -> L = -1, no levels)."""
    k = int(num_particles)
    if k == 0:
        return -1
    if k < 0 or (k & (k - 1)) != 0:
        lower = 1 << max(k.bit_length() - 1, 0) if k > 0 else 0
        upper = 1 << k.bit_length() if k > 0 else 1
        raise ValueError(f"num_particles={k} must be 0 or a power of two for estimator='mlmc' (try {lower} or {upper})")
    return k.bit_length() - 1


def _mlmc_masks(num_particles: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """Boolean masks over rows 0..K of log_w, both of shape (L+1, K+1).

    prefix_L1_K1[l]: s0 and particles 1..2^l            (the set of H_{2^l}, and of H^(a)_{2^l})
    bhalf_L1_K1[l]:  s0 and particles 2^{l-1}+1..2^l    (the set of H^(b)_{2^{l-1}}; row 0 is unused)
    """
    num_levels = mlmc_levels(num_particles) + 1
    idx_K1 = torch.arange(num_particles + 1, device=device)
    size_L1 = 2 ** torch.arange(num_levels, device=device)  # 2^l
    prefix_L1_K1 = idx_K1[None, :] <= size_L1[:, None]
    half_L1 = size_L1 // 2
    bhalf_L1_K1 = (idx_K1[None, :] > half_L1[:, None]) & prefix_L1_K1
    bhalf_L1_K1[:, 0] = True  # s0 is in every term
    return prefix_L1_K1, bhalf_L1_K1


def _masked_nested_entropy(log_w: torch.Tensor, mask_R_K1: torch.Tensor) -> torch.Tensor:
    """Nested entropy of each row's particle subset. log_w (K+1, *batch), mask (R, K+1) -> (R, *batch)."""
    extra = (1,) * (log_w.dim() - 1)
    mask = mask_R_K1.reshape(*mask_R_K1.shape, *extra)
    neg_inf = torch.finfo(log_w.dtype).min  # finite: keeps gradients of masked-out rows exactly 0, never nan
    log_w_R_K1 = torch.where(mask, log_w.unsqueeze(0), torch.full_like(log_w.unsqueeze(0), neg_inf))
    count_R = mask_R_K1.sum(dim=1).to(log_w.dtype).reshape(-1, *extra)
    return -(torch.logsumexp(log_w_R_K1, dim=1) - torch.log(count_R))  # Eq. (6) per subset


def mlmc_level_terms(log_w: torch.Tensor, *, average_level0: bool = True) -> torch.Tensor:
    """The antithetic MLMC level terms of Eq. (7), all levels in one vectorized pass.

    log_w: (K+1, *batch) with K = 2^L  ->  delta_L1: (L+1, *batch) where
        delta[0] = ΔH_1 = H_1
        delta[l] = ΔH_{2^l} = H_{2^l} - ½ (H^(a)_{2^{l-1}} + H^(b)_{2^{l-1}}),   l = 1..L
    (a) = s0 + the first half of the level's particles, (b) = s0 + the second half. Their sum is
    ``mlmc_entropy``; the mean of delta[l] over a batch is the "level residual" we log.

    ``average_level0=True`` (the reference code, ``visual_control/network.py:375``, "optional" line of
    ``dreamer_cal_mlmc``): H_1 is replaced by its average over all K particles,
    ``mean_k -log(½ (pi(a|s0) + pi(a|s_k)))``, in delta[0] AND as H^(a)_1 of the level-1 residual
    (``network.py:375`` overwrites ``mlcum_iwae[0]`` before ``smac.py:234`` forms the residuals). Same
    expectation (every H_1^(k) has the law of H_1); ``False`` is Eq. (7) read literally (particle 1 only).
    K = 0 returns a single row ``-log_w[0]``.
    """
    num_particles = _num_particles(log_w)
    if num_particles == 0:
        mlmc_levels(0)
        return -log_w[:1]
    prefix_L1_K1, bhalf_L1_K1 = _mlmc_masks(num_particles, log_w.device)
    h_prefix_L1 = _masked_nested_entropy(log_w, prefix_L1_K1)  # H_{2^l}, l = 0..L
    h_bhalf_L1 = _masked_nested_entropy(log_w, bhalf_L1_K1)  # H^(b)_{2^{l-1}}, l = 1..L (row 0 unused)
    if average_level0:  # reference code: H_1 averaged over the K pairs (s0, s_k)
        h1_K = -(torch.logaddexp(log_w[:1], log_w[1:]) - math.log(2.0))  # -log(½(pi(a|s0) + pi(a|s_k)))
        h_prefix_L1 = torch.cat([h1_K.mean(dim=0, keepdim=True), h_prefix_L1[1:]], dim=0)
    h_ahalf_L = h_prefix_L1[:-1]  # H^(a)_{2^{l-1}} = H_{2^{l-1}}: same particle set
    delta_rest_L = h_prefix_L1[1:] - 0.5 * (h_ahalf_L + h_bhalf_L1[1:])  # Eq. (7), l >= 1
    return torch.cat([h_prefix_L1[:1], delta_rest_L], dim=0)  # ΔH_1 = H_1


def mlmc_entropy(log_w: torch.Tensor, *, average_level0: bool = True) -> torch.Tensor:
    """Antithetic multilevel Monte Carlo estimate, Eq. (7): ``sum_{l=0..L} ΔH_{2^l}``, K = 2^L.

    Same expectation as ``nested_entropy`` at the same K (so also a lower bound); sample by sample it is
    ``H_K + sum_l ½ (H^(a)_{2^{l-1}} - H^(b)_{2^{l-1}})``. ``average_level0`` (default, the reference code's
    variant): see ``mlmc_level_terms``. K = 0 gives ``-log_w[0]``; any other K that is not a power of two
    raises ValueError.
    """
    return mlmc_level_terms(log_w, average_level0=average_level0).sum(dim=0)  # Eq. (7)


def _require_fresh(log_w: torch.Tensor, name: str) -> None:
    if _num_particles(log_w) < 1:
        raise ValueError(f"{name} needs at least one fresh particle (num_particles >= 1); got K=0")


def naive_entropy(log_w: torch.Tensor) -> torch.Tensor:
    """ELBO-style estimate with q~ = q: ``-mean_{k>=1} log pi(a|s_k)``. An UPPER bound; ablation only.

    The particles are independent of a (row 0 is ignored), which is what blows up in training (paper Fig. 3).
    """
    _require_fresh(log_w, "naive_entropy")
    return -log_w[1:].mean(dim=0)


def iwae_entropy(log_w: torch.Tensor) -> torch.Tensor:
    """``-log mean_{k>=1} pi(a|s_k)`` without s0: also an UPPER bound (ablation only)."""
    _require_fresh(log_w, "iwae_entropy")
    return -_log_mean_exp(log_w[1:], dim=0)


def conditional_entropy(log_w: torch.Tensor) -> torch.Tensor:
    """Single-sample estimate of the conditional entropy E_q[H(pi(.|s))] (App. B.3 regularizer).

    ``-log pi(a|s0)`` with a ~ pi(.|s0), s0 ~ q: unbiased for E_{s~q}[H(pi(.|s))].
    """
    _num_particles(log_w)
    return -log_w[0]


def marginal_q(q: torch.Tensor) -> torch.Tensor:
    """Marginal Q over belief particles, Eq. (9): ``Q_K(h, a) = log( 1/K sum_k exp Q(s_k, a) )``.

    q: (K, *batch) -> (*batch). K = 1 returns q[0].
    """
    if q.dim() < 1 or q.shape[0] < 1:
        raise ValueError(f"q must have shape (K, *batch) with K >= 1; got {tuple(q.shape)}")
    return _log_mean_exp(q, dim=0)  # Eq. (9)


ESTIMATORS = {
    "mlmc": mlmc_entropy,
    "nested": nested_entropy,
    "naive": naive_entropy,
    "iwae": iwae_entropy,
}


def entropy_estimate(log_w: torch.Tensor, estimator: str, *, mlmc_average_level0: bool = True) -> torch.Tensor:
    """Dispatch by name (the one place a string chooses the estimator). log_w (K+1, *batch) -> (*batch)."""
    try:
        fn = ESTIMATORS[estimator]
    except KeyError:
        raise ValueError(f"estimator={estimator!r} is unknown; use one of {sorted(ESTIMATORS)}") from None
    if fn is mlmc_entropy:
        return fn(log_w, average_level0=mlmc_average_level0)
    return fn(log_w)
