"""The tail every update shares (``smac_rllib/objectives/update_step.py``), against closed forms: the skip of a
non-finite update, the per-optimizer clip, Polyak averaging, and the gradient average over learners (two gloo
processes on half batches equal one process on the whole batch)."""

from __future__ import annotations

import os

import pytest
import torch
import torch.multiprocessing as mp

from smac_rllib.core.optim import adam
from smac_rllib.objectives.update_step import NONFINITE, backward_and_step


def _regression(seed: int = 0):
    torch.manual_seed(seed)
    net = torch.nn.Linear(3, 1)
    x_N_3 = torch.randn(8, 3)
    y_N = x_N_3 @ torch.tensor([1.0, -2.0, 0.5]) + 0.3
    return net, x_N_3, y_N


def _mse(net, x_N_3, y_N):
    return (net(x_N_3).squeeze(-1) - y_N).square().mean()


def test_a_finite_update_steps_and_clips_to_the_closed_form():
    net, x, y = _regression()
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    loss = _mse(net, x, y)
    grads = torch.autograd.grad(loss, list(net.parameters()))
    norm = torch.linalg.vector_norm(torch.cat([g.reshape(-1) for g in grads]))
    max_norm = float(norm) / 4  # the clip scales every gradient by max_norm / norm
    expected = [
        p.detach() - 0.1 * g * max_norm / (float(norm) + 1e-6) for p, g in zip(net.parameters(), grads, strict=True)
    ]
    metrics = backward_and_step(_mse(net, x, y), [loss], {"net": optimizer}, clip={"net": max_norm})
    assert float(metrics[NONFINITE]) == 0.0
    assert float(metrics["gradients/net_global_norm"]) == pytest.approx(float(norm), rel=1e-6)
    for p, e in zip(net.parameters(), expected, strict=True):
        torch.testing.assert_close(p.detach(), e, rtol=1e-6, atol=1e-7)


def test_a_nonfinite_loss_skips_every_optimizer_on_the_device_and_polyak_still_runs():
    net, x, y = _regression()
    target = torch.nn.Linear(3, 1)
    torch.nn.init.zeros_(target.weight), torch.nn.init.zeros_(target.bias)
    optimizer = adam(net.parameters(), lr=0.1)
    before = [p.detach().clone() for p in net.parameters()]
    bad = _mse(net, x, y * float("nan"))
    metrics = backward_and_step(
        bad, [bad], {"net": optimizer}, clip={}, polyak=(list(target.parameters()), list(net.parameters()), 0.25)
    )
    assert float(metrics[NONFINITE]) == 1.0
    assert all(torch.equal(p.detach(), b) for p, b in zip(net.parameters(), before, strict=True))
    for t, m in zip(target.parameters(), net.parameters(), strict=True):  # target <- 0 + 0.25 (main - 0)
        torch.testing.assert_close(t.detach(), 0.25 * m.detach())


def _half_batch_worker(rank: int, port: int, steps: int, out: dict) -> None:
    import torch.distributed as dist

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=2)
    try:
        torch.set_num_threads(1)
        net, x, y = _regression()
        optimizer = adam(net.parameters(), lr=0.05)
        half = slice(4 * rank, 4 * rank + 4)
        for _ in range(steps):
            loss = _mse(net, x[half], y[half])
            backward_and_step(loss, [loss], {"net": optimizer}, clip={"net": 10.0})
        out[rank] = [p.detach().clone() for p in net.parameters()]
    finally:
        dist.destroy_process_group()


def test_two_learners_on_half_batches_equal_one_learner_on_the_whole_batch():
    """``num_learners >= 2``: the step averages the gradients over the process group (``all_reduce_mean_``); with a
    mean loss over equal halves that is the whole batch's gradient, so after several Adam steps both learners hold
    the weights one learner reaches on the whole batch."""
    net, x, y = _regression()
    optimizer = adam(net.parameters(), lr=0.05)
    for _ in range(5):
        loss = _mse(net, x, y)
        backward_and_step(loss, [loss], {"net": optimizer}, clip={"net": 10.0})
    with mp.Manager() as manager:
        out = manager.dict()
        port = 29500 + os.getpid() % 1000
        mp.start_processes(_half_batch_worker, args=(port, 5, out), nprocs=2, start_method="spawn")
        replicas = [out[0], out[1]]
    for p, a, b in zip(net.parameters(), *replicas, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)  # the replicas are identical
        torch.testing.assert_close(a, p.detach(), rtol=1e-5, atol=1e-6)  # and equal one learner on the whole batch
    untouched, _, _ = _regression()
    assert any(not torch.equal(p, q) for p, q in zip(net.parameters(), untouched.parameters(), strict=True))
