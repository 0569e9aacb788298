"""Gradient inversion, label restoration, the curious-client attack and Lemma 1 (Wilson et al. 2025)."""

from __future__ import annotations

import itertools

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from flprivacy import ClientData, LocalSGD, curious_client, lenet5, mlp, run_fedavg
from flprivacy.attacks.inversion import (
    curious_client_attack, decode_dummy, dlg_init, dummy_latent, idlg_label, invert_update,
    jacobian_gradient_covariance, labels_from_counts, lemma1_prediction, own_image_score, replay_update,
    restore_label_counts, super_client_divergence, total_variation, update_distance,
)
from flprivacy.models import FLModel, LeNet5


def small_mlp(d_in=6, classes=3, hidden=5):
    """A float64 MLP with a sigmoid: smooth, cheap, exact enough for closed-form checks."""
    net = torch.nn.Sequential(torch.nn.Linear(d_in, hidden), torch.nn.Sigmoid(), torch.nn.Linear(hidden, classes)).double()
    return FLModel(net, "cross_entropy")


def tiny_cnn(side=8, classes=4):
    """A float64 conv net small enough for exact single-image recovery in a unit test."""
    net = torch.nn.Sequential(torch.nn.Conv2d(1, 3, 3), torch.nn.Sigmoid(), torch.nn.Flatten(),
                              torch.nn.Linear(3 * (side - 2) ** 2, classes)).double()
    return FLModel(net, "cross_entropy")


def data(n, d_in=6, classes=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, d_in, generator=g, dtype=torch.float64), torch.randint(0, classes, (n,), generator=g)


# ---- dummies and priors ------------------------------------------------------------------------
def test_dummy_latent_and_bicubic_decoding():
    z = dummy_latent(3, (1, 28, 28), scale_factor=4, generator=torch.Generator().manual_seed(0))
    assert z.shape == (3, 1, 7, 7) and 0 <= z.min() and z.max() <= 1
    x = decode_dummy(z, (1, 28, 28))
    assert x.shape == (3, 1, 28, 28)
    # bicubic interpolation reproduces constants exactly, and full-resolution latents are the identity
    torch.testing.assert_close(decode_dummy(torch.full((2, 3, 8, 8), 0.3), (3, 32, 32)), torch.full((2, 3, 32, 32), 0.3))
    full = dummy_latent(2, (3, 8, 8))
    assert decode_dummy(full, (3, 8, 8)) is full
    with pytest.raises(ValueError, match="divisor"):
        dummy_latent(1, (1, 28, 28), scale_factor=3)
    with pytest.raises(ValueError, match="init"):
        dummy_latent(1, (1, 8, 8), init="zeros")


def test_total_variation_closed_form():
    assert total_variation(torch.full((2, 1, 5, 5), 0.7)).item() == 0
    step = torch.zeros(1, 1, 4, 4)
    step[..., 2:] = 1.0  # one vertical edge: 4 of the 12 horizontal differences are 1
    assert total_variation(step).item() == pytest.approx(4 / 12)


def test_update_distances():
    a = torch.tensor([1.0, 0.0])
    assert update_distance(a, a).item() == 0
    assert update_distance(a, 3 * a, "cosine").item() == pytest.approx(0, abs=1e-7)
    assert update_distance(a, torch.tensor([0.0, 2.0]), "cosine").item() == pytest.approx(1)
    with pytest.raises(ValueError, match="distance"):
        update_distance(a, a, "l1")


# ---- labels --------------------------------------------------------------------------------------
@settings(max_examples=10, deadline=None)
@given(st.integers(min_value=0, max_value=9), st.integers(min_value=0, max_value=1000))
def test_idlg_recovers_the_label_of_one_image(label, seed):
    model = lenet5(image_size=16)
    theta = dlg_init(model, seed)
    x = torch.rand(1, 1, 16, 16, generator=torch.Generator().manual_seed(seed))
    y = torch.tensor([label])
    assert idlg_label(model, model.grad(theta, x, y)) == label
    # also from a 3-step update with a small learning rate
    assert idlg_label(model, replay_update(model, theta, x, y, lr=0.01, steps=3).detach()) == label


def test_batch_label_counts_are_restored_exactly():
    model = lenet5(image_size=16)
    theta = dlg_init(model, 0)
    g = torch.Generator().manual_seed(1)
    X = torch.rand(32, 1, 16, 16, generator=g)
    y = torch.randint(0, 10, (32,), generator=g)
    update = replay_update(model, theta, X, y, lr=0.03, steps=3).detach()
    probe = torch.rand(32, 1, 16, 16, generator=g)
    counts = restore_label_counts(model, theta, update, 32, lr=0.03, steps=3, probe=probe)
    assert counts.sum() == 32
    assert torch.equal(counts, torch.bincount(y, minlength=10))
    assert torch.equal(labels_from_counts(counts), y.sort().values)


def test_label_restoration_needs_a_linear_last_layer():
    model = FLModel(torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(4, 3, bias=False)), "cross_entropy")
    with pytest.raises(ValueError, match="last layer"):
        idlg_label(model, torch.zeros(model.dim))


# ---- the replayed update -------------------------------------------------------------------------
def test_one_replayed_step_is_lr_times_the_gradient():
    model = small_mlp()
    X, y = data(7)
    theta = model.init_params(0)
    torch.testing.assert_close(replay_update(model, theta, X, y, lr=0.2, steps=1), 0.2 * model.grad(theta, X, y))


def test_replay_is_differentiable_in_the_images():
    model = small_mlp()
    X, y = data(4)
    X = X.requires_grad_(True)
    u = replay_update(model, model.init_params(0), X, y, lr=0.5, steps=3)
    (gx,) = torch.autograd.grad(u.square().sum(), X)
    assert gx.shape == X.shape and gx.abs().sum() > 0


def test_one_local_step_super_client_equals_fedavg():
    """Lemma 1's base case δ(1) = 0: with one local step the K-client FedAvg update is exactly the
    super-client's, whatever the split."""
    model = small_mlp()
    X, y = data(9)
    theta = model.init_params(1)
    single = replay_update(model, theta, X, y, lr=0.3, steps=1)
    fed = replay_update(model, theta, X, y, lr=0.3, steps=1, client_sizes=[2, 3, 4])
    torch.testing.assert_close(fed, single, rtol=0, atol=1e-15)
    fed3 = replay_update(model, theta, X, y, lr=0.3, steps=3, client_sizes=[2, 3, 4])
    assert (fed3 - replay_update(model, theta, X, y, lr=0.3, steps=3)).abs().max() > 1e-6
    with pytest.raises(ValueError, match="sum to the number"):
        replay_update(model, theta, X, y, lr=0.3, steps=1, client_sizes=[2, 3])


def test_replayed_fedavg_matches_run_fedavg():
    """The App. F replay of K clients is what run_fedavg computes (full batch, equal lr)."""
    model = small_mlp()
    X, y = data(10)
    theta = model.init_params(2)
    clients = [ClientData(X[:4], y[:4]), ClientData(X[4:], y[4:])]
    run = run_fedavg(model, clients, rounds=1, local=LocalSGD(lr=0.4, steps=3), theta0=theta)
    torch.testing.assert_close(replay_update(model, theta, X, y, lr=0.4, steps=3, client_sizes=[4, 6]),
                               theta - run.theta, rtol=0, atol=1e-14)


# ---- inversion -------------------------------------------------------------------------------------
def test_dlg_with_lbfgs_recovers_one_image_from_its_gradient():
    model = tiny_cnn()
    theta = dlg_init(model, 0)
    x = torch.rand(1, 1, 8, 8, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    g = model.grad(theta, x, torch.tensor([3]))
    label = idlg_label(model, g)
    assert label == 3
    rec = invert_update(model, theta, g, image_shape=(1, 8, 8), labels=torch.tensor([label]),
                        optimizer="lbfgs", attack_lr=1.0, iterations=5, clamp=False, seed=0)
    assert rec.loss[-1] < 1e-6 * rec.loss[0]
    assert (rec.images - x).square().mean() < 1e-6


def test_dlg_soft_labels_and_argument_errors():
    model = tiny_cnn()
    theta = dlg_init(model, 1)
    x = torch.rand(1, 1, 8, 8, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    g = model.grad(theta, x, torch.tensor([2]))
    rec = invert_update(model, theta, g, image_shape=(1, 8, 8), n_images=1, optimizer="lbfgs", iterations=5)
    assert rec.labels.tolist() == [2]
    with pytest.raises(ValueError, match="labels"):
        invert_update(model, theta, g, image_shape=(1, 8, 8))
    with pytest.raises(ValueError, match="n_images=2"):
        invert_update(model, theta, g, image_shape=(1, 8, 8), labels=torch.tensor([1]), n_images=2)
    with pytest.raises(ValueError, match="optimizer"):
        invert_update(model, theta, g, image_shape=(1, 8, 8), n_images=1, optimizer="sgd")


def test_inversion_is_reproducible_and_respects_the_box():
    model = lenet5(image_size=16)
    theta = dlg_init(model, 1)
    X = torch.rand(2, 1, 16, 16, generator=torch.Generator().manual_seed(0))
    y = torch.tensor([1, 4])
    target = replay_update(model, theta, X, y, lr=0.1, steps=2).detach()
    kw = dict(image_shape=(1, 16, 16), labels=y, lr=0.1, steps=2, iterations=5, scale_factor=4, seed=3)
    a, b = invert_update(model, theta, target, **kw), invert_update(model, theta, target, **kw)
    assert torch.equal(a.images, b.images) and a.loss == b.loss
    assert a.images.min() >= 0 and a.images.max() <= 1 and len(a.loss) == 5


# ---- curious client ------------------------------------------------------------------------------------
def test_curious_client_attack_end_to_end():
    model = lenet5(image_size=16)
    theta0 = dlg_init(model, 0)
    g = torch.Generator().manual_seed(0)
    clients = [ClientData(torch.rand(2, 1, 16, 16, generator=g), torch.randint(0, 10, (2,), generator=g))
               for _ in range(3)]
    run = run_fedavg(model, clients, rounds=2, local=LocalSGD(lr=0.03, steps=3), theta0=theta0)
    view = curious_client(run.log, attacker=0)
    X = torch.cat([c.X for c in clients])
    y = torch.cat([c.y for c in clients])
    rec = curious_client_attack(model, view, 0, image_shape=(1, 16, 16), local_lr=0.03, labels=y, iterations=3)
    assert rec.images.shape == X.shape and rec.settings["n_images"] == 6
    # labels restored from the update when not given; the attacker's own images as probes
    rec2 = curious_client_attack(model, view, 0, image_shape=(1, 16, 16), local_lr=0.03, iterations=2,
                                 probe=clients[0].X)
    assert torch.equal(rec2.labels, y.sort().values)
    assert -1 <= own_image_score(rec2, clients[0].X) <= 1
    with pytest.raises(ValueError, match="labels given"):
        curious_client_attack(model, view, 0, image_shape=(1, 16, 16), local_lr=0.03, labels=y[:5])
    with pytest.raises(KeyError, match="consecutive"):
        curious_client_attack(model, view, 1, image_shape=(1, 16, 16), local_lr=0.03, labels=y)


def test_wrong_server_lr_guess_rescales_the_target():
    """App. B: a guessed global learning rate scales the inverted target by true/guess."""
    model = small_mlp()
    X, y = data(4)
    run = run_fedavg(model, [ClientData(X[:2], y[:2]), ClientData(X[2:], y[2:])], rounds=2,
                     local=LocalSGD(lr=0.1, steps=1), server_lr=0.5, theta0=model.init_params(0))
    view = curious_client(run.log, 0)
    true = view.averaged_update(0)
    a, b = view.consecutive(0)
    torch.testing.assert_close((a - b) / 0.25, 2 * true)


# ---- Lemma 1 --------------------------------------------------------------------------------------------
def test_covariance_against_explicit_hessians():
    model = small_mlp(d_in=3, classes=2, hidden=3)
    X, y = data(6, d_in=3, classes=2, seed=4)
    theta = model.init_params(0)
    J, G = [], []
    for i in range(6):
        f = lambda th: model.loss(th, X[i:i + 1], y[i:i + 1])  # noqa: E731
        J.append(torch.autograd.functional.hessian(f, theta))
        G.append(torch.autograd.functional.jacobian(f, theta))
    J, G = torch.stack(J), torch.stack(G)  # (n, d, d), (n, d)
    # [Cov(J, g)]_a = Σ_b Cov(J_ab, g_b), population covariance
    expected = torch.einsum("nab,nb->a", J, G) / 6 - J.mean(0) @ G.mean(0)
    torch.testing.assert_close(jacobian_gradient_covariance(model, theta, X, y, chunk=4), expected)


@pytest.mark.parametrize("sizes", [[1, 1], [2, 1], [1, 1, 1]])
def test_lemma1_holds_exactly_at_leading_order_over_all_draws(sizes):
    """E[δ(τ)] / η² → τ(τ-1)/2 · (K-1)/N · Cov(J, g) as η → 0, with the expectation computed
    exactly: every one of the P^N equally likely i.i.d. draws from a population of P samples."""
    model = small_mlp(d_in=3, classes=2, hidden=3)
    P = 3
    Xp, yp = data(P, d_in=3, classes=2, seed=7)
    theta = model.init_params(0)
    cov = jacobian_gradient_covariance(model, theta, Xp, yp)
    N, K, tau, eta = sum(sizes), len(sizes), 3, 1e-4
    mean = torch.zeros(model.dim, dtype=torch.float64)
    for draw in itertools.product(range(P), repeat=N):
        idx = torch.tensor(draw)
        parts = [(Xp[i], yp[i]) for i in idx.split(sizes)]
        mean += super_client_divergence(model, theta, parts, lr=eta, steps=tau)
    mean /= P**N
    pred = lemma1_prediction(cov, lr=eta, steps=tau, n_clients=K, n_images=N)
    assert (mean - pred).norm() < 0.01 * pred.norm()


def test_divergence_vanishes_for_one_client_or_one_step():
    model = small_mlp()
    X, y = data(8)
    theta = model.init_params(0)
    assert super_client_divergence(model, theta, [(X, y)], lr=0.5, steps=5).abs().max() < 1e-15
    assert super_client_divergence(model, theta, [(X[:3], y[:3]), (X[3:], y[3:])], lr=0.5, steps=1).abs().max() < 1e-15
    assert lemma1_prediction(torch.ones(3), lr=0.1, steps=1, n_clients=4, n_images=8).abs().max() == 0
    with pytest.raises(ValueError, match="at least one"):
        super_client_divergence(model, theta, [], lr=0.1, steps=2)


def test_divergence_is_quadratic_in_tau_and_eta_at_small_eta():
    model = small_mlp()
    X, y = data(12, seed=3)
    theta = model.init_params(0)
    clients = [(X[:4], y[:4]), (X[4:8], y[4:8]), (X[8:], y[8:])]
    d = {tau: super_client_divergence(model, theta, clients, lr=1e-3, steps=tau).norm() for tau in (2, 3, 5)}
    assert (d[3] / d[2]).item() == pytest.approx(3, rel=1e-2)   # τ(τ-1)/2: 1 -> 3 -> 10
    assert (d[5] / d[2]).item() == pytest.approx(10, rel=1e-2)
    e1 = super_client_divergence(model, theta, clients, lr=1e-3, steps=3).norm()
    e2 = super_client_divergence(model, theta, clients, lr=2e-3, steps=3).norm()
    assert (e2 / e1).item() == pytest.approx(4, rel=1e-2)


def test_dlg_init_is_uniform_and_seeded():
    model = mlp(4, hidden=3, n_outputs=2, loss="cross_entropy")
    a, b = dlg_init(model, 0), dlg_init(model, 0)
    assert torch.equal(a, b) and a.abs().max() <= 0.5 and a.shape == (model.dim,)
    assert not torch.equal(a, dlg_init(model, 1))
    assert dlg_init(FLModel(LeNet5().double(), "cross_entropy"), 0).dtype == torch.float64


# ---- checks that bite: each equation against an independent reference ------------------------------
def _keys_bicubic_reference(z, out_h, out_w, a=-0.75):
    """Bicubic upsampling written from Keys (1981): cubic convolution kernel with a = -0.75 (the
    value of PyTorch and OpenCV), pixel-centre sampling (source x = (i + 0.5) s - 0.5) and
    replicated borders; separable in rows and columns. numpy, independent of torch."""
    import numpy as np

    def kernel(t):
        t = abs(t)
        if t <= 1:
            return (a + 2) * t**3 - (a + 3) * t**2 + 1
        if t < 2:
            return a * t**3 - 5 * a * t**2 + 8 * a * t - 4 * a
        return 0.0

    def matrix(n_in, n_out):
        M = np.zeros((n_out, n_in))
        for i in range(n_out):
            x = (i + 0.5) * n_in / n_out - 0.5
            x0 = int(np.floor(x))
            for j in range(x0 - 1, x0 + 3):
                M[i, min(max(j, 0), n_in - 1)] += kernel(x - j)
        return M

    z = np.asarray(z, dtype=np.float64)
    Mh, Mw = matrix(z.shape[-2], out_h), matrix(z.shape[-1], out_w)
    return np.einsum("ah,nchw,bw->ncab", Mh, z, Mw)


def test_decode_dummy_is_keys_bicubic_at_pixel_centres():
    """§4 (after Yue et al. 2023): the dummy is upsampled bicubically; against a numpy reference."""
    z = dummy_latent(2, (3, 28, 28), scale_factor=4, generator=torch.Generator().manual_seed(0)).double()
    ref = torch.from_numpy(_keys_bicubic_reference(z.numpy(), 28, 28))
    # both are the same finite sum of products in float64: agreement to ~1e-15, 1e-12 is generous
    torch.testing.assert_close(decode_dummy(z, (3, 28, 28)), ref, rtol=0, atol=1e-12)


def test_total_variation_counts_both_directions():
    edge = torch.zeros(1, 1, 4, 4)
    edge[..., 2:, :] = 1.0  # one horizontal edge: 4 of the 12 vertical differences are 1
    assert total_variation(edge).item() == pytest.approx(4 / 12)
    both = torch.zeros(1, 1, 4, 4)
    both[..., 2:, 2:] = 1.0  # a corner: 2 of 12 horizontal and 2 of 12 vertical differences
    assert total_variation(both).item() == pytest.approx(4 / 12)


def test_l2_distance_is_the_squared_norm():
    """DLG / Wilson eq. 3: D = ‖pred - target‖², not a mean nor an unsquared norm."""
    assert update_distance(torch.tensor([1.0, 0.0]), torch.tensor([0.0, 2.0])).item() == pytest.approx(5.0)
    a, b = torch.tensor([1.0, 2.0, 2.0]), torch.tensor([0.0, 0.0, 0.0])
    assert update_distance(a, b).item() == pytest.approx(9.0)
    # cosine: 1 - cos, so 2 for opposite vectors
    assert update_distance(a, -a, "cosine").item() == pytest.approx(2.0)


def test_dlg_init_is_centred():
    """U[-s, s]: mean 0 with standard deviation s/√3 per weight, so the mean of d weights lies
    within 5 s/√(3d) of 0 except with probability < 1e-6; both signs occur."""
    model = lenet5()
    th = dlg_init(model, 3).double()
    assert abs(th.mean().item()) < 5 * 0.5 / (3 * th.numel()) ** 0.5
    assert th.min() < -0.49 and th.max() > 0.49 and th.abs().max() <= 0.5


def _federation(server_lr=1.0, lr=0.3, tau=3, sizes=(2, 3)):
    model = lenet5(image_size=16)
    g = torch.Generator().manual_seed(4)
    clients = [ClientData(torch.rand(n, 1, 16, 16, generator=g), torch.randint(0, 10, (n,), generator=g)) for n in sizes]
    run = run_fedavg(model, clients, rounds=2, local=LocalSGD(lr=lr, steps=tau), server_lr=server_lr,
                     theta0=dlg_init(model, 0))
    return model, clients, run


def test_curious_client_target_is_the_weighted_average_of_the_clients_updates():
    """eq. 2: (W^t - W^{t+1}) / η_g = Σ_k N_k/N (θ - θ_k). The attack's first objective value
    (same dummy, L2) must be the one of inverting the true average, computed from the clients'
    messages the attacker never sees; with η_g = 0.5 a target multiplied by η_g instead of divided
    changes it by a factor ~4."""
    model, clients, run = _federation(server_lr=0.5, lr=0.03)
    N = sum(c.n for c in clients)
    hidden = sum(c.n / N * (e.sent - e.returned) for c, e in zip(clients, [run.log.exchange(0, k) for k in range(2)]))
    y = torch.cat([c.y for c in clients])
    kw = dict(image_shape=(1, 16, 16), labels=y, iterations=1, scale_factor=1, seed=2)
    rec = curious_client_attack(model, curious_client(run.log, 0), 0, local_lr=0.03, local_steps=3, **kw)
    ref = invert_update(model, run.log.exchange(0, 0).sent, hidden.detach(), lr=0.03, steps=3, **kw)
    assert rec.loss[0] == pytest.approx(ref.loss[0], rel=1e-4)  # float32 rounding of two routes to the same target


def test_curious_client_upper_bound_replays_the_true_clients():
    """App. F: with client_sizes the attack replays the K clients (eq. 2), not the super-client
    (eq. 3). With τ = 3 and η = 0.3 the two replays of the same dummy differ (Lemma 1), so the first
    objective values tell them apart."""
    model, clients, run = _federation()
    view = curious_client(run.log, 0)
    y = torch.cat([c.y for c in clients])
    kw = dict(image_shape=(1, 16, 16), labels=y, iterations=1, scale_factor=1, seed=2, local_lr=0.3, local_steps=3)
    upper = curious_client_attack(model, view, 0, client_sizes=[2, 3], **kw)
    sup = curious_client_attack(model, view, 0, **kw)
    theta, target = view.consecutive(0)[0], view.averaged_update(0)
    ref = invert_update(model, theta, target, image_shape=(1, 16, 16), labels=y, iterations=1, scale_factor=1, seed=2,
                        lr=0.3, steps=3, client_sizes=[2, 3])
    assert upper.loss[0] == pytest.approx(ref.loss[0], rel=1e-5)
    assert abs(upper.loss[0] - sup.loss[0]) > 1e-3 * upper.loss[0]
    # at the true images the upper bound's replay is FedAvg's update itself, the super-client's is not
    X = torch.cat([c.X for c in clients])
    true_upper = replay_update(model, theta, X, y, lr=0.3, steps=3, client_sizes=[2, 3]).detach()
    true_super = replay_update(model, theta, X, y, lr=0.3, steps=3).detach()
    # float32: the stored models are exact to ε per coordinate, so a difference of two models is off
    # by at most ε(‖θ^t‖ + ‖θ^{t+1}‖); the target and the replay are each such a difference
    theta_next = view.consecutive(0)[1]
    bound = 2 * torch.finfo(theta.dtype).eps * (theta.norm() + theta_next.norm())
    assert (true_upper - target).norm() <= bound
    assert (true_super - target).norm() > 100 * bound
