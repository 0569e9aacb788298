"""The book's federation on Flower: the recorded log equals run_fedavg's, the book's
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
from flwr.app import Message  # noqa: E402
from flprivacy.flower import InProcessGrid, RecordingStrategy, client_app, from_arrays, run_flower, to_arrays  # noqa: E402

EPS64 = torch.finfo(torch.float64).eps
EPS32 = torch.finfo(torch.float32).eps


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
def test_flower_log_equals_run_fedavg_log(local, attr_clients):
    """Same clients, seed, full participation: Flower's log is run_fedavg's to float precision,
    including each client's mini-batch shuffling (its random stream lives in the node's Context)."""
    clients, model = attr_clients(), linear_regression(4)
    ref = run_fedavg(model, clients, rounds=6, local=local, seed=3)
    fl = run_flower(model, clients, rounds=6, local=local, seed=3)
    tol = _tol(ref.log, len(clients), EPS64)
    _assert_logs_equal(ref.log, fl.log, tol)
    assert (ref.theta - fl.theta).abs().max() <= tol
    # every sent model of an honest run is the round's global model (stored once)
    assert all(torch.equal(e.sent, fl.log.global_models[e.round]) for e in fl.log.exchanges())
    assert fl.log.stored_models == (6 + 1) + 6 * len(clients)


def test_uniform_weighting_and_a_float32_model(attr_clients):
    clients = [ClientData(c.X.float(), c.y.float()) for c in attr_clients(1)]
    model = linear_regression(4, dtype=torch.float32)
    kw = dict(rounds=4, local=LocalSGD(lr=0.05), seed=0, weighting="uniform")
    ref, fl = run_fedavg(model, clients, **kw), run_flower(model, clients, **kw)
    _assert_logs_equal(ref.log, fl.log, _tol(ref.log, len(clients), EPS32))


def test_the_weights_flower_aggregates_with_are_eq1s(attr_clients):
    """θ^{t+1} = Σ_c p_c θ_c^t (eq. 1 with η_g = 1) on Flower's own aggregate, read from the log."""
    clients = attr_clients(2)
    fl = run_flower(linear_regression(4), clients, rounds=3, local=LocalSGD(lr=0.05), seed=1)
    p = fl.log.weights
    assert torch.allclose(p, torch.tensor([c.n for c in clients], dtype=torch.float64) / sum(c.n for c in clients))
    for t in range(3):
        avg = sum(p[c] * fl.log.exchange(t, c).returned for c in range(len(clients)))
        assert (fl.log.global_models[t + 1] - avg).abs().max() <= _tol(fl.log, len(clients), EPS64)


def test_passive_reconstruction_and_model_based_aia_on_the_flower_log(attr_clients):
    """Alg. 3 (least squares, Obs. 1 / Prop. 2: exact for full-batch GD) reads only the log; the
    model-based AIA (eq. 3) on the reconstruction guesses what it guesses on θ_c^* itself."""
    clients, model = attr_clients(4, sizes=(40, 35, 50)), linear_regression(4)
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


def test_active_forgery_reaches_the_target_only(attr_clients):
    """Alg. 4 on Flower: target 1 receives θ_1^a (not θ^t) in the attack rounds; every other
    message is the global model, the forged replies stay out of the aggregate, and the whole run
    equals run_fedavg with the same adversary."""
    clients, model = attr_clients(5), linear_regression(4)
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


def test_grid_and_records_at_the_boundary(attr_clients):
    clients, model = attr_clients(), linear_regression(4)
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


def test_partial_participation_and_the_server_app_by_hand(attr_clients):
    """Flower's FedAvg samples clients_per_round nodes; only their exchanges are logged. The
    ServerApp run by hand on an InProcessGrid hands its log to on_finish (what a deployment uses)."""
    import random

    from flwr.app import Context, RecordDict

    from flprivacy.flower import _server_identity, server_app

    clients, model = attr_clients(6), linear_regression(4)
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


class _FaultyGrid(InProcessGrid):
    """An InProcessGrid with faults by (book round, client): ``drop`` loses the reply (the round
    times out without it), ``errors`` answers with a Flower error of that code, and client
    ``late``'s node is connected only from round ``join`` on."""

    def __init__(self, app, n, *, drop=(), errors=None, late=None, join=0, seed=0):
        super().__init__(app, n, seed=seed)
        self.client_of = {i: int(ctx.node_config["partition-id"]) for i, ctx in self.contexts.items()}
        self.drop, self.errors, self.late, self.join, self.round = set(drop), dict(errors or {}), late, join, 0

    def get_node_ids(self):
        return [i for i, c in self.client_of.items() if c != self.late or self.round >= self.join]

    def send_and_receive(self, messages, *, timeout=None):
        from flwr.app import Error, MessageType

        messages = list(messages)
        train = any(m.metadata.message_type == MessageType.TRAIN for m in messages)
        replies = super().send_and_receive(messages, timeout=timeout)
        if not train:
            return replies
        out = []
        for r in replies:
            key = (self.round, self.client_of[r.metadata.src_node_id])
            if key in self.errors:
                msg = next(m for m in messages if m.metadata.dst_node_id == r.metadata.src_node_id)
                r = Message(Error(code=self.errors[key], reason="injected"), reply_to=msg)
                r.metadata.__dict__["_src_node_id"] = msg.metadata.dst_node_id
            if key not in self.drop:
                out.append(r)
        self.round += 1
        return out


def _serve(model, clients, grid, **kw):
    from flwr.app import Context, RecordDict

    from flprivacy.flower import _server_identity, server_app

    app, out = server_app(model, [c.n for c in clients], theta0=model.init_params(0), **kw)
    with _server_identity(run_id=1):
        app(grid, Context(run_id=1, node_id=1, node_config={}, state=RecordDict(), run_config={}))
    return out


def test_failed_and_late_nodes_in_process(attr_clients):
    """The recording strategy's fault rules without processes: client 2's reply is lost in round 1
    (a timeout) and client 1's node reports 'node unavailable' in round 3; client 3's node connects
    at round 2. Each failure leaves the round's participants, is kept in log.failures, is not
    aggregated (eq. 1 renormalised over the replies), and its node is not sampled again; the late
    node is queried and takes part from round 2."""
    from flwr.common.constant import ErrorCode

    clients, model = attr_clients(8), linear_regression(4)
    grid = _FaultyGrid(client_app(model, clients, LocalSGD(lr=0.05)), 4, drop={(1, 2)},
                       errors={(3, 1): ErrorCode.NODE_UNAVAILABLE}, late=3, join=2)
    out = _serve(model, clients, grid, rounds=5, min_nodes=2)
    log = out.log
    assert log.participants == [[0, 1, 2], [0, 1], [0, 1, 3], [0, 3], [0, 3]]
    assert [log.dropped(t) for t in range(5)] == [[], [2], [], [1], []]
    assert log.sampled(1) == [0, 1, 2] and log.sampled(3) == [0, 1, 3]
    assert "timeout" in log.failures[(1, 2)] and "injected" in log.failures[(3, 1)]
    assert sorted((e.round, e.client) for e in log.exchanges()) == sorted(
        (t, c) for t, part in enumerate(log.participants) for c in part)
    p = log.weights
    for t, part in enumerate(log.participants):
        avg = sum(p[c] * log.exchange(t, c).returned for c in part) / sum(p[c] for c in part)
        assert (log.global_models[t + 1] - avg).abs().max() <= _tol(log, 4, EPS64)
    assert torch.equal(log.exchange(2, 3).sent, log.global_models[2])


def test_node_faults_that_are_errors_not_failures(attr_clients):
    """A ClientApp that raised is a bug, not a fault: it raises. Too few live nodes raise after
    the bounded wait instead of hanging; the log refuses a failure for a client that replied."""
    import threading
    import time

    from flwr.common.constant import ErrorCode

    from flprivacy.log import MessageLog

    clients, model = attr_clients(8), linear_regression(4)
    grid = _FaultyGrid(client_app(model, clients, LocalSGD(lr=0.05)), 4,
                       errors={(1, 0): ErrorCode.CLIENT_APP_RAISED_EXCEPTION})
    with pytest.raises(RuntimeError, match="client 0: the ClientApp failed"):
        _serve(model, clients, grid, rounds=3)
    grid = _FaultyGrid(client_app(model, clients, LocalSGD(lr=0.05)), 4, drop={(0, 1)})
    t0, box = time.monotonic(), {}

    def serve():  # in a daemon thread, so that a wait that is not bounded fails this test instead of hanging it
        try:
            _serve(model, clients, grid, rounds=3, connect_timeout=1.0)
        except Exception as e:  # noqa: BLE001 - checked below
            box["error"] = e

    worker = threading.Thread(target=serve, daemon=True)
    worker.start()
    worker.join(60)
    assert not worker.is_alive(), "too few live nodes: the round still waits after 60 s instead of raising"
    assert isinstance(box.get("error"), RuntimeError) and "needs 4 live nodes but 3" in str(box["error"]), box
    assert time.monotonic() - t0 < 10
    log = MessageLog(2, torch.ones(2, dtype=torch.float64) / 2, [1, 1], 1.0)
    log.begin_round(torch.zeros(3, dtype=torch.float64), [0, 1])
    log.record_reply(0, torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64), False)
    with pytest.raises(ValueError, match="already replied"):
        log.record_failure(0, "x")
    log.record_failure(1, "lost")
    with pytest.raises(ValueError, match="already recorded as failed"):
        log.record_failure(1, "again")
    with pytest.raises(ValueError, match="recorded as failed"):
        log.record_reply(1, torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64), False)
    assert torch.equal(log.close_round(), torch.ones(3, dtype=torch.float64))  # client 0's reply alone
    assert log.participants == [[0]] and log.sampled(0) == [0, 1] and log.failures == {(0, 1): "lost"}


def test_ray_simulation_log_equals_run_fedavg(attr_clients):
    """Flower's Simulation Engine (Ray) runs the same apps; the log is run_fedavg's to rounding.
    Skipped where Ray is not installed: the flower extra does not install it (`pip install
    flwr[simulation]`). No retry rule: the benchmark (book/results/flower_overhead.json) records each
    try, and the chapter calls Ray untested unless every try finished."""
    pytest.importorskip("ray", reason="Flower's Ray engine needs `pip install flwr[simulation]` (not in the flower extra)")
    clients, model = attr_clients(3, sizes=(30, 22, 41)), linear_regression(4)
    local = LocalSGD(lr=0.05)
    cfg = {"client_resources": {"num_cpus": 1, "num_gpus": 0.0}, "init_args": {"num_cpus": 2}}
    fl = run_flower(model, clients, rounds=3, local=local, seed=0, backend="ray", backend_config=cfg)
    ref = run_fedavg(model, clients, rounds=3, local=local, seed=0)
    _assert_logs_equal(ref.log, fl.log, _tol(ref.log, len(clients), EPS64))
