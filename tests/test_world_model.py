"""Tiers 1-2: ELBO math (Eq. 13) against closed forms, and the RSSM / world model on fake batches. No Ray."""

from __future__ import annotations

import math

import pytest
import torch

from smac_rllib.core import elbo
from smac_rllib.models.conv import ConvDecoder, ConvEncoder, preprocess_image
from smac_rllib.models.rssm import RSSM
from smac_rllib.models.world_model import WorldModel, WorldModelConfig

torch.set_num_threads(1)
B, T, A = 3, 6, 2


@pytest.fixture
def tiny() -> WorldModel:
    torch.manual_seed(0)
    return WorldModel(A, WorldModelConfig.preset("tiny"))


def _inputs(rssm: RSSM, embed_dim: int, b: int = B, t: int = T):
    return torch.randn(b, t, embed_dim), torch.randn(b, t, A), torch.zeros(b, t, dtype=torch.bool)


def _zero_noise(rssm: RSSM, b: int = B, t: int = T) -> torch.Tensor:
    return torch.zeros(b, t, rssm.stoch_size)  # samples = means: states become functions of the inputs


def _assert_states_close(a: dict, b: dict, atol: float = 1e-5) -> None:
    for k in ("mean", "std", "stoch", "deter"):
        torch.testing.assert_close(a[k], b[k], atol=atol, rtol=0)


# ----- ELBO math ---------------------------------------------------------------------------------------
def test_kl_identical_gaussians_is_zero():
    mean, std = torch.randn(4, 5, 7), torch.rand(4, 5, 7) + 0.1
    torch.testing.assert_close(elbo.kl_gaussians(mean, std, mean, std), torch.zeros(4, 5))


def test_kl_closed_form_1d_and_sum_over_stoch():
    m1, s1, m2, s2 = 0.3, 0.5, -1.0, 2.0
    expected = math.log(s2 / s1) + (s1**2 + (m1 - m2) ** 2) / (2 * s2**2) - 0.5
    kl = elbo.kl_gaussians(*(torch.tensor([[v]], dtype=torch.float64) for v in (m1, s1, m2, s2)))
    assert kl.shape == (1,) and kl.item() == pytest.approx(expected, rel=1e-12)
    mp, sp, mq, sq = torch.randn(3, 4), torch.rand(3, 4) + 0.1, torch.randn(3, 4), torch.rand(3, 4) + 0.1
    ref = torch.distributions.kl_divergence(torch.distributions.Normal(mp, sp), torch.distributions.Normal(mq, sq))
    torch.testing.assert_close(elbo.kl_gaussians(mp, sp, mq, sq), ref.sum(-1))


def test_log_liks_match_torch_normal():
    mean, x = torch.randn(2, 3, 64, 64, 3), torch.rand(2, 3, 64, 64, 3) - 0.5
    ref = torch.distributions.Normal(mean, 1.0).log_prob(x).sum(dim=(-3, -2, -1))
    torch.testing.assert_close(elbo.gaussian_image_log_lik(mean, x), ref)
    r_mean, r = torch.randn(2, 3), torch.randn(2, 3)
    torch.testing.assert_close(elbo.reward_log_lik(r_mean, r), torch.distributions.Normal(r_mean, 1.0).log_prob(r))
    std = torch.rand(2, 5) + 0.1
    torch.testing.assert_close(elbo.gaussian_entropy(std), torch.distributions.Normal(0, std).entropy().sum(-1))


def test_free_nats_clip_and_gradient():
    kl_low = torch.full((2, 3), 1.0, requires_grad=True)
    clipped = elbo.free_nats_kl(kl_low, free_nats=3.0)
    clipped.backward()
    assert clipped.item() == 3.0 and kl_low.grad.abs().sum() == 0  # below free nats: no KL gradient
    kl_high = torch.tensor([[4.0, 6.0]], requires_grad=True)
    assert elbo.free_nats_kl(kl_high, free_nats=3.0).item() == 5.0
    loss = elbo.world_model_elbo_loss(torch.full((1, 2), -2.0), torch.full((1, 2), -1.0), kl_high, kl_scale=2.0)
    assert loss.item() == pytest.approx(3.0 + 2.0 * 5.0)


# ----- conv ---------------------------------------------------------------------------------------------
def test_preprocess_uint8_to_unit_interval():
    image = torch.tensor([0, 255, 128], dtype=torch.uint8).view(1, 1, 3).expand(64, 64, 3)
    x = preprocess_image(image, "cpu")
    assert x.dtype == torch.float32 and x.min().item() == -0.5 and x.max().item() == 0.5
    assert torch.equal(preprocess_image(x), x)  # floats are taken as already normalized


def test_conv_shapes_any_leading_dims():
    enc, dec = ConvEncoder(depth=4), ConvDecoder(feat_dim=10, depth=4)
    for lead in [(5,), (2, 3)]:
        embed = enc(torch.randint(0, 256, (*lead, 64, 64, 3), dtype=torch.uint8))
        assert embed.shape == (*lead, 32 * 4)
        assert dec(torch.randn(*lead, 10)).shape == (*lead, 64, 64, 3)
    with pytest.raises(ValueError, match="64, 64, 3"):
        enc(torch.zeros(2, 3, 64, 64, dtype=torch.uint8))


def test_decoder_matmul_equals_transposed_conv_stack():
    dec, feat = ConvDecoder(feat_dim=10, depth=4), torch.randn(5, 10)
    reference = dec.deconvs(dec.fc(feat)[:, :, None, None]).permute(0, 2, 3, 1)  # plain Dreamer-v1 stack
    torch.testing.assert_close(dec(feat), reference, atol=1e-5, rtol=1e-5)


# ----- RSSM ---------------------------------------------------------------------------------------------
def test_rssm_step_and_sequence_shapes(tiny):
    rssm, c = tiny.rssm, tiny.config
    S, D, E = c.stoch_size, c.deter_size, tiny.encoder.embed_dim
    state = rssm.initial_state(B, "cpu")
    prior = rssm.img_step(state, torch.randn(B, A))
    post, prior2 = rssm.obs_step(state, torch.randn(B, A), torch.randn(B, E), torch.zeros(B, dtype=torch.bool))
    for s in (prior, post, prior2):
        assert {k: tuple(v.shape) for k, v in s.items()} == dict(mean=(B, S), std=(B, S), stoch=(B, S), deter=(B, D))
        assert s["std"].min() >= c.min_std
    post, prior = rssm.observe(*_inputs(rssm, E))
    assert post["stoch"].shape == (B, T, S) and post["deter"].shape == (B, T, D)
    assert {k: tuple(v.shape) for k, v in prior.items()} == dict(
        mean=(B, T, S), std=(B, T, S), deter=(B, T, D)
    )  # no sample
    assert rssm.get_feat(post).shape == (B, T, S + D)
    assert rssm.imagine(torch.randn(B, T, A), state)["deter"].shape == (B, T, D)


def test_observe_equals_loop_of_obs_step(tiny):
    """``observe`` (the keep-masks and the GRU input's action part computed once, the prior head after the loop) is a
    loop of ``obs_step`` (the one-step form env runners act with) on the same posterior draws; its prior the same."""
    rssm = tiny.rssm
    embed, action, is_first = _inputs(rssm, tiny.encoder.embed_dim)
    is_first[1, 2] = True
    noise = torch.randn(B, T, rssm.stoch_size)
    post, prior = rssm.observe(embed, action, is_first, noise_B_T_S=noise)
    state = rssm.initial_state(B)
    for t in range(T):
        state, prior_t = rssm.obs_step(state, action[:, t], embed[:, t], is_first[:, t], noise_B_S=noise[:, t])
        _assert_states_close(state, {k: v[:, t] for k, v in post.items()})
        for k in ("mean", "std", "deter"):
            torch.testing.assert_close(prior_t[k], prior[k][:, t], atol=1e-5, rtol=0)


def test_is_first_resets_state(tiny):
    rssm = tiny.rssm
    embed, action, is_first = _inputs(rssm, tiny.encoder.embed_dim)
    is_first[:, 3] = True
    zero, zero_tail = _zero_noise(rssm), _zero_noise(rssm, t=T - 3)
    post, _ = rssm.observe(embed, action, is_first, noise_B_T_S=zero)
    fresh_action = action[:, 3:].clone()
    fresh_action[:, 0] = 0.0  # a_{-1} of a new episode is zero (and reset anyway)
    post_fresh, _ = rssm.observe(embed[:, 3:], action[:, 3:], None, noise_B_T_S=zero_tail)
    post_fresh_zero_action, _ = rssm.observe(embed[:, 3:], fresh_action, None, noise_B_T_S=zero_tail)
    _assert_states_close({k: v[:, 3:] for k, v in post.items()}, post_fresh_zero_action)
    assert not torch.allclose(post_fresh["deter"][:, 0], post["deter"][:, 3])  # the action reset matters
    post_no_reset, _ = rssm.observe(embed, action, None, noise_B_T_S=zero)
    assert not torch.allclose(post_no_reset["deter"][:, 3], post["deter"][:, 3])


def test_observe_particles(tiny):
    rssm, K = tiny.rssm, 4
    embed, action, is_first = _inputs(rssm, tiny.encoder.embed_dim)
    particles = rssm.observe_particles(embed, action, is_first, K)
    S, D = tiny.config.stoch_size, tiny.config.deter_size
    assert particles["stoch"].shape == (K, B, T, S) and particles["deter"].shape == (K, B, T, D)
    # Same inputs: step 0 has the same deter and belief for all particles; the samples differ from then on.
    torch.testing.assert_close(particles["deter"][:, :, 0], particles["deter"][:1, :, 0].expand(K, B, D))
    torch.testing.assert_close(particles["mean"][:, :, 0], particles["mean"][:1, :, 0].expand(K, B, S))
    assert (particles["stoch"][0] - particles["stoch"][1]).abs().min() > 0
    assert (particles["deter"][0, :, 1:] - particles["deter"][1, :, 1:]).abs().amax() > 1e-4
    assert rssm.get_feat(particles).shape == (K, B, T, S + D)
    # Without sampling noise every particle equals the single-trajectory filter.
    post, _ = rssm.observe(embed, action, is_first, noise_B_T_S=_zero_noise(rssm))
    post_K = {k: v.expand(K, *v.shape) for k, v in post.items()}
    _assert_states_close(
        rssm.observe_particles(embed, action, is_first, K, noise_KB_T_S=_zero_noise(rssm, K * B)), post_K
    )
    # With noise: particle k's trajectory is ``observe`` on rows k*B..(k+1)*B-1 of the draws (particle-major).
    noise_KB = torch.randn(K * B, T, rssm.stoch_size)
    particles = rssm.observe_particles(embed, action, is_first, K, noise_KB_T_S=noise_KB)
    post_2, _ = rssm.observe(embed, action, is_first, noise_B_T_S=noise_KB[2 * B : 3 * B])
    _assert_states_close({k: v[2] for k, v in particles.items()}, post_2)


def test_sample_stoch_particles(tiny):
    rssm, K = tiny.rssm, 5000
    post, _ = rssm.observe(*_inputs(rssm, tiny.encoder.embed_dim))
    stoch_K_B_T_S = rssm.sample_stoch_particles(post, K)
    assert stoch_K_B_T_S.shape == (K, *post["stoch"].shape)
    torch.testing.assert_close(stoch_K_B_T_S.mean(0), post["mean"], atol=0.1, rtol=0)
    torch.testing.assert_close(stoch_K_B_T_S.std(0), post["std"], atol=0.1, rtol=0.05)
    feat = rssm.get_feat({"stoch": stoch_K_B_T_S[:3], "deter": post["deter"]})  # deter broadcast
    assert feat.shape == (3, B, T, rssm.feat_dim)


# ----- world model --------------------------------------------------------------------------------------
def _moving_square_batch(b: int = 4, t: int = 8):
    """Structured uint8 frames: gray background, one bright square moving right; reward = its x position."""
    obs = torch.full((b, t, 64, 64, 3), 60, dtype=torch.uint8)
    x0 = torch.randint(0, 30, (b,))
    for i in range(b):
        for j in range(t):
            x = int(x0[i]) + 3 * j
            obs[i, j, 20:36, x : x + 16] = torch.tensor([230, 200, 40], dtype=torch.uint8)
    reward = (x0[:, None] + 3 * torch.arange(t)[None]).float() / 50.0
    is_first = torch.zeros(b, t, dtype=torch.bool)
    is_first[:, 0] = True
    return obs, torch.ones(b, t, A) * 0.5, reward, is_first


def test_world_model_loss_falls(tiny):
    torch.manual_seed(0)
    batch = _moving_square_batch()
    const = 0.5 * math.log(2 * math.pi) * (64 * 64 * 3 + 1)  # Gaussian normalizers: no gradient can remove them
    opt = torch.optim.Adam(tiny.parameters(), lr=1e-3)
    losses = []
    for _ in range(40):
        loss, metrics, out = tiny.loss(*batch)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item() - const)
    assert all(k.startswith("world_model/") for k in metrics) and metrics["world_model/kl"].requires_grad is False
    assert out.feat_B_T_F.shape == (4, 8, tiny.feat_dim) and out.embed_B_T_E.shape == (4, 8, tiny.encoder.embed_dim)
    assert losses[-1] < 0.5 * losses[0], losses


def test_paper_preset_parameter_count():
    """Count against the Dreamer-v1 / SMAC reference architecture, layer by layer (action dim 6, cheetah)."""
    a, d, deter, stoch, hid, units = 6, 32, 200, 30, 200, 300
    conv = lambda cin, cout, k: cin * cout * k * k + cout  # noqa: E731
    dense = lambda i, o: i * o + o  # noqa: E731
    feat, embed = stoch + deter, 32 * d
    encoder = conv(3, d, 4) + conv(d, 2 * d, 4) + conv(2 * d, 4 * d, 4) + conv(4 * d, 8 * d, 4)
    decoder = dense(feat, 32 * d) + conv(32 * d, 4 * d, 5) + conv(4 * d, 2 * d, 5) + conv(2 * d, d, 6) + conv(d, 3, 6)
    gru = 3 * deter * (hid + deter) + 2 * 3 * deter
    rssm = dense(stoch + a, hid) + gru + dense(deter, hid) + dense(hid, 2 * stoch)  # prior path
    rssm += dense(deter + embed, hid) + dense(hid, 2 * stoch)  # posterior path
    reward = dense(feat, units) + dense(units, units) + dense(units, 1)
    wm = WorldModel(a, WorldModelConfig.preset("paper"))
    count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    parts = (count(wm.encoder), count(wm.decoder), count(wm.rssm), count(wm.reward_head))
    assert parts == (encoder, decoder, rssm, reward)
    assert count(wm) == encoder + decoder + rssm + reward == 5_203_520
