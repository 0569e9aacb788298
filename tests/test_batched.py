"""The batched FedAvg engine (flprivacy.batched) and the hand-written gradient of
flprivacy.stack.LinearStack, against the per-client reference path and autograd."""

from __future__ import annotations

import pytest
import torch

from flprivacy import ClientData, LocalSGD, SendBack, linear_regression, logistic_regression, mlp, run_fedavg
from flprivacy.batched import supports
from flprivacy.models import FLModel, lenet5
from flprivacy.stack import LinearStack


def _clients(sizes, f, kind, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    out = []
    for n in sizes:
        X = torch.randn(n, f, generator=g, dtype=dtype)
        if kind == "reg":
            y = X @ torch.randn(f, generator=g, dtype=dtype) + 0.1 * torch.randn(n, generator=g, dtype=dtype)
        elif kind == "class":
            y = torch.randint(0, 3, (n,), generator=g)
        else:
            y = torch.randint(0, 2, (n,), generator=g).to(dtype)
        out.append(ClientData(X, y))
    return out


def _same_log(a, b, rtol):
    """Every global model and every recorded exchange equal to rounding, same participants and flags."""
    assert a.participants == b.participants
    for t in range(len(a.global_models)):
        torch.testing.assert_close(a.global_models[t], b.global_models[t], rtol=rtol, atol=rtol)
    ea, eb = a.exchanges(), b.exchanges()
    assert [(e.round, e.client, e.forged) for e in ea] == [(e.round, e.client, e.forged) for e in eb]
    for x, y in zip(ea, eb):
        torch.testing.assert_close(x.sent, y.sent, rtol=rtol, atol=rtol)
        torch.testing.assert_close(x.returned, y.returned, rtol=rtol, atol=rtol)


# float64: each step's gradient differs by the order of a sum (a few ulps); over at most a few
# hundred steps of a contraction that stays below 1e-10. float32: the same at eps_32 ~ 1.2e-7,
# amplified through the ReLU network's steps: 1e-4 relative.
CASES = [
    ("linear, uneven sizes, shuffled mini-batches", lambda: linear_regression(5), "reg", torch.float64,
     LocalSGD(lr=0.05, epochs=2, batch_size=16), 1e-10),
    ("logistic, 3 classes", lambda: logistic_regression(5, 3), "class", torch.float32,
     LocalSGD(lr=0.1, epochs=1, batch_size=8), 1e-4),
    ("MLP mse (Diana et al.'s architecture)", lambda: mlp(5, hidden=32), "reg", torch.float32,
     LocalSGD(lr=0.01, epochs=1, batch_size=16), 1e-4),
    ("MLP bce, fixed step count", lambda: mlp(5, hidden=16, loss="bce"), "bin", torch.float32,
     LocalSGD(lr=0.05, steps=7, batch_size=10), 1e-4),
    ("linear, full batch", lambda: linear_regression(5), "reg", torch.float64, LocalSGD(lr=0.05, epochs=3), 1e-10),
]


@pytest.mark.parametrize("name, make, kind, dtype, local, rtol", CASES, ids=[c[0] for c in CASES])
def test_batched_log_equals_per_client_log(name, make, kind, dtype, local, rtol):
    clients = _clients([40, 23, 57, 31], 5, kind, dtype)
    runs = [run_fedavg(make(), clients, rounds=4, local=local, seed=3, batched=b) for b in (False, True)]
    _same_log(runs[0].log, runs[1].log, rtol)


def test_batched_with_partial_participation_and_active_adversary():
    clients = _clients([40, 23, 57, 31, 12], 5, "reg", torch.float64)
    kw = dict(rounds=8, local=LocalSGD(lr=0.05, epochs=1, batch_size=8), seed=1, clients_per_round=3)
    logs = [run_fedavg(linear_regression(5), clients, adversary=SendBack(2, range(3, 8)), batched=b, **kw).log
            for b in (False, True)]
    assert any(e.forged for e in logs[1].exchanges())
    _same_log(logs[0], logs[1], 1e-10)


def _mlp_with(activation: type[torch.nn.Module], n_outputs: int, loss: str) -> FLModel:
    lin = lambda i, o: torch.nn.Linear(i, o, dtype=torch.float64)  # noqa: E731
    return FLModel(torch.nn.Sequential(lin(6, 9), activation(), lin(9, n_outputs)), loss)


@pytest.mark.parametrize("make, kind, by_hand", [
    (lambda: mlp(6, hidden=9, n_outputs=3, loss="cross_entropy", dtype=torch.float64), "class", True),
    (lambda: mlp(6, hidden=9, loss="bce", dtype=torch.float64), "bin", True),
    (lambda: mlp(6, hidden=9, dtype=torch.float64), "reg", True),
    (lambda: linear_regression(6), "reg", True),
    (lambda: _mlp_with(torch.nn.Sigmoid, 3, "cross_entropy"), "class", False),
    (lambda: _mlp_with(torch.nn.Tanh, 1, "bce"), "bin", False),
], ids=["MLP cross-entropy", "MLP bce", "MLP mse", "linear mse", "sigmoid MLP cross-entropy (autograd path)",
        "tanh MLP bce (autograd path)"])
def test_stack_gradient_equals_autograd_per_client(make, kind, by_hand):
    """LinearStack's risk and gradient against FLModel.loss/grad (autograd) on each model's real
    rows: padding rows (mask 0) must not count, and the risk is the mean over the real rows. ReLU
    and identity stacks take the hand-written backward; other activations take LinearStack's
    autograd path, whose risk is LinearStack.loss itself. float64: agreement to 1e-12 (a few ulps
    per product)."""
    model = make()
    stack = LinearStack(model)
    assert stack._manual == by_hand
    g = torch.Generator().manual_seed(0)
    thetas = torch.stack([model.init_params(s) for s in range(3)])
    X = torch.randn(3, 10, 6, generator=g, dtype=torch.float64)
    y = {"class": torch.randint(0, 3, (3, 10), generator=g), "bin": torch.randint(0, 2, (3, 10), generator=g).double(),
         "reg": torch.randn(3, 10, generator=g, dtype=torch.float64)}[kind]
    mask = torch.ones(3, 10, dtype=torch.float64)
    mask[0, 4:] = 0  # model 0 sees 4 real rows, model 1 sees 7, model 2 all 10
    mask[1, 7:] = 0
    loss, G = stack.loss_and_grad(thetas, X, y, mask)
    if not by_hand:
        torch.testing.assert_close(loss, stack.loss(thetas, X, y, mask), rtol=0, atol=0)
    for m, rows in ((0, 4), (1, 7), (2, 10)):
        torch.testing.assert_close(G[m], model.grad(thetas[m], X[m, :rows], y[m, :rows]), rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(loss[m], model.loss(thetas[m], X[m, :rows], y[m, :rows]), rtol=1e-12, atol=1e-12)
    # no mask, X shared by all models: the risk is the mean over all rows
    loss, G = stack.loss_and_grad(thetas, X[0], y[0])
    for m in range(3):
        torch.testing.assert_close(G[m], model.grad(thetas[m], X[0], y[0]), rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(loss[m], model.loss(thetas[m], X[0], y[0]), rtol=1e-12, atol=1e-12)


def test_batched_refuses_what_it_cannot_train():
    clients = _clients([10, 10], 5, "reg", torch.float64)
    assert not supports(lenet5())
    with pytest.raises(ValueError, match="LocalSGD"):
        run_fedavg(linear_regression(5), clients, rounds=1, local=lambda m, th, d, gen: th, batched=True)
    imgs = [ClientData(torch.rand(4, 1, 28, 28), torch.randint(0, 10, (4,))) for _ in range(2)]
    with pytest.raises(ValueError, match="does not support"):
        run_fedavg(lenet5(), imgs, rounds=1, local=LocalSGD(lr=0.1), batched=True)


def test_divergence_is_reported_before_it_overflows():
    """FedAvg on least squares with a learning rate far above 2/λ_max grows geometrically without
    overflowing for many rounds: the reader is told, naming the learning rate."""
    import warnings

    from flprivacy.validation import DivergenceWarning

    clients = _clients([50, 50], 5, "reg", torch.float64)
    with pytest.warns(DivergenceWarning, match="lr=50"):
        run_fedavg(linear_regression(5), clients, rounds=40, local=LocalSGD(lr=50.0), seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DivergenceWarning)
        run_fedavg(linear_regression(5), clients, rounds=40, local=LocalSGD(lr=0.05), seed=0)


# ---- the message log's write API (flprivacy.log), which run_fedavg and the Flower strategy share ----------
def test_write_api_owns_the_round_rules():
    from flprivacy.log import MessageLog
    from flprivacy.validation import NonFiniteError

    class Forger(SendBack):
        aggregate_forged = False

    log = MessageLog(2, torch.tensor([0.25, 0.75], dtype=torch.float64), [1, 3], server_lr=1.0)
    theta = torch.zeros(3, dtype=torch.float64)
    with pytest.raises(RuntimeError, match="no round is open"):
        log.sent_model(0)
    assert log.begin_round(theta, [1, 0]) == 0 and log.participants == [[0, 1]]
    with pytest.raises(RuntimeError, match="still open"):
        log.begin_round(theta, [0])
    for c, r in ((0, 4.0), (1, 8.0)):
        sent, forged = log.sent_model(c)
        assert torch.equal(sent, theta) and not forged
        assert log.record_reply(c, sent, torch.full((3,), r, dtype=torch.float64), forged)
    with pytest.raises(RuntimeError, match="still open"):
        log.finish(theta)
    theta1 = log.close_round()
    assert torch.equal(theta1, torch.full((3,), 0.25 * 4 + 0.75 * 8, dtype=torch.float64))  # Σ p_c θ_c
    # round 1: the adversary forges client 1's model (her last reply); her answer stays out of the aggregate
    log.begin_round(theta1, [0, 1], Forger(1, [1]))
    sent0, f0 = log.sent_model(0)
    sent1, f1 = log.sent_model(1)
    assert not f0 and f1 and torch.equal(sent1, torch.full((3,), 8.0, dtype=torch.float64))
    assert log.record_reply(0, sent0, theta1 + 1, f0) and not log.record_reply(1, sent1, theta1 + 100, f1)
    assert torch.equal(log.close_round(), theta1 + 1)   # only client 0's reply, renormalised
    assert log.exchange(1, 1).forged and not log.exchange(1, 0).forged
    log.begin_round(theta1 + 1, [0])
    with pytest.raises(NonFiniteError, match="round 2, client 0"):
        log.record_reply(0, theta1, torch.full((3,), float("nan"), dtype=torch.float64), False)


def test_global_models_is_one_type_in_memory_and_on_disk(tmp_path):
    clients = _clients([20, 30], 3, "reg", torch.float64)
    logs = [run_fedavg(linear_regression(3), clients, rounds=3, local=LocalSGD(lr=0.05), seed=0, log_dir=d).log
            for d in (None, tmp_path)]
    assert type(logs[0].global_models) is type(logs[1].global_models)
    torch.testing.assert_close(logs[0].global_trajectory(), logs[1].global_trajectory(), rtol=0, atol=0)
    assert len(logs[1].global_models) == 4 and torch.equal(logs[1].global_models[-1], logs[0].global_models[3])
