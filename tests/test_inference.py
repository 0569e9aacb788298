"""Attribute inference: the model-based AIA (Diana et al. eq. 3, eq. 4, Prop. 1), the
gradient-based AIA (eq. 2) and the optimal local model (Model-w-O)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from flprivacy import ClientData, LocalSGD, lenet5, linear_regression, logistic_regression, mlp, run_fedavg
from flprivacy.stack import LinearStack
from flprivacy.models import FLModel
from flprivacy.attacks.gradient_aia import GradientAIAResult, GradientObjective, first_rounds_sets, gradient_aia
from flprivacy.attacks.model_based_aia import aia_accuracy, candidate_losses, model_based_accuracy, model_based_aia, two_step_decoder
from flprivacy.data.attributes import SensitiveAttribute
from flprivacy.optimum import optimal_local_model, optimal_local_models
from flprivacy.bounds import aia_accuracy_lower_bound
from flprivacy.federation import ClientMessages


def test_noiseless_linear_model_recovers_the_attribute():
    g = torch.Generator().manual_seed(0)
    X = torch.rand(200, 4, generator=g, dtype=torch.float64)
    X[:, 2] = (X[:, 2] > 0.5).double()
    model = linear_regression(4)
    theta = torch.tensor([1.0, -2.0, 3.0, 0.5, 0.1], dtype=torch.float64)
    y = model.forward(theta, X).squeeze(-1)
    pred = model_based_aia(model, theta, X, y, [2], torch.tensor([[0.0], [1.0]]))
    assert aia_accuracy(pred, X[:, 2].long()) == 1.0


def test_categorical_attribute_and_neural_model():
    model = mlp(5, 8, dtype=torch.float64)
    theta = model.init_params(0)
    X = torch.rand(30, 5, dtype=torch.float64)
    onehot = torch.eye(3, dtype=torch.float64)
    true = torch.randint(0, 3, (30,))
    X[:, 2:5] = onehot[true]
    y = model.forward(theta, X).squeeze(-1)
    pred = model_based_aia(model, theta, X, y, [2, 3, 4], onehot)
    # brute force reference
    losses = torch.stack([model.per_sample_loss(theta, torch.cat([X[:, :2], onehot[k].expand(30, 3)], 1), y)
                          for k in range(3)])
    assert torch.equal(pred, losses.argmin(0))
    assert torch.equal(pred, true)  # noiseless targets of the same model: exact recovery


def test_bad_candidates_shape():
    model = linear_regression(3)
    with pytest.raises(ValueError, match="candidates must have shape"):
        model_based_aia(model, model.init_params(), torch.zeros(4, 3), torch.zeros(4), [1], torch.zeros(2, 2))


def test_many_models_at_once_equal_one_at_a_time():
    model = mlp(6, 16)
    X = torch.randn(40, 6)
    X[:, 1] = (X[:, 1] > 0).float()
    y = torch.randn(40)
    att = SensitiveAttribute.binary(1)
    thetas = torch.stack([model.init_params(i) for i in range(5)])
    batch = candidate_losses(model, thetas, X, y, att)
    loop = torch.stack([candidate_losses(model, t, X, y, att) for t in thetas])
    torch.testing.assert_close(batch, loop, rtol=1e-5, atol=1e-5)
    acc = model_based_accuracy(model, thetas, X, y, att)
    assert acc.shape == (5,) and float(acc[2]) == pytest.approx(model_based_accuracy(model, thetas[2], X, y, att))


def test_model_based_aia_on_a_classifier():
    model = logistic_regression(3, 2, dtype=torch.float64)
    theta = torch.zeros(model.dim, dtype=torch.float64)
    theta[0 * 3 + 0], theta[1 * 3 + 0] = -4.0, 4.0  # class 1 iff the sensitive feature is large
    X = torch.zeros(10, 3, dtype=torch.float64)
    X[5:, 0] = 1.0
    y = torch.tensor([0] * 5 + [1] * 5)
    att = SensitiveAttribute.binary(0)
    assert model_based_accuracy(model, theta, X, y, att) == 1.0  # the label gives the attribute away


def test_sensitive_attribute_helpers_and_errors():
    X = torch.tensor([[0.5, 1.0, 0.0], [0.2, 0.0, 1.0], [0.1, 0.0, 0.0]])
    att = SensitiveAttribute((1, 2), torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]]), "region")
    assert att.true_index(X).tolist() == [1, 2, 0]
    Xc = att.expand(X)
    assert Xc.shape == (9, 3) and att.true_index(Xc).tolist() == [0] * 3 + [1] * 3 + [2] * 3
    assert torch.equal(att.fill(X, torch.tensor([1, 2, 0])), X)
    with pytest.raises(ValueError, match="none of the candidates"):
        att.true_index(torch.tensor([[0.0, 1.0, 1.0]]))
    with pytest.raises(ValueError, match="out of range"):
        SensitiveAttribute.binary(5).check(X)
    with pytest.raises(ValueError, match="shape"):
        SensitiveAttribute((0,), torch.tensor([[0.0]]))
    assert SensitiveAttribute.one_hot([0, 1, 2]).n_values == 3


# ---- eq. 4 and Prop. 1 -------------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), noise=st.floats(0.01, 2.0), perturb=st.floats(0.0, 1.0))
def test_prop1_bound_holds_for_any_least_squares_model(seed, noise, perturb):
    """Prop. 1: accuracy >= 1 - 4 E_c / θ[s]^2 for *any* model θ, not only the optimum."""
    g = torch.Generator().manual_seed(seed)
    n, d = 100, 4
    X = torch.rand(n, d, generator=g, dtype=torch.float64)
    X[:, 0] = (X[:, 0] > 0.5).double()
    model = linear_regression(d)
    theta_true = torch.randn(d + 1, generator=g, dtype=torch.float64) * 2
    y = model.forward(theta_true, X).squeeze(-1) + noise * torch.randn(n, generator=g, dtype=torch.float64)
    theta = theta_true + perturb * torch.randn(d + 1, generator=g, dtype=torch.float64)
    acc = aia_accuracy(model_based_aia(model, theta, X, y, [0], torch.tensor([[0.0], [1.0]])), X[:, 0].long())
    mse = model.loss(theta, X, y).item()
    assert acc >= aia_accuracy_lower_bound(mse, theta[0].item()) - 1e-12


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), col=st.integers(0, 3))
def test_two_step_decoder_equals_model_based_aia(seed, col):
    """Eq. 4: rounding the real-valued fit s̃ = (y - Pθ_p - b)/θ[s] at 1/2 is eq. 3."""
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(80, 4, generator=g, dtype=torch.float64)
    X[:, col] = (X[:, col] > 0).double()
    model = linear_regression(4)
    theta = torch.randn(5, generator=g, dtype=torch.float64)
    y = torch.randn(80, generator=g, dtype=torch.float64) * 3
    s_tilde, s_hat = two_step_decoder(theta, X, y, col)
    pred = model_based_aia(model, theta, X, y, [col], torch.tensor([[0.0], [1.0]]))
    tie = ((s_tilde - 0.5).abs() < 1e-9)
    assert torch.equal(s_hat[~tie], pred[~tie])
    # s̃ fits every sample exactly: the residual with s̃ is zero
    Xt = X.clone()
    Xt[:, col] = s_tilde
    torch.testing.assert_close(model.forward(theta, Xt).squeeze(-1), y)


def test_two_step_decoder_errors():
    with pytest.raises(ValueError, match="θ\\[s\\] = 0"):
        two_step_decoder(torch.tensor([0.0, 1.0, 0.0], dtype=torch.float64), torch.zeros(3, 2), torch.zeros(3), 0)
    with pytest.raises(ValueError, match="linear model"):
        two_step_decoder(torch.zeros(7), torch.zeros(3, 2), torch.zeros(3), 0)


def test_prop1_bound_is_attained():
    """Residuals of θ[s]/2 (a hair above) on a fraction q of samples: accuracy = bound = 1 - q."""
    n, q, ts = 200, 0.3, 2.0
    g = torch.Generator().manual_seed(1)
    X = torch.randn(n, 3, generator=g, dtype=torch.float64)
    X[:, 0] = 0.0  # every true attribute is 0
    theta = torch.tensor([ts, 0.5, -1.0, 0.2], dtype=torch.float64)
    model = linear_regression(3)
    e = torch.zeros(n, dtype=torch.float64)
    e[: int(q * n)] = ts / 2 * (1 + 1e-9)  # just past the decision threshold: decoded as 1, wrongly
    y = model.forward(theta, X).squeeze(-1) + e
    _, s_hat = two_step_decoder(theta, X, y, 0)
    acc = float((s_hat == 0).double().mean())
    bound = aia_accuracy_lower_bound(model.loss(theta, X, y).item(), ts)
    assert acc == pytest.approx(1 - q) and bound == pytest.approx(1 - q, abs=1e-6) and acc >= bound


# ---- the batched engine -------------------------------------------------------------------------
@pytest.mark.parametrize("make", [lambda: mlp(5, 7, dtype=torch.float64), lambda: linear_regression(5),
                                  lambda: logistic_regression(5, 3, dtype=torch.float64),
                                  lambda: mlp(5, 7, n_outputs=3, loss="cross_entropy", dtype=torch.float64)])
def test_linear_stack_matches_flmodel(make):
    model = make()
    stack = LinearStack(model)
    X = torch.randn(9, 5, dtype=torch.float64)
    y = torch.randn(9, dtype=torch.float64) if model.loss_name == "mse" else torch.randint(0, 3, (9,))
    thetas = torch.stack([model.init_params(i) for i in range(3)])
    loss, grad = stack.loss_and_grad(thetas, X, y)
    for i in range(3):
        torch.testing.assert_close(loss[i], model.loss(thetas[i], X, y))
        torch.testing.assert_close(grad[i], model.grad(thetas[i], X, y))
    # padding with masked rows changes nothing
    Xp = torch.cat([X, torch.randn(4, 5, dtype=torch.float64)]).expand(3, -1, -1)
    yp = torch.cat([y, y[:4]]).expand(3, -1)
    mask = torch.cat([torch.ones(9), torch.zeros(4)]).to(torch.float64).expand(3, -1)
    loss2, grad2 = stack.loss_and_grad(thetas, Xp, yp, mask)
    torch.testing.assert_close(loss2, loss)
    torch.testing.assert_close(grad2, grad)


def test_unsupported_architecture_is_named():
    with pytest.raises(NotImplementedError, match="Conv2d|LeNet5"):
        LinearStack(lenet5())


# ---- eq. 2: the gradient-based AIA --------------------------------------------------------------
def test_first_rounds_sets():
    sizes = [len(s) for s in first_rounds_sets(range(100))]
    assert sizes == [1, 5, 10, 20, 50, 100]
    assert [len(s) for s in first_rounds_sets(range(10))] == [1, 2, 5, 10]  # duplicates removed
    assert first_rounds_sets([7, 9, 12])[0] == (7,)
    with pytest.raises(ValueError):
        first_rounds_sets([])


@pytest.mark.parametrize("make", [lambda: mlp(5, 7, dtype=torch.float64), lambda: linear_regression(5),
                                  lambda: logistic_regression(5, 3, dtype=torch.float64),
                                  lambda: mlp(5, 7, n_outputs=3, loss="cross_entropy", dtype=torch.float64),
                                  lambda: FLModel(torch.nn.Sequential(
                                      torch.nn.Linear(5, 7, dtype=torch.float64), torch.nn.ReLU(),
                                      torch.nn.Linear(7, 6, dtype=torch.float64), torch.nn.ReLU(),
                                      torch.nn.Linear(6, 1, dtype=torch.float64)), "mse")])
@pytest.mark.parametrize("first_layer", ["outer", "gram"])
def test_gradient_objective_matches_autograd_brute_force(make, first_layer):
    """Σ_t (1 - cos(Σ_j W_j g_j^t, p_t)) and its gradient in W, against per-sample gradients."""
    torch.manual_seed(0)
    model = make()
    n, T = 6, 4
    X = torch.randn(n, 5, dtype=torch.float64)
    X[:, 1] = (X[:, 1] > 0).double()
    y = torch.randn(n, dtype=torch.float64) if model.loss_name == "mse" else torch.randint(0, 3, (n,))
    att = SensitiveAttribute.binary(1)
    sent = torch.stack([model.init_params(i) for i in range(T)])
    pseudo = torch.randn(T, model.dim, dtype=torch.float64)
    sets = [torch.tensor([0]), torch.tensor([0, 1, 2]), torch.tensor([0, 1, 2, 3])]
    obj = GradientObjective(model, sent, pseudo, X, y, att, sets, max_cache_mb=100, first_layer=first_layer)
    W = torch.rand(3, 2 * n, dtype=torch.float64)
    value, _, dW = obj.evaluate(W, torch.arange(3), torch.arange(3))
    Xc, yc = att.expand(X), y.repeat(2)
    J = [torch.stack([model.grad(sent[t], Xc[j:j + 1], yc[j:j + 1]) for j in range(2 * n)]) for t in range(T)]
    Wr = W.clone().requires_grad_(True)
    ref = torch.stack([sum(1 - torch.nn.functional.cosine_similarity(Wr[k] @ J[t], pseudo[t], dim=0)
                           for t in sets[k].tolist()) for k in range(3)])
    (g,) = torch.autograd.grad(ref.sum(), Wr)
    torch.testing.assert_close(value, ref.detach())
    torch.testing.assert_close(dW, g)


def _toy_federation(n=60, rounds=8, seed=0):
    """One client whose target depends strongly on a binary attribute."""
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, 4, generator=g)
    X[:, 0] = (torch.rand(n, generator=g) < 0.5).float()
    y = 3.0 * X[:, 0] + X[:, 1] - X[:, 2] + 0.05 * torch.randn(n, generator=g)
    model = mlp(4, 16)
    run = run_fedavg(model, [ClientData(X, y)], rounds=rounds, local=LocalSGD(lr=0.05, batch_size=8), seed=seed)
    return model, run, X, y


def test_gradient_aia_recovers_a_strong_attribute_and_selects():
    model, run, X, y = _toy_federation()
    att = SensitiveAttribute.binary(0)
    truth = att.true_index(X)
    res = gradient_aia(model, run.log.client_messages(0), X, y, att, learning_rates=(1e2, 1e4), iterations=60, seed=1)
    S = len(first_rounds_sets(range(8)))
    assert res.predictions.shape == (S, 2, 60) and res.cosine.shape == (S, 2)
    acc = res.accuracy(truth)
    assert float(acc.max()) >= 0.9  # the pseudo-gradients reveal the attribute of a small client
    s, l = res.select_by_accuracy(truth)
    assert float(acc[s, l]) == float(acc.max())
    s, l = res.select_by_cosine()
    assert float(res.cosine[s, l]) == float(res.cosine.max())
    assert torch.equal(res.grad(), res.predictions[s, l])
    both = GradientAIAResult.merge(res, res)
    assert len(both.round_sets) == 2 * S and both.predictions.shape[0] == 2 * S
    # early stopping runs fewer iterations
    early = gradient_aia(model, run.log.client_messages(0), X, y, att, learning_rates=(1e2, 1e4), iterations=60,
                         seed=1, patience=3, tolerance=0.05)
    assert int(early.iterations.min()) < 60


def test_gradient_aia_is_reproducible_and_checks_rounds():
    model, run, X, y = _toy_federation(rounds=4)
    att = SensitiveAttribute.binary(0)
    msgs = run.log.client_messages(0)
    a = gradient_aia(model, msgs, X, y, att, learning_rates=(1e3,), iterations=10, seed=5)
    b = gradient_aia(model, msgs, X, y, att, learning_rates=(1e3,), iterations=10, seed=5)
    assert torch.equal(a.predictions, b.predictions)
    with pytest.raises(ValueError, match="not in the messages"):
        gradient_aia(model, msgs, X, y, att, round_sets=[(0, 17)])
    empty = ClientMessages(0, torch.zeros(0, dtype=torch.long), torch.zeros(0, model.dim), torch.zeros(0, model.dim),
                           torch.zeros(0, dtype=torch.bool))
    with pytest.raises(ValueError, match="at least one"):
        gradient_aia(model, empty, X, y, att)


def test_gradient_aia_records_the_authors_statistic_at_the_last_gumbel_sample():
    """sample_cosine is the mean over the set's rounds of CosSim(∇L(θ^t; s), θ^t - θ_c^t) at the
    hard Gumbel sample s of the last iteration (fedkit-learn's ``run_gb_aia.py`` keeps that loss
    / |T|). With one iteration that sample is argmax(logits + Gumbel noise) of the first draws
    of the seed's generator, so it is recomputed here by brute force with autograd (float64:
    equal to rounding)."""
    model, run, X, y = _toy_federation(n=20, rounds=3)
    X, y = X.double(), y.double()
    model = mlp(4, 16, dtype=torch.float64)
    run = run_fedavg(model, [ClientData(X, y)], rounds=3, local=LocalSGD(lr=0.05, batch_size=8), seed=0)
    att = SensitiveAttribute.binary(0)
    msgs = run.log.client_messages(0)
    sets = [(0,), (0, 1, 2)]
    res = gradient_aia(model, msgs, X, y, att, round_sets=sets, learning_rates=(1e3,), iterations=1, seed=4)
    gen = torch.Generator().manual_seed(4)
    logits = torch.randn(2, 20, 2, generator=gen, dtype=torch.float64)
    u = torch.rand(2, 20, 2, generator=gen, dtype=torch.float64).clamp_(1e-10, 1 - 1e-10)
    sample = (logits - torch.log(-torch.log(u))).argmax(-1)  # (K, n) hard Gumbel sample, temperature 1
    where = {int(r): i for i, r in enumerate(msgs.rounds.tolist())}
    for k, rounds in enumerate(sets):
        Xs = X.clone()
        Xs[:, 0] = sample[k].double()  # binary attribute: index 0 -> 0.0, 1 -> 1.0
        cos = [torch.nn.functional.cosine_similarity(model.grad(msgs.sent[where[t]], Xs, y),
                                                     msgs.pseudo_gradients[where[t]], dim=0) for t in rounds]
        assert float(res.sample_cosine[k, 0]) == pytest.approx(float(torch.stack(cos).mean()), abs=1e-9)
    s, l = res.select_by_sample_cosine()
    assert float(res.sample_cosine[s, l]) == float(res.sample_cosine.max())
    part = res.subset([1])
    assert part.round_sets == [sets[1]] and torch.equal(part.sample_cosine, res.sample_cosine[1:])
    assert torch.equal(GradientAIAResult.merge(res, res).sample_cosine, torch.cat([res.sample_cosine] * 2))


# ---- Model-w-O ----------------------------------------------------------------------------------
def test_optimal_local_model_reaches_the_least_squares_solution():
    g = torch.Generator().manual_seed(0)
    X = torch.randn(50, 3, generator=g, dtype=torch.float64)
    y = X @ torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64) + 0.3 + 0.1 * torch.randn(50, generator=g,
                                                                                       dtype=torch.float64)
    model = linear_regression(3)
    A = torch.cat([X, torch.ones(50, 1, dtype=torch.float64)], 1)
    exact = torch.linalg.lstsq(A, y.unsqueeze(1)).solution.squeeze(1)
    res = optimal_local_model(model, X, y, torch.zeros(4, dtype=torch.float64), max_steps=4000, tol=1e-9)
    assert res.loss == pytest.approx(model.loss(exact, X, y).item(), rel=1e-6)
    torch.testing.assert_close(res.theta, exact, atol=1e-4, rtol=1e-4)


def test_optimal_local_models_of_several_clients_match_one_by_one():
    g = torch.Generator().manual_seed(3)
    model = mlp(3, 8)
    data = [(torch.randn(n, 3, generator=g), torch.randn(n, generator=g)) for n in (7, 20, 13)]
    starts = [model.init_params(i) for i in range(3)]
    kw = dict(max_steps=40, pilot_steps=10, learning_rates=(1e-3, 1e-2))
    together = optimal_local_models(model, data, starts, **kw)
    alone = [optimal_local_model(model, X, y, s, **kw) for (X, y), s in zip(data, starts)]
    for a, b, (X, y), s in zip(together, alone, data, starts):
        assert a.loss == pytest.approx(b.loss, rel=1e-3)
        assert a.loss < float(model.loss(s, X, y))
    with pytest.raises(ValueError, match="one start tensor per client"):
        optimal_local_models(model, data, starts[:2])


def test_gradient_aia_gram_and_outer_paths_agree(monkeypatch):
    """eq. 2 / App. B.5 end to end: the first layer's Gram identity and the direct outer product
    give the same predictions in float64 (rounding ~1e-16 cannot flip an argmax here)."""
    import flprivacy.attacks.gradient_aia as ga
    g = torch.Generator().manual_seed(0)
    X = torch.randn(40, 4, generator=g, dtype=torch.float64)
    X[:, 0] = (X[:, 0] > 0).double()
    y = 3.0 * X[:, 0] + X[:, 1]
    model = mlp(4, 16, dtype=torch.float64)
    run = run_fedavg(model, [ClientData(X, y)], rounds=6, local=LocalSGD(lr=0.05, batch_size=8), seed=0)
    att = SensitiveAttribute.binary(0)
    orig = ga.GradientObjective.__init__
    out = {}
    for path in ("outer", "gram"):
        monkeypatch.setattr(ga.GradientObjective, "__init__",
                            lambda self, *a, _p=path, **k: orig(self, *a, **k, first_layer=_p))
        out[path] = ga.gradient_aia(model, run.log.client_messages(0), X, y, att, iterations=40, seed=3)
    assert torch.equal(out["outer"].predictions, out["gram"].predictions)
    torch.testing.assert_close(out["outer"].cosine, out["gram"].cosine, rtol=1e-10, atol=1e-12)
    monkeypatch.setattr(ga.GradientObjective, "__init__", orig)
    with pytest.raises(ValueError, match="first_layer"):
        ga.GradientObjective(model, run.log.client_messages(0).sent, run.log.client_messages(0).pseudo_gradients,
                             X, y, att, [torch.tensor([0])], 10, first_layer="dense")
