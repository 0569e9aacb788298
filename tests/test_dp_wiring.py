"""The wiring of Opacus into the local update (flprivacy.defences; Diana et al. App. C.4).

Checks that fail on wrong wiring rather than on Opacus: with zero noise and a clipping norm that
never binds, DP-SGD is plain SGD; the accountant's ε grows every round and equals Opacus's own
accountant fed the client's whole history; σ chosen for a target (ε, δ) reaches it.
"""

from __future__ import annotations

import math

import pytest
import torch

pytest.importorskip("opacus")

import opacus.privacy_engine  # noqa: E402
from opacus.accountants import RDPAccountant  # noqa: E402

from flprivacy import ClientData, LocalSGD, linear_regression, mlp, run_fedavg  # noqa: E402
from flprivacy.defences import DPLocalSGD  # noqa: E402


def _client(n=24, p=3, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, p, generator=g, dtype=dtype)
    w = torch.tensor([1.0, -2.0, 3.0][:p], dtype=dtype)
    return ClientData(X, X @ w + 0.1 * torch.randn(n, generator=g, dtype=dtype))


@pytest.mark.parametrize("make_model", [lambda: linear_regression(3, dtype=torch.float64),
                                        lambda: mlp(3, 4, dtype=torch.float64)], ids=["linear", "mlp"])
def test_zero_noise_unclipped_dp_sgd_is_plain_sgd(monkeypatch, make_model):
    """σ = 0 and C far above every per-sample gradient: each DP-SGD step adds Σ_i g_i / (qS) with
    q = B/S; with B = S (q = 1) Poisson sampling takes every sample, so the step is the full-batch
    gradient of the mean loss, and E epochs of it equal LocalSGD's full-batch E epochs. Only the
    order of float64 sums differs: agreement to 1e-10 relative (a few hundred ulps)."""
    monkeypatch.setattr(opacus.privacy_engine, "get_noise_multiplier", lambda **kw: 0.0)
    c = _client()
    model = make_model()
    theta = model.init_params(0)
    dp = DPLocalSGD(lr=0.05, max_grad_norm=1e12, target_epsilon=1.0, target_delta=1e-5, total_rounds=3, epochs=3,
                    batch_size=c.n)
    plain = LocalSGD(lr=0.05, epochs=3, batch_size=None)
    a = dp(model, theta, c, torch.Generator().manual_seed(1))
    b = plain(model, theta, c, torch.Generator().manual_seed(1))
    assert dp.noise_multiplier(c) == 0.0
    assert float((b - theta).norm()) > 1e-2  # the update is not trivial
    assert torch.allclose(a, b, rtol=1e-10, atol=1e-12)
    # a second round reuses the engine (make_private) and must still be plain SGD
    a2 = dp(model, a, c, torch.Generator().manual_seed(2))
    b2 = plain(model, b, c, torch.Generator().manual_seed(2))
    assert torch.allclose(a2, b2, rtol=1e-10, atol=1e-12)


def test_epsilon_grows_every_round_as_opacus_accounts_it():
    """After r rounds of E epochs at q = 1/⌈S/B⌉ the spent ε is Opacus's RDP accountant on the history
    (σ, q, r·E·⌈S/B⌉), strictly increasing in r, and after all planned rounds within Opacus's search
    tolerance (0.01) below the target; computed at the trainer's own δ (here 1e-6, not a default)."""
    clients = [_client(20, seed=0, dtype=torch.float32), _client(13, seed=1, dtype=torch.float32)]
    T, E, B, delta = 4, 2, 2, 1e-6  # q = 1/10, 1/7: the accountant converges fast at small q
    dp = DPLocalSGD(lr=0.05, max_grad_norm=1.0, target_epsilon=2.0, target_delta=delta, total_rounds=T, epochs=E,
                    batch_size=B)
    model = mlp(3, 4)
    eps = []
    for r in range(T):
        run_fedavg(model, clients, rounds=1, local=dp, seed=r)
        eps.append(dp.epsilons(clients))
    for k, c in enumerate(clients):
        steps = math.ceil(c.n / B)
        path = [e[k] for e in eps]
        assert all(a < b for a, b in zip(path, path[1:])), path
        for r, e in enumerate(path, start=1):
            ref = RDPAccountant()
            ref.history = [(dp.noise_multiplier(c), 1 / steps, r * E * steps)]
            assert e == pytest.approx(ref.get_epsilon(delta), rel=1e-9)
        assert 2.0 - 0.01 - 1e-9 <= path[-1] <= 2.0
        # σ reaches the target for the whole planned training, not for one round
        one_round = RDPAccountant()
        one_round.history = [(dp.noise_multiplier(c), 1 / steps, E * steps)]
        assert one_round.get_epsilon(delta) < 0.9 * 2.0
