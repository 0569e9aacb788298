"""The Flower recorder (flprivacy.flower.RecordingStrategy) checked against what the clients and the
adversary actually saw, not only against run_fedavg: the log's rounds are the book's t = 0..T-1
(Flower's server round r is t = r - 1), each exchange holds the model the client trained from and
the model it returned, and only the target's messages in the attack rounds are marked forged."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("flwr", reason="Flower is an optional extra: pip install flprivacy[flower]")

from flprivacy import ClientData, linear_regression, run_fedavg  # noqa: E402
from flprivacy.flower import run_flower  # noqa: E402
from flprivacy.threats import Adversary  # noqa: E402


def _clients(sizes=(5, 7, 4, 6)):
    g = torch.Generator().manual_seed(0)
    return [ClientData(torch.randn(n, 3, generator=g, dtype=torch.float64), torch.randn(n, generator=g,
                                                                                         dtype=torch.float64))
            for n in sizes]


class Spy:
    """A local update with a known answer: θ_c = θ + (c + 1)/100; records each client's inputs in order."""

    def __init__(self, clients):
        self.clients = clients
        self.seen: dict[int, list[torch.Tensor]] = {c: [] for c in range(len(clients))}

    def __call__(self, model, theta, data, generator):
        c = next(i for i, d in enumerate(self.clients) if d is data or (d.n == data.n and torch.equal(d.X, data.X)))
        self.seen[c].append(theta.detach().clone())
        return theta + (c + 1) / 100


class Forger(Adversary):
    """Sends client ``target`` the constant model 7 + t in rounds ``rounds``; records every call."""

    def __init__(self, target, rounds):
        self.target, self.rounds, self.calls = target, set(rounds), []

    def forge(self, round, client, global_model, log):
        self.calls.append((round, client, global_model.clone()))
        if client == self.target and round in self.rounds:
            return torch.full_like(global_model, 7.0 + round)
        return None


@pytest.mark.parametrize("runner", [run_flower, run_fedavg], ids=["flower", "run_fedavg"])
def test_rounds_and_forged_flags_are_what_the_clients_saw(runner):
    """T = 4 rounds, target 2 attacked in rounds 1 and 2. Exact arithmetic up to float64 averaging
    (4 terms of size ≤ 10: tolerance 1e-12)."""
    clients, model, T = _clients(), linear_regression(3), 4
    spy, adv = Spy(clients), Forger(target=2, rounds=(1, 2))
    run = runner(model, clients, rounds=T, local=spy, seed=0, adversary=adv)
    log = run.log
    assert log.rounds == T and len(log.global_models) == T + 1
    assert torch.equal(log.global_models[0], model.init_params(0))
    # the adversary is asked in the book's rounds 0..T-1, with that round's global model
    assert sorted({r for r, _, _ in adv.calls}) == list(range(T))
    assert all(torch.equal(g, log.global_models[r]) for r, _, g in adv.calls)
    ex = log.exchanges()
    assert sorted((e.round, e.client) for e in ex) == [(t, c) for t in range(T) for c in range(4)]
    for e in ex:
        attacked = e.client == 2 and e.round in (1, 2)
        assert e.forged == attacked, (e.round, e.client)
        want_sent = torch.full_like(e.sent, 7.0 + e.round) if attacked else log.global_models[e.round]
        assert torch.equal(e.sent, want_sent)
        assert torch.equal(spy.seen[e.client][e.round], e.sent)  # the client's (t+1)-th update started from it
        assert torch.allclose(e.returned, e.sent + (e.client + 1) / 100, rtol=0, atol=1e-12)
    p = log.weights
    for t in range(T):
        honest = [c for c in range(4) if not (c == 2 and t in (1, 2))]
        avg = sum(p[c] * log.exchange(t, c).returned for c in honest) / sum(p[c] for c in honest)
        assert torch.allclose(log.global_models[t + 1], avg, rtol=0, atol=1e-12), t
    assert torch.allclose(run.theta, log.global_models[T], rtol=0, atol=1e-12)
