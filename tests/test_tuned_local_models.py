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


# ---- the DP oracle (the authors' DPTrainer: Opacus on torch.optim.Adam) ----------------------------------
def _dp(clip=1e12, eps=1.0, delta=1e-5):
    from flprivacy.defences import DPLocalSGD

    return DPLocalSGD(lr=0.1, max_grad_norm=clip, target_epsilon=eps, target_delta=delta, total_rounds=7, epochs=3,
                      batch_size=4)


def test_dp_oracle_without_noise_or_clipping_on_full_batches_is_the_plain_oracle():
    """σ = 0, a clipping norm no gradient reaches and B >= S_c: the Poisson rate is 1 (every row in
    every batch), the expected batch size S_c, so each step's DP gradient is the full-batch mean
    gradient and the DP oracle is the non-private one (same trials, same models) to rounding."""
    model = mlp(3, 4, dtype=torch.float64)
    clients = _clients()
    kw = dict(epochs=4, batch_size=50, n_trials=4, batch=2, seed=5)
    plain = tuned_local_models(model, clients, **kw)
    dp = tuned_local_models(model, clients, dp=_dp(), noise_multiplier=0.0, **kw)
    for a, b in zip(plain, dp):
        assert a.params == b.params and b.noise_multiplier == 0.0 and a.noise_multiplier is None
        torch.testing.assert_close(b.theta, a.theta, rtol=1e-9, atol=1e-10)


def _brute_clipped_sum(model, theta, X, y, C):
    """Σ_j min(1, C/(‖g_j‖+1e-6)) g_j with g_j by autograd, one sample at a time."""
    out = torch.zeros_like(theta)
    for j in range(X.shape[0]):
        th = theta.clone().requires_grad_(True)
        (g,) = torch.autograd.grad(model.loss(th, X[j:j + 1], y[j:j + 1]), th)
        out += g * min(1.0, C / (float(g.norm()) + 1e-6))
    return out


def test_clipped_grad_sum_is_the_per_sample_loop():
    """Per-sample clipping against autograd one sample at a time, for several models, a shared X
    and a per-model X with a mask (padded rows contribute nothing); C binds for some samples only."""
    from flprivacy.defences import clipped_grad_sum
    from flprivacy.stack import LinearStack

    model = mlp(3, 4, dtype=torch.float64)
    stack = LinearStack(model)
    data = _clients((9,))[0]
    thetas = torch.stack([model.init_params(s) for s in range(3)])
    C = 1.5
    got = clipped_grad_sum(stack, thetas, data.X, data.y, C)
    for m in range(3):
        torch.testing.assert_close(got[m], _brute_clipped_sum(model, thetas[m], data.X, data.y, C), rtol=1e-10, atol=1e-12)
    # per-model rows, padded and masked
    mask = torch.ones(3, 9, dtype=torch.float64)
    mask[1, 5:] = 0
    mask[2, :] = 0
    Xm = data.X.expand(3, -1, -1).clone()
    Xm[1, 5:] = 1e3  # padding: any values
    got = clipped_grad_sum(stack, thetas, Xm, data.y.expand(3, -1), C, mask)
    torch.testing.assert_close(got[0], _brute_clipped_sum(model, thetas[0], data.X, data.y, C), rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(got[1], _brute_clipped_sum(model, thetas[1], data.X[:5], data.y[:5], C), rtol=1e-10,
                               atol=1e-12)
    assert torch.equal(got[2], torch.zeros_like(got[2]))
    # the clip binds for some rows of every model, not all (else the test would not test clipping)
    for m in range(3):
        norms = [float(_brute_clipped_sum(model, thetas[m], data.X[j:j + 1], data.y[j:j + 1], 1e12).norm())
                 for j in range(9)]
        assert min(norms) < C < max(norms)
    with pytest.raises(ValueError, match="max_grad_norm"):
        clipped_grad_sum(stack, thetas, data.X, data.y, 0.0)
    with pytest.raises(ValueError, match="mask"):
        clipped_grad_sum(stack, thetas, data.X, data.y, C, torch.ones(2, 9))


def test_dp_oracle_steps_are_opacus_dp_sgd_then_torch_adam():
    """One trial per client: the DP oracle's model is torch.optim.Adam (weight decay) fed, at each
    of the epochs·⌈S_c/B⌉ steps, (Σ clipped per-sample gradients + N(0, σ²C²)) / ⌊S_c q⌋ on a
    Poisson batch of rate q = 1/⌈S_c/B⌉, with the same draws from the client's generator (rows,
    then noise): clients of different sizes, a clipping norm that binds, σ > 0."""
    model = mlp(3, 4, dtype=torch.float64)
    clients = _clients()
    C, sigma, epochs, B = 2.0, 0.7, 3, 5
    res = tuned_local_models(model, clients, epochs=epochs, batch_size=B, n_trials=1, batch=1, seed=3,
                             dp=_dp(clip=C), noise_multiplier=sigma)
    init = model.init_params(3)
    for c, (r, data) in enumerate(zip(res, clients)):
        gen = generator(child_seed(3, 7, c, 0))
        K = -(-data.n // B)
        q, expected = 1 / K, int(data.n * (1 / K))
        theta = init.clone().requires_grad_(True)
        p = r.params
        opt = torch.optim.Adam([theta], lr=p["lr"], betas=(p["beta1"], p["beta2"]), weight_decay=p["weight_decay"],
                               eps=1e-8)
        for _ in range(epochs * K):
            rows = (torch.rand(data.n, generator=gen) < q).nonzero().squeeze(1)
            noise = torch.randn(model.dim, generator=gen, dtype=torch.float64) * (sigma * C)
            s = _brute_clipped_sum(model, theta.detach(), data.X[rows], data.y[rows], C)
            theta.grad = (s + noise) / expected
            opt.step()
        torch.testing.assert_close(r.theta, theta.detach(), rtol=1e-8, atol=1e-9)
        assert r.noise_multiplier == sigma


def test_dp_oracle_sigma_is_opacus_for_the_oracles_epochs():
    """σ per client is Opacus's get_noise_multiplier for the federation's ε, δ over the oracle's own
    epochs at rate 1/⌈S_c/B⌉ (make_private_with_epsilon in the authors' DPTrainer), not the
    federation's rounds."""
    from opacus.accountants.utils import get_noise_multiplier

    model = mlp(3, 4, dtype=torch.float64)
    clients = _clients((23, 9))
    res = tuned_local_models(model, clients, epochs=6, batch_size=4, n_trials=1, batch=1, seed=0,
                             dp=_dp(clip=1.0, eps=2.0, delta=1e-4))
    for r, data in zip(res, clients):
        want = get_noise_multiplier(target_epsilon=2.0, target_delta=1e-4, sample_rate=1 / -(-data.n // 4), epochs=6,
                                    accountant="rdp")
        assert r.noise_multiplier == pytest.approx(want, rel=1e-12)
    assert res[0].noise_multiplier != res[1].noise_multiplier  # the rate differs by client


def test_dp_oracle_bad_inputs_name_the_argument():
    model = mlp(3, 4, dtype=torch.float64)
    with pytest.raises(TypeError, match="dp must be"):
        tuned_local_models(model, _clients(), epochs=1, n_trials=1, dp=1.0)
    with pytest.raises(ValueError, match="noise_multiplier"):
        tuned_local_models(model, _clients(), epochs=1, n_trials=1, noise_multiplier=1.0)
    for bad in (-1.0, float("nan"), "1"):
        with pytest.raises(ValueError, match="noise_multiplier"):
            tuned_local_models(model, _clients(), epochs=1, n_trials=1, dp=_dp(), noise_multiplier=bad)


def test_dp_oracle_settings_are_opacus_dptrainers():
    """The authors' DPTrainer as Opacus builds it (make_private_with_epsilon on torch.optim.Adam, a
    shuffled DataLoader of batch size B, epochs = the oracle's): the same σ, Poisson rate
    1/⌈S_c/B⌉ and expected batch size ⌊S_c q⌋ as the DP oracle (real Opacus, not our reading)."""
    import warnings

    from opacus import PrivacyEngine
    from torch.utils.data import DataLoader, TensorDataset

    model = mlp(3, 4, dtype=torch.float64)
    data = _clients((23,))[0]
    B, epochs = 4, 6
    res = tuned_local_models(model, [data], epochs=epochs, batch_size=B, n_trials=1, batch=1, seed=0,
                             dp=_dp(clip=1.0, eps=2.0, delta=1e-4))
    module = model.to_module(model.init_params(0)).train()
    opt = torch.optim.Adam(module.parameters(), lr=0.1, weight_decay=1e-3)
    loader = DataLoader(TensorDataset(data.X, data.y), batch_size=B, shuffle=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, dp_opt, dp_loader = PrivacyEngine(accountant="rdp").make_private_with_epsilon(
            module=module, optimizer=opt, data_loader=loader, target_epsilon=2.0, target_delta=1e-4, epochs=epochs,
            max_grad_norm=1.0)
    K = -(-data.n // B)
    assert res[0].noise_multiplier == pytest.approx(dp_opt.noise_multiplier, rel=1e-12)
    assert dp_loader.sample_rate == pytest.approx(1 / K) and dp_opt.expected_batch_size == int(data.n * (1 / K))
