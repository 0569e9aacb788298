"""Model-w-O as the authors' code computes it: Optuna-tuned mini-batch Adam with weight decay
from a fresh initialisation (flprivacy.optimum.tuned_local_models)."""

from __future__ import annotations

import pytest
import torch

from flprivacy import ClientData, mlp
from flprivacy.config import child_seed, generator
from flprivacy.federation import batch_schedule
from flprivacy.optimum import AUTHORS_LOCAL_SPACE, tuned_local_models


def _clients(sizes=(23, 17), p=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    out = []
    for n in sizes:
        X = torch.randn(n, p, generator=g, dtype=torch.float64)
        out.append(ClientData(X, X @ torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64) + 0.1 * torch.randn(n, generator=g, dtype=torch.float64)))
    return out


def _torch_adam(model, data, params, epochs, batch_size, gen, init):
    """torch.optim.Adam with weight_decay on the same mini-batches (float64)."""
    theta = init.clone().requires_grad_(True)
    opt = torch.optim.Adam([theta], lr=params["lr"], betas=(params["beta1"], params["beta2"]),
                           weight_decay=params["weight_decay"], eps=1e-8)
    for idx in batch_schedule(data.n, epochs=epochs, batch_size=batch_size, generator=gen):
        idx = torch.arange(data.n) if idx is None else idx
        opt.zero_grad()
        model.loss(theta, data.X[idx], data.y[idx]).backward()
        opt.step()
    return theta.detach()


def test_each_trial_is_torch_adam_with_weight_decay_on_the_clients_batches():
    """With one trial per client the best model is that trial's: torch.optim.Adam (weight decay
    added to the gradient, bias correction) on the client's own shuffled mini-batches, to float64
    rounding (clients of different sizes: the shorter one stops while the other steps)."""
    model = mlp(3, 4, dtype=torch.float64)
    clients = _clients()
    res = tuned_local_models(model, clients, epochs=3, batch_size=5, n_trials=1, batch=1, seed=3)
    init = model.init_params(3)
    for c, (r, data) in enumerate(zip(res, clients)):
        ref = _torch_adam(model, data, r.params, 3, 5, generator(child_seed(3, 7, c, 0)), init)
        torch.testing.assert_close(r.theta, ref, rtol=1e-9, atol=1e-10)
        assert r.loss == pytest.approx(float(model.loss(ref, data.X, data.y)), rel=1e-9)
        assert r.params["weight_decay"] > 0 and set(r.params) == set(AUTHORS_LOCAL_SPACE)


def test_best_trial_has_the_lowest_training_loss_and_seeds_repeat():
    model = mlp(3, 4, dtype=torch.float64)
    clients = _clients()
    a = tuned_local_models(model, clients, epochs=2, batch_size=8, n_trials=6, batch=3, seed=1)
    b = tuned_local_models(model, clients, epochs=2, batch_size=8, n_trials=6, batch=3, seed=1)
    for r, s in zip(a, b):
        assert r.losses.numel() == 6 and r.loss == float(r.losses.min())
        assert torch.equal(r.theta, s.theta) and r.params == s.params
    for r, data in zip(a, clients):
        assert r.loss == pytest.approx(float(model.loss(r.theta, data.X, data.y)), rel=1e-12)


def test_bad_space_and_counts_name_the_argument():
    model = mlp(3, 4, dtype=torch.float64)
    with pytest.raises(ValueError, match="space"):
        tuned_local_models(model, _clients(), space={"lr": (1e-3, 1.0)}, n_trials=1, epochs=1)
    with pytest.raises(ValueError, match="space"):
        tuned_local_models(model, _clients(), space=dict(AUTHORS_LOCAL_SPACE, lr=(1.0, 0.1)), n_trials=1, epochs=1)
    with pytest.raises((ValueError, TypeError), match="epochs"):
        tuned_local_models(model, _clients(), epochs=0)
