"""The book's federation on Flower (issue 15): the recorded log equals run_fedavg's, the book's
attacks run on it unchanged, and the active forgery (Diana Alg. 4) reaches its target only."""

from __future__ import annotations

import pytest
import torch

flwr = pytest.importorskip("flwr", reason="Flower is an optional extra: pip install flprivacy[flower] "
                                          "(or -r requirements-flower.txt); `make install` installs it")

from flprivacy import ClientData, LocalSGD, curious_client, eavesdrop, lenet5, linear_regression, run_fedavg  # noqa: E402
from flprivacy.attacks.active import AdamActive  # noqa: E402
from flprivacy.attacks.model_based_aia import model_based_aia  # noqa: E402
from flprivacy.data.attributes import SensitiveAttribute  # noqa: E402
from flprivacy.attacks.inversion import curious_client_attack  # noqa: E402
from flprivacy.attacks.reconstruction import reconstruct_least_squares  # noqa: E402
from flprivacy.optimum import least_squares_optimum  # noqa: E402
from flprivacy.flower import InProcessGrid, RecordingStrategy, client_app, from_arrays, run_flower, to_arrays  # noqa: E402

EPS64 = torch.finfo(torch.float64).eps
EPS32 = torch.finfo(torch.float32).eps


def _clients(seed: int = 0, sizes=(30, 22, 41, 17), d: int = 4) -> list[ClientData]:
    """Least-squares clients; column d-1 is a binary sensitive attribute."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for n in sizes:
        X = torch.randn(n, d, generator=g, dtype=torch.float64)
        X[:, d - 1] = (torch.rand(n, generator=g) < 0.5).double()
        w = torch.randn(d, generator=g, dtype=torch.float64)
        out.append(ClientData(X, X @ w + 0.5 + 0.1 * torch.randn(n, generator=g, dtype=torch.float64)))
    return out


def _tol(log, n_clients: int, eps: float) -> float:
    """Rounding bound for two FedAvg runs that differ only in the order of the aggregation's sums:
    each round's average of n_clients models differs by at most ~(n_clients + 2) ε max|θ|, and the
    local least-squares updates with a stable step are non-expansive, so the T rounds add up."""
    T = log.rounds
    scale = max(1.0, float(log.global_trajectory().abs().max()))
    return 4 * (T + 1) * (n_clients + 2) * eps * scale


def _assert_logs_equal(a, b, tol: float) -> None:
    assert a.participants == b.participants
    assert a.n_samples == b.n_samples and torch.equal(a.weights, b.weights) and a.server_lr == b.server_lr
    assert len(a.global_models) == len(b.global_models) == a.rounds + 1
    assert (a.global_trajectory() - b.global_trajectory()).abs().max() <= tol
    ea, eb = a.exchanges(), b.exchanges()
    assert [(e.round, e.client, e.forged) for e in ea] == [(e.round, e.client, e.forged) for e in eb]
    for x, y in zip(ea, eb):
        assert (x.sent - y.sent).abs().max() <= tol and (x.returned - y.returned).abs().max() <= tol


@pytest.mark.parametrize("local", [LocalSGD(lr=0.05), LocalSGD(lr=0.03, epochs=2, batch_size=8)],
                         ids=["full-batch", "shuffled-minibatch"])
def test_flower_log_equals_run_fedavg_log(local):
    """Same clients, seed, full participation: Flower's log is run_fedavg's to float precision,
    including each client's mini-batch shuffling (its random stream lives in the node's Context)."""
    clients, model = _clients(), linear_regression(4)
    ref = run_fedavg(model, clients, rounds=6, local=local, seed=3)
    fl = run_flower(model, clients, rounds=6, local=local, seed=3)
    tol = _tol(ref.log, len(clients), EPS64)
    _assert_logs_equal(ref.log, fl.log, tol)
    assert (ref.theta - fl.theta).abs().max() <= tol
    # every sent model of an honest run is the round's global model (stored once)
    assert all(torch.equal(e.sent, fl.log.global_models[e.round]) for e in fl.log.exchanges())
    assert fl.log.stored_models == (6 + 1) + 6 * len(clients)


def test_uniform_weighting_and_a_float32_model():
    clients = [ClientData(c.X.float(), c.y.float()) for c in _clients(1)]
    model = linear_regression(4, dtype=torch.float32)
    kw = dict(rounds=4, local=LocalSGD(lr=0.05), seed=0, weighting="uniform")
    ref, fl = run_fedavg(model, clients, **kw), run_flower(model, clients, **kw)
    _assert_logs_equal(ref.log, fl.log, _tol(ref.log, len(clients), EPS32))


def test_the_weights_flower_aggregates_with_are_eq1s():
    """θ^{t+1} = Σ_c p_c θ_c^t (eq. 1 with η_g = 1) on Flower's own aggregate, read from the log."""
    clients = _clients(2)
    fl = run_flower(linear_regression(4), clients, rounds=3, local=LocalSGD(lr=0.05), seed=1)
    p = fl.log.weights
    assert torch.allclose(p, torch.tensor([c.n for c in clients], dtype=torch.float64) / sum(c.n for c in clients))
    for t in range(3):
        avg = sum(p[c] * fl.log.exchange(t, c).returned for c in range(len(clients)))
        assert (fl.log.global_models[t + 1] - avg).abs().max() <= _tol(fl.log, len(clients), EPS64)


def test_passive_reconstruction_and_model_based_aia_on_the_flower_log():
    """Alg. 3 (least squares, Obs. 1 / Prop. 2: exact for full-batch GD) reads only the log; the
    model-based AIA (eq. 3) on the reconstruction guesses what it guesses on θ_c^* itself."""
    clients, model = _clients(4, sizes=(40, 35, 50)), linear_regression(4)
    fl = run_flower(model, clients, rounds=8, local=LocalSGD(lr=0.05, epochs=2), seed=0)
    star = least_squares_optimum(clients[0])
    rec = reconstruct_least_squares(eavesdrop(fl.log, 0))
    # least squares is accurate to ~cond(Θ_out)·ε (rec.error_estimate), times a small factor for d = 5
    assert (rec.theta - star).norm() / star.norm() <= max(50 * rec.error_estimate, 1e-12)
    # the same numbers as on the in-process simulator's log
    ref = reconstruct_least_squares(eavesdrop(run_fedavg(model, clients, rounds=8, local=LocalSGD(lr=0.05, epochs=2),
                                                         seed=0).log, 0))
    assert (rec.theta - ref.theta).norm() / star.norm() <= max(50 * (rec.error_estimate + ref.error_estimate), 1e-12)
    attr = SensitiveAttribute.binary(3)
    X, y = clients[0].X, clients[0].y
    guess = model_based_aia(model, rec.theta, X, y, attr.columns, attr.candidates)
    assert torch.equal(guess, model_based_aia(model, star, X, y, attr.columns, attr.candidates))


def test_curious_client_on_the_flower_log():
    """Wilson et al.: a curious client's view is the global models; their difference is the
    weighted average of the clients' updates (eq. 2), which the attack inverts."""
    g = torch.Generator().manual_seed(0)
    side, cnn = 16, lenet5(1, 3, image_size=16)
    imgs, labels = torch.rand(2, 1, side, side, generator=g), torch.tensor([0, 2])
    clients = [ClientData(imgs[:1], labels[:1]), ClientData(imgs[1:], labels[1:])]
    local = LocalSGD(lr=0.1, steps=1)
    fl = run_flower(cnn, clients, rounds=2, local=local, seed=0)
    ref = run_fedavg(cnn, clients, rounds=2, local=local, seed=0)
    view, ref_view = curious_client(fl.log, 0), curious_client(ref.log, 0)
    assert view.rounds.tolist() == [0, 1] and view.n_samples_total == 2
    tol = _tol(ref.log, 2, EPS32)
    assert (view.models - ref_view.models).abs().max() <= tol
    upd = view.averaged_update(0)
    avg = sum(fl.log.weights[c].float() * (fl.log.global_models[0] - fl.log.exchange(0, c).returned) for c in (0, 1))
    assert (upd - avg).abs().max() <= tol
    rec = curious_client_attack(cnn, view, 0, image_shape=(1, side, side), local_lr=0.1, local_steps=1, labels=labels,
                                iterations=8, seed=0)
    assert rec.images.shape == imgs.shape and rec.loss[-1] < rec.loss[0]


def test_active_forgery_reaches_the_target_only():
    """Alg. 4 on Flower: target 1 receives θ_1^a (not θ^t) in the attack rounds; every other
    message is the global model, the forged replies stay out of the aggregate, and the whole run
    equals run_fedavg with the same adversary."""
    clients, model = _clients(5), linear_regression(4)
    local = LocalSGD(lr=0.05)
    adv = lambda: AdamActive(targets=[1], start_round=2, n_rounds=4, lr=0.5)  # noqa: E731
    a_fl, a_ref = adv(), adv()
    fl = run_flower(model, clients, rounds=7, local=local, seed=2, adversary=a_fl)
    ref = run_fedavg(model, clients, rounds=7, local=local, seed=2, adversary=a_ref)
    tol = _tol(ref.log, len(clients), EPS64)
    _assert_logs_equal(ref.log, fl.log, tol)
    for e in fl.log.exchanges():
        attacked = e.client == 1 and 2 <= e.round < 6
        assert e.forged == attacked
        assert torch.equal(e.sent, fl.log.global_models[e.round]) != attacked
    # the aggregate of an attack round leaves the target out: p renormalised over the others
    p = fl.log.weights
    for t in range(2, 6):
        others = [c for c in range(len(clients)) if c != 1]
        avg = sum(p[c] * fl.log.exchange(t, c).returned for c in others) / sum(p[c] for c in others)
        assert (fl.log.global_models[t + 1] - avg).abs().max() <= tol
    assert (a_fl.estimate(1, fl.log) - a_ref.estimate(1, ref.log)).abs().max() <= 1e3 * tol  # Adam divides by √v


def test_grid_and_records_at_the_boundary():
    clients, model = _clients(), linear_regression(4)
    theta = model.init_params(0)
    assert torch.equal(from_arrays(model, to_arrays(model, theta)), theta)
    with pytest.raises(ValueError, match="shape"):
        from_arrays(linear_regression(3), to_arrays(model, theta))
    grid = InProcessGrid(client_app(model, clients, LocalSGD(lr=0.1)), len(clients), seed=0)
    assert len(set(grid.get_node_ids())) == len(clients)
    with pytest.raises(ValueError, match="node_to_client"):
        from flprivacy.federation import MessageLog
        RecordingStrategy(model, MessageLog(2, torch.ones(2) / 2, [1, 1], 1.0), {5: 0, 6: 0})
    with pytest.raises(ValueError, match="backend"):
        run_flower(model, clients, rounds=1, local=LocalSGD(lr=0.1), backend="spark")


def test_partial_participation_and_the_server_app_by_hand():
    """Flower's FedAvg samples clients_per_round nodes; only their exchanges are logged. The
    ServerApp run by hand on an InProcessGrid hands its log to on_finish (what a deployment uses)."""
    import random

    from flwr.app import Context, RecordDict

    from flprivacy.flower import _server_identity, server_app

    clients, model = _clients(6), linear_regression(4)
    random.seed(0)
    part = run_flower(model, clients, rounds=5, local=LocalSGD(lr=0.05), seed=0, clients_per_round=2)
    assert all(len(p) == 2 for p in part.log.participants)
    assert sorted((e.round, e.client) for e in part.log.exchanges()) == sorted(
        (t, c) for t, p in enumerate(part.log.participants) for c in p)
    got = {}
    app, out = server_app(model, [c.n for c in clients], rounds=3, theta0=model.init_params(0),
                          on_finish=lambda log, theta: got.update(log=log, theta=theta))
    grid = InProcessGrid(client_app(model, clients, LocalSGD(lr=0.05)), len(clients), seed=1)
    with _server_identity(run_id=1):
        app(grid, Context(run_id=1, node_id=1, node_config={}, state=RecordDict(), run_config={}))
    assert got["log"] is out.log and got["log"].rounds == 3 and torch.equal(got["theta"], out.theta)
    ref = run_fedavg(model, clients, rounds=3, local=LocalSGD(lr=0.05), seed=0, theta0=model.init_params(0))
    assert (ref.theta - out.theta).abs().max() <= _tol(ref.log, len(clients), EPS64)
