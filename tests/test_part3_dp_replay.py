"""The adversary's DP-SGD replay (:func:`flprivacy.defences.dp_sgd_many`), Adam tuned with it
and per client (App. B.5), and the Table 3 controls that use them."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

pytest.importorskip("opacus")

from flprivacy import ClientData, LocalSGD, linear_regression, mlp, run_fedavg  # noqa: E402
from flprivacy.attacks.active import (AdamActive, simulate_adam_active, tune_adam_active,  # noqa: E402
                                      tune_adam_active_per_client)
from flprivacy.config import child_seed, generator  # noqa: E402
from flprivacy.data.census import medical_task  # noqa: E402
from flprivacy.defences import DPLocalSGD, dp_sgd_many  # noqa: E402
from flbook.experiments import part3_pipeline, part3_table1, part3_table3, part3_table3_controls  # noqa: E402
from flprivacy.stack import LinearStack  # noqa: E402


def _client(n=40, p=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, p, generator=g)
    return ClientData(X, X @ torch.tensor([1.0, -2.0, 3.0][:p]) + 0.1 * torch.randn(n, generator=g))


def test_dp_replay_without_noise_is_clipped_gradient_descent(monkeypatch):
    """q = 1 (B ≥ S_c) and σ = 0: one step θ − η/⌊S_c q⌋ Σ_j min(1, C/‖g_j‖) g_j, with the
    per-sample gradients g_j computed one row at a time by autograd (float32: 1e-4 relative)."""
    data = _client()
    model = mlp(3, 4)
    dp = DPLocalSGD(lr=0.1, max_grad_norm=0.5, target_epsilon=1.0, target_delta=1e-5, total_rounds=3,
                    batch_size=64)
    monkeypatch.setattr(DPLocalSGD, "planned_noise_multiplier", lambda self, d: 0.0)
    thetas = torch.stack([model.init_params(0), model.init_params(1)])
    out = dp_sgd_many(LinearStack(model), thetas, data, dp, generator(0))
    for m in range(2):
        total = torch.zeros_like(thetas[m])
        for j in range(data.n):
            th = thetas[m].clone().requires_grad_(True)
            (g,) = torch.autograd.grad(model.loss(th, data.X[j:j + 1], data.y[j:j + 1]), th)
            total += g * min(1.0, 0.5 / (float(g.norm()) + 1e-6))
        ref = thetas[m] - 0.1 * total / data.n
        assert torch.allclose(out[m], ref, rtol=1e-4, atol=1e-5)


def test_dp_replay_matches_opacus_in_distribution():
    """Mean and spread of one round's update (E = 2), replay vs Opacus, over 60 independent rounds each:
    every coordinate's mean difference within 5 standard errors (d = 4 coordinates), and the
    per-coordinate standard deviations within a factor 1.5 (the ratio of two 60-sample standard
    deviations of one Gaussian stays in [0.67, 1.5] with probability > 0.998)."""
    data = _client(n=60)
    model = linear_regression(3)
    dp = DPLocalSGD(lr=0.05, max_grad_norm=2.0, target_epsilon=1.0, target_delta=1e-5, total_rounds=5, epochs=2,
                    batch_size=8)  # C ≠ 1, so that σ and σC differ
    planned = dp.planned_noise_multiplier(data)  # before any training: Opacus's own choice, recomputed
    theta = model.init_params(0)
    n = 60
    opa = torch.stack([dp(model, theta, data, generator(i)) for i in range(n)]).double()
    sim = torch.stack([dp_sgd_many(LinearStack(model), theta.unsqueeze(0), data, dp, generator(10_000 + i))[0]
                       for i in range(n)]).double()
    assert dp.noise_multiplier(data) == planned
    se = (opa.var(0) / n + sim.var(0) / n).sqrt()
    assert ((opa.mean(0) - sim.mean(0)).abs() <= 5 * se).all()
    ratio = sim.std(0) / opa.std(0)
    assert ((ratio > 1 / 1.5) & (ratio < 1.5)).all()


def test_dp_replay_rejects_a_plain_trainer():
    with pytest.raises(TypeError, match="DPLocalSGD"):
        dp_sgd_many(LinearStack(mlp(3, 4)), torch.zeros(1, 21), _client(), object(), generator(0))


def test_simulation_with_dp_clients_returns_the_last_replies():
    model = mlp(3, 4)
    clients = [_client(seed=0), _client(seed=1)]
    dp = DPLocalSGD(lr=0.05, max_grad_norm=1.0, target_epsilon=1.0, target_delta=1e-5, total_rounds=5, batch_size=8)
    starts = [model.init_params(0)] * 2
    lr, b1, b2 = torch.tensor([0.1, 1.0]), torch.tensor([0.9, 0.9]), torch.tensor([0.99, 0.99])
    est, rep = simulate_adam_active(model, clients, starts, dp, 3, lr, b1, b2, seed=0, replies=True)
    assert len(est) == len(rep) == 2 and est[0].shape == rep[0].shape == (2, model.dim)
    assert not torch.equal(est[0], rep[0])


def test_per_client_tuning_is_one_study_per_client_and_adam_uses_each_clients_setting():
    model = mlp(3, 4)
    clients = [_client(seed=0), _client(n=24, seed=1)]
    sgd = LocalSGD(lr=0.05, epochs=1, batch_size=8)
    starts = [model.init_params(0)] * 2
    per = tune_adam_active_per_client(model, clients, starts, sgd, 3, n_trials=4, batch=2, seed=5)
    for c in range(2):  # client c's study is tune_adam_active on her alone, seeded child_seed(5, c)
        alone = tune_adam_active(model, [clients[c]], [starts[c]], sgd, 3, n_trials=4, batch=2,
                                 seed=child_seed(5, c))
        assert (per[c].lr, per[c].betas) == (alone.lr, alone.betas)
    hp = {0: (0.5, (0.8, 0.9)), 1: (2.0, (0.7, 0.95))}
    adv = AdamActive([0, 1], 0, 3, 1.0, init_models=dict(enumerate(starts)), per_client=hp)
    run = run_fedavg(model, clients, rounds=3, local=sgd, seed=0, theta0=starts[0], adversary=adv)
    est = adv.estimates(run.log)
    for c, (lr, (b1, b2)) in hp.items():  # torch.optim.Adam on the same pseudo-gradients
        p_ = starts[c].clone().double().requires_grad_(True)
        opt = torch.optim.Adam([p_], lr=lr, betas=(b1, b2), eps=adv.eps)
        for r in range(3):
            ex = run.log.exchange(r, c)
            p_.grad = (ex.sent - ex.returned).double()
            opt.step()
        assert torch.allclose(est[c].double(), p_.detach(), atol=1e-4 * lr)
    with pytest.raises(ValueError, match="per_client"):
        AdamActive([0], 0, 2, 1.0, per_client={0: (-1.0, (0.9, 0.9))})


def _tiny(s):
    return replace(s, rounds=6, active_rounds=(2,), adam_trials=2, adam_batch=2, grad_learning_rates=(1e3,),
                   grad_iterations=2, grad_patience=None, model_wo_steps=10, seeds=(0,))


def test_controls_first_row_is_table3s_pipeline(monkeypatch):
    """The controls' "sgd replay, all clients" is the Table 3 pipeline's attack: same federation,
    same tuning, same attack seed, so the same accuracy; with the DP replay per client the
    pipeline reproduces that control's row too."""
    monkeypatch.setattr(part3_table3_controls, "ATTACK_SEEDS", 1)
    s = _tiny(part3_table1.QUICK_SETTINGS["Medical"])
    ctl = part3_table3_controls.run_seed(s, 0, log=lambda m: None)
    task = medical_task(seed=0)
    clip = part3_table3_controls.PAPER_PRIVACY["clip"]
    base = part3_table3.run_table3(task, replace(s, adam_per_client=False), 0, clip, log=None)
    row = ctl["adam"]["active-2"]
    assert base["details"]["active-2/adam"]["lr"] == row["sgd replay, all clients"]["lr"]
    assert base["rows"]["active-2/Ours"] == row["sgd replay, all clients"]["iterate"]
    assert base["details"]["active-2/adam"]["returned_acc"] == row["sgd replay, all clients"]["returned"]
    per = part3_table3.run_table3(task, replace(s, adam_replay="local", adam_per_client=True), 0, clip, log=None)
    assert per["details"]["active-2/adam"]["lr"] == row["dp replay, per client"]["lr"]
    assert per["rows"]["active-2/Ours"] == row["dp replay, per client"]["iterate"]
    assert ctl["privacy"]["scripts"]["delta"] == 1e-6 and ctl["privacy"]["scripts"]["clip"] == 5e5
    with pytest.raises(ValueError, match="adam_replay"):
        part3_pipeline.run_pipeline(task, replace(s, adam_replay="dp"), 0)


def test_every_table_tunes_per_client_and_table3_with_the_dp_trainer():
    """App. B.5: Adam's hyper-parameters "are optimized to minimize each client's training loss"
    "in all the experiments"; Table 3 replays the clients' DP-SGD (the authors' code)."""
    t3, t1 = part3_table3.table3_settings("Medical"), part3_table1.settings("Medical")
    assert (t3.adam_replay, t3.adam_per_client) == ("local", True)
    assert (t1.adam_replay, t1.adam_per_client) == ("sgd", True)
    assert replace(t3, adam_replay="sgd") == t1
