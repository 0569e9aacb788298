"""FedAvg (Algorithms 1-2) against closed forms, and the message log."""

from __future__ import annotations

import math

import pytest
import torch

from flprivacy import (
    Adversary, ClientData, LocalSGD, SendBack, curious_client, eavesdrop, last_returned, lenet5, linear_regression,
    local_sgd, logistic_regression, mlp, run_fedavg,
)
from flprivacy.config import generator


def design(X):
    return torch.cat([X, torch.ones(X.shape[0], 1, dtype=X.dtype)], 1)


def gd_step(theta, c: ClientData, lr):
    Xd = design(c.X)
    return theta - lr * 2 / c.n * Xd.T @ (Xd @ theta - c.y)


def test_one_client_full_batch_one_epoch_is_one_gradient_step(ls_clients):
    model, c = linear_regression(4), ls_clients[0]
    theta0 = model.init_params(3)
    run = run_fedavg(model, [c], rounds=1, local=LocalSGD(lr=0.05), theta0=theta0)
    torch.testing.assert_close(run.theta, gd_step(theta0, c, 0.05), rtol=0, atol=1e-13)


@pytest.mark.parametrize("E", [2, 7])
def test_E_full_batch_epochs_are_E_gradient_steps(ls_clients, E):
    model, c = linear_regression(4), ls_clients[1]
    theta = theta0 = model.init_params(0)
    for _ in range(E):
        theta = gd_step(theta, c, 0.03)
    run = run_fedavg(model, [c], rounds=1, local=LocalSGD(lr=0.03, epochs=E, batch_size=10_000), theta0=theta0)
    torch.testing.assert_close(run.theta, theta, rtol=0, atol=1e-13)


def test_minibatch_sgd_reshuffles_each_epoch_and_takes_K_steps(ls_clients):
    """Replay Algorithm 2 by hand with the same generator: K = E*ceil(S/B) steps, a fresh
    permutation each epoch, the last batch smaller, the mean gradient per batch."""
    model, c = linear_regression(4), ls_clients[0]  # S = 40
    E, B, lr = 3, 16, 0.02
    theta0 = model.init_params(1)
    out = local_sgd(model, theta0, c.X, c.y, lr=lr, epochs=E, batch_size=B, generator=generator(5))
    g, theta, steps = generator(5), theta0.clone(), 0
    for _ in range(E):
        perm = torch.randperm(c.n, generator=g)
        for start in range(0, c.n, B):
            idx = perm[start:start + B]
            theta = gd_step(theta, ClientData(c.X[idx], c.y[idx]), lr)
            steps += 1
    assert steps == E * math.ceil(c.n / B) == LocalSGD(lr=lr, epochs=E, batch_size=B).n_steps(c.n)
    torch.testing.assert_close(out, theta, rtol=0, atol=1e-12)


def test_local_steps_override_epochs(ls_clients):
    model, c = linear_regression(4), ls_clients[0]
    theta0 = model.init_params(0)
    a = local_sgd(model, theta0, c.X, c.y, lr=0.01, steps=5, batch_size=16, generator=generator(0))
    b = local_sgd(model, theta0, c.X, c.y, lr=0.01, epochs=2, batch_size=16, generator=generator(0))  # 3 steps/epoch
    c6 = local_sgd(model, theta0, c.X, c.y, lr=0.01, steps=6, batch_size=16, generator=generator(0))
    assert not torch.allclose(a, b)
    torch.testing.assert_close(c6, b)


@pytest.mark.parametrize("weighting", ["size", "uniform"])
@pytest.mark.parametrize("server_lr", [1.0, 0.3])
def test_aggregation_weights_and_server_lr(ls_clients, weighting, server_lr):
    model = linear_regression(4)
    theta0 = model.init_params(0)
    run = run_fedavg(model, ls_clients, rounds=1, local=LocalSGD(lr=0.05, epochs=2), theta0=theta0,
                     weighting=weighting, server_lr=server_lr)
    sizes = torch.tensor([c.n for c in ls_clients], dtype=torch.float64)
    p = sizes / sizes.sum() if weighting == "size" else torch.full((3,), 1 / 3, dtype=torch.float64)
    local = [gd_step(gd_step(theta0, c, 0.05), c, 0.05) for c in ls_clients]
    expected = theta0 + server_lr * sum(pc * (tc - theta0) for pc, tc in zip(p, local))
    torch.testing.assert_close(run.theta, expected, rtol=0, atol=1e-12)
    torch.testing.assert_close(run.log.weights, p)


def test_partial_participation_renormalises_weights(ls_clients):
    model = linear_regression(4)
    run = run_fedavg(model, ls_clients, rounds=6, local=LocalSGD(lr=0.05), clients_per_round=2, seed=4)
    log = run.log
    assert all(len(part) == 2 for part in log.participants)
    assert len(set(map(tuple, log.participants))) > 1, "sampling should vary across rounds"
    t = 3
    part = log.participants[t]
    w = log.weights[part] / log.weights[part].sum()
    upd = sum(wc * (log.exchange(t, c).returned - log.global_models[t]) for wc, c in zip(w, part))
    torch.testing.assert_close(log.global_models[t + 1], log.global_models[t] + upd, rtol=0, atol=1e-12)
    absent = next(c for c in range(3) if c not in part)
    with pytest.raises(KeyError, match="not sampled"):
        log.exchange(t, absent)


def test_same_seed_same_log_and_different_seed_differs(ls_clients):
    model = mlp(4, hidden=8, dtype=torch.float64)
    kw = dict(rounds=4, local=LocalSGD(lr=0.05, batch_size=8), clients_per_round=2)
    a, b, c = (run_fedavg(model, ls_clients, seed=s, **kw) for s in (1, 1, 2))
    assert a.log.participants == b.log.participants
    for ea, eb in zip(a.log.exchanges(), b.log.exchanges()):
        assert (ea.round, ea.client) == (eb.round, eb.client)
        assert torch.equal(ea.sent, eb.sent) and torch.equal(ea.returned, eb.returned)
    assert not torch.equal(a.theta, c.theta)


def test_log_views_match_the_protocol(ls_clients):
    model = linear_regression(4)
    run = run_fedavg(model, ls_clients, rounds=5, local=LocalSGD(lr=0.05, batch_size=8), server_lr=0.7)
    log = run.log
    assert len(log.global_models) == log.rounds + 1 == 6
    M = eavesdrop(log, 1)
    assert M.rounds.tolist() == [0, 1, 2, 3, 4] and M.sent.shape == (5, model.dim)
    for i, t in enumerate(M.rounds.tolist()):
        assert torch.equal(M.sent[i], log.global_models[t])
    assert torch.equal(M.at_rounds([3, 1]).rounds, torch.tensor([3, 1]))
    with pytest.raises(KeyError, match="no recorded messages"):
        M.at_rounds([9])
    # curious client: (θ^t - θ^{t+1}) / η_g is the weighted average update of all clients
    view = curious_client(log, attacker=0)
    avg = sum(log.weights[c] * (log.exchange(2, c).sent - log.exchange(2, c).returned) for c in range(3))
    torch.testing.assert_close(view.averaged_update(2), avg, rtol=0, atol=1e-12)
    assert view.n_samples_total == sum(c.n for c in ls_clients)


def test_curious_client_needs_two_consecutive_models(ls_clients):
    model = linear_regression(4)
    run = run_fedavg(model, ls_clients, rounds=8, local=LocalSGD(lr=0.05), clients_per_round=1, seed=0)
    view = curious_client(run.log, attacker=0)
    gaps = [t for t in view.rounds.tolist() if t + 1 not in view.rounds.tolist()]
    with pytest.raises(KeyError, match="consecutive"):
        view.consecutive(gaps[0])


def test_each_adversary_sees_only_its_rounds(ls_clients):
    """With partial participation: the eavesdropper sees the rounds T_c it was given and no other;
    last_returned(before=t) is the latest reply strictly before round t; the curious client holds
    the global models of exactly the rounds it was sampled in."""
    run = run_fedavg(linear_regression(4), ls_clients, rounds=10, local=LocalSGD(lr=0.05), clients_per_round=2, seed=3)
    log = run.log
    took_part = [t for t, part in enumerate(log.participants) if 0 in part]
    assert 2 <= len(took_part) < log.rounds                       # the seed samples client 0 in some rounds only
    assert eavesdrop(log, 0).rounds.tolist() == took_part
    some = took_part[::2]
    assert eavesdrop(log, 0, rounds=some).rounds.tolist() == some
    t_last, t_prev = took_part[-1], took_part[-2]
    assert torch.equal(last_returned(log, 0), log.exchange(t_last, 0).returned)
    assert torch.equal(last_returned(log, 0, before=t_last), log.exchange(t_prev, 0).returned)
    view = curious_client(log, attacker=0)
    assert view.rounds.tolist() == took_part
    for i, t in enumerate(took_part):
        assert torch.equal(view.models[i], log.global_models[t])


def test_seed_draws_theta0_and_the_differentiable_replay_is_the_same_sgd(ls_clients):
    """run_fedavg starts from model.init_params(seed); local_sgd with create_graph=True (the replay
    gradient inversion differentiates through) takes the same SGD steps as the plain path."""
    model = mlp(4, hidden=8, dtype=torch.float64)
    for seed in (1, 2):
        run = run_fedavg(model, ls_clients, rounds=1, local=LocalSGD(lr=0.05), seed=seed)
        assert torch.equal(run.log.global_models[0], model.init_params(seed))
    assert not torch.equal(model.init_params(1), model.init_params(2))
    c = ls_clients[0]
    theta = model.init_params(0)
    kw = dict(lr=0.05, batch_size=8, epochs=2, generator=None, shuffle=False)
    plain = local_sgd(model, theta, c.X, c.y, **kw)
    graph = local_sgd(model, theta.clone().requires_grad_(True), c.X, c.y, create_graph=True, **kw)
    assert graph.requires_grad
    torch.testing.assert_close(graph.detach(), plain, rtol=0, atol=1e-12)


def test_active_hook_changes_only_the_target_incoming_model(ls_clients):
    model = linear_regression(4)
    kw = dict(rounds=6, local=LocalSGD(lr=0.05), seed=0)
    honest = run_fedavg(model, ls_clients, **kw)
    attacked = run_fedavg(model, ls_clients, adversary=SendBack(target=2, rounds=[3, 4, 5]), **kw)
    for c in range(3):  # up to and including the first attack round, non-targets see the honest model
        for t in range(4):
            same = torch.equal(honest.log.exchange(t, c).sent, attacked.log.exchange(t, c).sent)
            assert same == (c != 2 or t < 3)
    ex = attacked.log.exchange(3, 2)
    assert ex.forged and torch.equal(ex.sent, attacked.log.exchange(2, 2).returned)
    # the forged reply is left out of the aggregate
    part = [0, 1]
    w = attacked.log.weights[part] / attacked.log.weights[part].sum()
    g3 = attacked.log.global_models[3]
    expect = g3 + sum(wc * (attacked.log.exchange(3, c).returned - g3) for wc, c in zip(w, part))
    torch.testing.assert_close(attacked.log.global_models[4], expect, rtol=0, atol=1e-12)


def test_sendback_before_any_reply_is_an_error(ls_clients):
    with pytest.raises(RuntimeError, match="no model before round 0"):
        run_fedavg(linear_regression(4), ls_clients, rounds=2, local=LocalSGD(lr=0.05),
                   adversary=SendBack(target=0, rounds=[0]))


def test_custom_adversary_can_aggregate_forged_models(ls_clients):
    class Zero(Adversary):
        aggregate_forged = True

        def forge(self, round, client, global_model, log):
            return torch.zeros_like(global_model) if client == 0 else None

    run = run_fedavg(linear_regression(4), ls_clients, rounds=1, local=LocalSGD(lr=0.05), adversary=Zero(),
                     server_lr=0.7)
    log = run.log
    assert log.exchange(0, 0).forged and not log.exchange(0, 1).forged
    # Alg. 1 aggregates θ_c^t - θ^t, the forged reply too (not the reply minus the forged model it was sent)
    g0 = log.global_models[0]
    expect = g0 + 0.7 * sum(log.weights[c] * (log.exchange(0, c).returned - g0) for c in range(3))
    torch.testing.assert_close(log.global_models[1], expect, rtol=0, atol=1e-12)


def test_log_keeps_a_sent_model_that_differs_from_the_global_one():
    """MessageLog.record stores an exchange's sent model as a reference to θ^t only when it equals
    θ^t: a low-level caller (a deployment that saw another model arrive) keeps what was sent."""
    from flprivacy.log import Exchange, MessageLog

    log = MessageLog(2, torch.tensor([0.5, 0.5], dtype=torch.float64), [1, 1], 1.0)
    theta = torch.tensor([1.0, 2.0], dtype=torch.float64)
    log.begin_round(theta, [0, 1])
    other = theta + 1e-9
    log.record(Exchange(0, 0, theta.clone(), theta * 3, False))
    log.record(Exchange(0, 1, other, theta * 4, False))
    assert torch.equal(log.exchange(0, 0).sent, theta) and torch.equal(log.exchange(0, 1).sent, other)
    assert log.stored_models == 1 + 2 + 1    # θ^0, two replies, and the one sent model that is not θ^0


def test_record_filters(ls_clients):
    run = run_fedavg(linear_regression(4), ls_clients, rounds=4, local=LocalSGD(lr=0.05),
                     record_clients=[1], record_rounds=[0, 2])
    assert [(e.round, e.client) for e in run.log.exchanges()] == [(0, 1), (2, 1)]
    assert len(run.log.global_models) == 5


def test_bad_inputs_raise_clear_errors(ls_clients):
    model = linear_regression(4)
    with pytest.raises(ValueError, match="flat parameter vector of shape \\(5,\\)"):
        run_fedavg(model, ls_clients, rounds=1, local=LocalSGD(lr=0.1), theta0=torch.zeros(3))
    with pytest.raises(ValueError, match="clients_per_round"):
        run_fedavg(model, ls_clients, rounds=1, local=LocalSGD(lr=0.1), clients_per_round=5)
    with pytest.raises(ValueError, match="rows but y"):
        ClientData(torch.zeros(3, 4), torch.zeros(2))
    with pytest.raises(ValueError, match="weighting"):
        run_fedavg(model, ls_clients, rounds=1, local=LocalSGD(lr=0.1), weighting="bogus")
    with pytest.raises(ValueError, match="lr > 0"):
        local_sgd(model, model.init_params(), ls_clients[0].X, ls_clients[0].y, lr=0.0)


def test_models_shapes_and_second_order_autograd():
    for model, X, y in [
        (logistic_regression(5, 3), torch.randn(7, 5), torch.randint(0, 3, (7,))),
        (mlp(5, 16, loss="mse"), torch.randn(7, 5), torch.randn(7)),
        (lenet5(1, 10, 28), torch.rand(2, 1, 28, 28), torch.tensor([3, 4])),
        (lenet5(3, 10, 32), torch.rand(2, 3, 32, 32), torch.tensor([3, 4])),
    ]:
        theta = model.init_params(0)
        assert theta.shape == (model.dim,)
        assert model.per_sample_loss(theta, X, y).shape == (X.shape[0],)
        # gradient inversion differentiates the replayed local update with respect to the data
        Xr = X.clone().requires_grad_(True)
        out = local_sgd(model, theta, Xr, y, lr=0.1, epochs=2, create_graph=True)
        (gX,) = torch.autograd.grad((out - theta).pow(2).sum(), Xr)
        assert gX.shape == X.shape and gX.abs().sum() > 0
    # init_params is reproducible and leaves the global RNG alone
    m = mlp(3)
    state = torch.get_rng_state()
    assert torch.equal(m.init_params(5), m.init_params(5)) and not torch.equal(m.init_params(5), m.init_params(6))
    assert torch.equal(state, torch.get_rng_state())


def test_to_module_round_trip():
    model = mlp(4, 6)
    theta = model.init_params(2)
    torch.testing.assert_close(model.flatten(model.to_module(theta)), theta)
    X = torch.randn(3, 4)
    torch.testing.assert_close(model.to_module(theta)(X), model.forward(theta, X))
