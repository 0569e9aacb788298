"""Alg. 4 (the active Adam attack), its batched replay and its Optuna tuning."""

from __future__ import annotations

import pytest
import torch

from flprivacy import ClientData, LocalSGD, local_sgd, mlp, run_fedavg
from flprivacy.stack import LinearStack
from flprivacy.attacks.active import (
    ADAM_BETA_RANGE,
    ADAM_LR_RANGE,
    AdamActive,
    SendBackAll,
    local_sgd_many,
    simulate_adam_active,
    tune_adam_active,
)
from flprivacy.config import generator


def _clients(sizes=(30, 45), seed=0):
    g = torch.Generator().manual_seed(seed)
    out = []
    for n in sizes:
        X = torch.randn(n, 4, generator=g)
        out.append(ClientData(X, X @ torch.randn(4, generator=g) + 0.1 * torch.randn(n, generator=g)))
    return out


def test_local_sgd_many_matches_local_sgd():
    model = mlp(4, 8)
    clients = _clients()
    local = LocalSGD(lr=0.05, epochs=2, batch_size=8)
    thetas = [torch.stack([model.init_params(i), model.init_params(i + 10)]) for i in range(2)]
    many = local_sgd_many(LinearStack(model), thetas, clients, local, [generator(1), generator(2)])
    for c, seed in ((0, 1), (1, 2)):
        for m in range(2):
            one = local_sgd(model, thetas[c][m], clients[c].X, clients[c].y, lr=0.05, epochs=2, batch_size=8,
                            generator=generator(seed) if m == 0 else generator(seed))
            if m == 0:
                torch.testing.assert_close(many[c][m], one, rtol=1e-4, atol=1e-5)


def test_adam_active_in_fedavg_equals_the_batched_replay():
    """Full-batch local updates have no randomness: run_fedavg with the adversary and the
    replay used for tuning give the same estimates."""
    model = mlp(4, 8)
    clients = _clients()
    local = LocalSGD(lr=0.05, epochs=1, batch_size=None)
    starts = [model.init_params(c) for c in range(2)]
    adv = AdamActive([0, 1], 0, 4, 0.01, (0.8, 0.95), init_models=dict(enumerate(starts)))
    run = run_fedavg(model, clients, rounds=4, local=local, adversary=adv)
    est = adv.estimates(run.log)
    replay = simulate_adam_active(model, clients, starts, local, 4, torch.tensor([0.01]), torch.tensor([0.8]),
                                  torch.tensor([0.95]))
    for c in range(2):
        torch.testing.assert_close(est[c], replay[c][0], rtol=1e-4, atol=1e-5)
    assert run.log.client_messages(0).forged.all()  # every exchange was forged
    torch.testing.assert_close(run.log.global_models[-1], run.log.global_models[0])  # forged replies not aggregated


def test_adam_active_first_round_sends_the_last_returned_model_and_fails_clearly():
    model = mlp(4, 8)
    clients = _clients()
    local = LocalSGD(lr=0.05, batch_size=None)
    adv = AdamActive([1], start_round=2, n_rounds=3, lr=0.1)
    run = run_fedavg(model, clients, rounds=5, local=local, adversary=adv)
    ex = run.log.exchange(2, 1)
    assert ex.forged and torch.equal(ex.sent, run.log.exchange(1, 1).returned)
    assert not run.log.exchange(2, 0).forged
    with pytest.raises(KeyError, match="never attacked"):
        adv.estimate(0, run.log)
    with pytest.raises(RuntimeError, match="returned no model"):
        run_fedavg(model, clients, rounds=1, local=local, adversary=AdamActive([0], 0, 1, 0.1))
    with pytest.raises(ValueError):
        AdamActive([0], 0, 0, 0.1)


def test_send_back_all_returns_each_clients_own_model():
    model = mlp(4, 8)
    clients = _clients()
    run = run_fedavg(model, clients, rounds=4, local=LocalSGD(lr=0.05, batch_size=10),
                     adversary=SendBackAll([0, 1], [2, 3]))
    for c in range(2):
        assert torch.equal(run.log.exchange(3, c).sent, run.log.exchange(2, c).returned)


def test_tuning_stays_in_the_paper_ranges_and_improves_on_the_start():
    model = mlp(4, 8)
    clients = _clients()
    local = LocalSGD(lr=0.01, batch_size=10)
    starts = [model.init_params(c) for c in range(2)]
    tune = tune_adam_active(model, clients, starts, local, 3, n_trials=12, batch=4, seed=0)
    assert len(tune.study.trials) == 12
    assert ADAM_LR_RANGE[0] <= tune.lr <= ADAM_LR_RANGE[1]
    assert all(ADAM_BETA_RANGE[0] <= b <= ADAM_BETA_RANGE[1] for b in tune.betas)
    start_loss = sum(float(model.loss(s, c.X, c.y)) * c.n for s, c in zip(starts, clients)) / sum(c.n for c in clients)
    assert tune.loss == pytest.approx(tune.study.best_value)
    assert tune.loss < start_loss
