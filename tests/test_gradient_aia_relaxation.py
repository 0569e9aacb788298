"""The authors' relaxation of the gradient-based AIA (Diana et al. 2025 eq. 2, App. B.5; fedkit-learn's
``AttributeInferenceAttack``): the straight-through Gumbel-softmax sample written into the input.

Everything is float64, so agreements are to rounding (1e-9 relative on sums of a few hundred
products), not to a tuned tolerance.
"""

from __future__ import annotations

import pytest
import torch

from flprivacy import ClientData, LocalSGD, linear_regression, mlp, run_fedavg
from flprivacy.attacks.gradient_aia import (AnalyticInputObjective, GradientAIAResult, GradientObjective,
                                            InputRelaxationObjective,
                                            gradient_aia)
from flprivacy.config import generator
from flprivacy.data.attributes import SensitiveAttribute

N, P, H = 20, 4, 5


def _problem(attribute: SensitiveAttribute, seed: int = 3, arch: str = "mlp"):
    torch.manual_seed(0)
    net = mlp(P, H, dtype=torch.float64) if arch == "mlp" else linear_regression(P, dtype=torch.float64)
    g = generator(seed)
    X = torch.randn(N, P, generator=g, dtype=torch.float64)
    cols = list(attribute.columns)
    X[:, cols] = attribute.candidates[torch.randint(attribute.n_values, (N,), generator=g)]
    y = torch.randn(N, generator=g, dtype=torch.float64)
    clients = [ClientData(X, y), ClientData(X.flip(0), y.flip(0))]
    run = run_fedavg(net, clients, rounds=4, local=LocalSGD(lr=0.05, epochs=1, batch_size=5), seed=1)
    return net, X, y, run.log.client_messages(0)


def _brute_force(net, msgs, X, y, att, Z, positions):
    """Σ_t (1 - cos(∇_θ L(θ^t; x̃), θ^t - θ_c^t)) with x̃_i = Σ_c Z_ic x_i(c), by FLModel.grad (the
    nn.Module route, not LinearStack), differentiable in Z."""
    Xc = att.expand(X).view(att.n_values, N, P)
    Xt = torch.einsum("nc,cnp->np", Z, Xc)
    total = torch.zeros((), dtype=torch.float64)
    for t in positions:
        G = net.grad(msgs.sent[t], Xt, y, create_graph=True)
        total = total + 1 - torch.nn.functional.cosine_similarity(G, msgs.pseudo_gradients[t], dim=0)
    return total


@pytest.mark.parametrize("att", [SensitiveAttribute.binary(1), SensitiveAttribute.one_hot([1, 2, 3])],
                         ids=["binary", "one-hot"])
def test_input_relaxation_gradient_is_autograd_and_cosine_matches_mixture(att):
    net, X, y, msgs = _problem(att)
    C, K = att.n_values, 3
    sets = [torch.arange(3), torch.tensor([1])]
    set_of_config = torch.tensor([0, 1, 0])
    g = generator(7)
    Zsoft = torch.softmax(torch.randn(K, N, C, generator=g, dtype=torch.float64), -1)
    Zhard = torch.nn.functional.one_hot(Zsoft.argmax(-1), C).double()
    inp = InputRelaxationObjective(net, msgs.sent, msgs.pseudo_gradients, X, y, att, sets, chunk_elems=N * 40)
    assert inp.pairs_per_chunk < 7  # the 7 (round, configuration) pairs span several chunks
    mix = GradientObjective(net, msgs.sent, msgs.pseudo_gradients, X, y, att, sets, 64)
    for Z in (Zhard, Zsoft):  # a hard sample (what the iterations evaluate) and a soft one
        W = Z.permute(0, 2, 1).reshape(K, C * N) / N
        obj, cos_sum, dW = inp.evaluate(W, torch.arange(K), set_of_config)
        for k in range(K):
            Zk = Z[k].clone().requires_grad_(True)
            ref = _brute_force(net, msgs, X, y, att, Zk, sets[set_of_config[k]].tolist())
            (dZ,) = torch.autograd.grad(ref, Zk)
            assert torch.allclose(obj[k], ref.detach(), rtol=1e-10, atol=1e-12)
            assert torch.allclose(obj[k] + cos_sum[k], torch.tensor(float(len(sets[set_of_config[k]])),
                                                                     dtype=torch.float64), rtol=1e-12)
            # ∂/∂W = n ∂/∂Z (W = Z/n), candidate-major
            assert torch.allclose(dW[k].view(C, N).T / N, dZ, rtol=1e-9, atol=1e-12)
    # at a one-hot sample both relaxations evaluate the gradient at x with that attribute
    W = Zhard.permute(0, 2, 1).reshape(K, C * N) / N
    o_inp, c_inp, d_inp = inp.evaluate(W, torch.arange(K), set_of_config)
    o_mix, c_mix, d_mix = mix.evaluate(W, torch.arange(K), set_of_config)
    assert torch.allclose(c_inp, c_mix, rtol=1e-10, atol=1e-12)
    assert torch.allclose(o_inp, o_mix, rtol=1e-10, atol=1e-12)
    assert not torch.allclose(d_inp, d_mix, rtol=1e-3)  # ... but not their derivatives in Z


def _replay_softmax(net, msgs, X, y, att, lrs):
    """Ours: C logits, C Gumbel draws, softmax; straight-through one-hot written into the input."""
    C = att.n_values
    gen = generator(11)
    logits0 = torch.randn(len(lrs), N, C, generator=gen, dtype=torch.float64)
    u = torch.rand(len(lrs), N, C, generator=gen, dtype=torch.float64).clamp_(1e-10, 1 - 1e-10)
    a = logits0.clone().requires_grad_(True)
    soft = torch.softmax(a - torch.log(-torch.log(u)), -1)
    z = torch.nn.functional.one_hot(soft.argmax(-1), C).double() + soft - soft.detach()
    total = sum(_brute_force(net, msgs, X, y, att, z[k], range(3)) for k in range(len(lrs)))
    total.backward()
    return (logits0 - lrs.view(-1, 1, 1) * a.grad).argmax(-1), logits0.argmax(-1), (logits0[..., 1] - logits0[..., 0], a.grad[..., 1] - a.grad[..., 0])


def _replay_sigmoid(net, msgs, X, y, att, lrs):
    """The authors' binary sampler (fedkit-learn ``gumbel_softmax(binary=True, hard=True)``): one
    logit ℓ ~ N(0, 1), G = -log(E) with E ~ Exp(1) (here -log(-log u)), s = sigmoid(ℓ + G), value
    1[s > 1/2] + s - s.detach() written into the sensitive column; inferred value 1[ℓ > 0]."""
    gen = generator(11)
    ell0 = torch.randn(len(lrs), N, 1, generator=gen, dtype=torch.float64)[..., 0]
    u = torch.rand(len(lrs), N, 1, generator=gen, dtype=torch.float64).clamp_(1e-10, 1 - 1e-10)[..., 0]
    a = ell0.clone().requires_grad_(True)
    s = torch.sigmoid(a - torch.log(-torch.log(u)))
    v = (s > 0.5).double() + s - s.detach()
    total = sum(_brute_force(net, msgs, X, y, att, torch.stack([1 - v[k], v[k]], -1), range(3)) for k in range(len(lrs)))
    total.backward()
    return (ell0 - lrs.view(-1, 1) * a.grad > 0).long(), (ell0 > 0).long(), (ell0, a.grad)


@pytest.mark.parametrize("arch", ["mlp", "linear"])
@pytest.mark.parametrize("sampler", ["softmax", "sigmoid"])
def test_gradient_aia_input_iteration_is_autograd_on_the_logits(sampler, arch):
    """One SGD iteration of gradient_aia(relaxation="input") = autograd from the logits through the
    straight-through Gumbel sample (g = -log(-log u), τ = 1), the input x̃ and the model, for
    learning rates around the scale at which attributes flip, with our softmax sampler and the
    authors' sigmoid one; the mixture differs. The MLP runs the hand-written derivative
    (AnalyticInputObjective), the linear model autograd (InputRelaxationObjective)."""
    att = SensitiveAttribute.binary(1)
    net, X, y, msgs = _problem(att, seed=5, arch=arch)
    K, rounds = 6, msgs.rounds[:3].tolist()
    replay = _replay_softmax if sampler == "softmax" else _replay_sigmoid
    _, _, (margin, step) = replay(net, msgs, X, y, att, torch.ones(1))
    scale = (margin.abs().median() / step.abs().median()).item()
    lrs = scale * torch.logspace(-1, 1, K, dtype=torch.float64)
    ref, before, _ = replay(net, msgs, X, y, att, lrs)
    kw = dict(round_sets=[rounds], learning_rates=lrs.tolist(), iterations=1, seed=11, sampler=sampler)
    res = gradient_aia(net, msgs, X, y, att, relaxation="input", **kw)
    assert (res.relaxation, res.sampler) == ("input", sampler)
    assert torch.equal(res.predictions[0], ref)
    assert not torch.equal(ref, before)  # the step flips some attributes
    mix = gradient_aia(net, msgs, X, y, att, **kw)
    assert mix.relaxation == "mixture"
    assert not torch.equal(mix.predictions, res.predictions)
    # the final cosine is the same function of the (hard) predictions under both relaxations
    same = mix.predictions == res.predictions
    assert torch.allclose(mix.cosine[same.all(-1)], res.cosine[same.all(-1)], rtol=1e-10)


def test_relaxation_is_checked_and_kept_by_merge():
    att = SensitiveAttribute.binary(1)
    net, X, y, msgs = _problem(att)
    with pytest.raises(ValueError, match="relaxation.*mixture.*input"):
        gradient_aia(net, msgs, X, y, att, relaxation="soft", iterations=1)
    a = gradient_aia(net, msgs, X, y, att, learning_rates=(1e2,), iterations=2, relaxation="input")
    b = gradient_aia(net, msgs, X, y, att, learning_rates=(1e2,), iterations=2)
    assert GradientAIAResult.merge(a, a).relaxation == "input" and a.subset([0]).relaxation == "input"
    with pytest.raises(ValueError, match="relaxation"):
        GradientAIAResult.merge(a, b)
    with pytest.raises(ValueError, match="sampler.*softmax.*sigmoid"):
        gradient_aia(net, msgs, X, y, att, sampler="gumbel", iterations=1)
    three = SensitiveAttribute.one_hot([1, 2, 3])
    with pytest.raises(ValueError, match="sampler='sigmoid'.*3 values"):
        gradient_aia(net, msgs, X, y, three, sampler="sigmoid", iterations=1)
    c = gradient_aia(net, msgs, X, y, att, learning_rates=(1e2,), iterations=2, sampler="sigmoid")
    assert c.sampler == "sigmoid" and GradientAIAResult.merge(c, c).sampler == "sigmoid"
    with pytest.raises(ValueError, match="sampler"):
        GradientAIAResult.merge(b, c)


def _messages(net, X, y):
    clients = [ClientData(X, y), ClientData(X.flip(0), y.flip(0))]
    return run_fedavg(net, clients, rounds=5, local=LocalSGD(lr=0.05, epochs=1, batch_size=5), seed=1).log.client_messages(0)


@pytest.mark.parametrize("loss", ["mse", "bce"])
@pytest.mark.parametrize("att", [SensitiveAttribute.binary(1), SensitiveAttribute.one_hot([1, 2, 3])],
                         ids=["binary", "one-hot"])
@pytest.mark.parametrize("cache_mb", [64, 0], ids=["cached", "recomputed"])
def test_analytic_input_derivative_is_autograd(loss, att, cache_mb):
    """AnalyticInputObjective (the hand-written derivative gradient_aia runs for an MLP) against
    InputRelaxationObjective (autograd through the input, itself checked against FLModel.grad above):
    the same objective and cosine, and the same differences ∂/∂Z_ic - ∂/∂Z_i0 (all the softmax's
    straight-through step uses), at one-hot samples, over several chunks of rounds, in float64."""
    torch.manual_seed(0)
    net = mlp(P, H, loss=loss, dtype=torch.float64)
    g = generator(3)
    X = torch.randn(N, P, generator=g, dtype=torch.float64)
    X[:, list(att.columns)] = att.candidates[torch.randint(att.n_values, (N,), generator=g)].double()
    y = torch.randn(N, generator=g, dtype=torch.float64) if loss == "mse" else (torch.rand(N, generator=g) > 0.5).double()
    msgs = _messages(net, X, y)
    C, K = att.n_values, 4
    sets = [torch.arange(5), torch.tensor([1, 3]), torch.tensor([4])]
    set_of_config = torch.tensor([0, 1, 2, 0])
    Z = torch.nn.functional.one_hot(torch.randint(C, (K, N), generator=g), C).double()
    W = Z.permute(0, 2, 1).reshape(K, C * N) / N
    ref = InputRelaxationObjective(net, msgs.sent, msgs.pseudo_gradients, X, y, att, sets)
    fast = AnalyticInputObjective(net, msgs.sent, msgs.pseudo_gradients, X, y, att, sets, cache_mb,
                                  chunk_elems=N * 40)
    assert fast.cache == (cache_mb > 0) and max(len(fast._chunks(grp)) for grp in fast.groups) > 1
    for _ in range(2):  # the second evaluation reads the cached (or recomputes the) per-round statistics
        o_ref, c_ref, d_ref = ref.evaluate(W, torch.arange(K), set_of_config)
        o_fast, c_fast, d_fast = fast.evaluate(W, torch.arange(K), set_of_config)
        assert torch.allclose(o_fast, o_ref, rtol=1e-12, atol=1e-12)
        assert torch.allclose(c_fast, c_ref, rtol=1e-12, atol=1e-12)
        d_ref = d_ref.view(K, C, N)
        assert torch.allclose(d_fast.view(K, C, N), d_ref - d_ref[:, :1], rtol=1e-9, atol=1e-12)
        assert (d_ref - d_ref[:, :1]).abs().max() > 1e-3  # not a trivially zero derivative


def test_analytic_input_applies_to_the_papers_mlp_only():
    att = SensitiveAttribute.binary(1)
    X = torch.randn(N, P, dtype=torch.float64)
    X[:, 1] = (X[:, 1] > 0).double()
    assert AnalyticInputObjective.applies(mlp(P, H), X, att)
    assert not AnalyticInputObjective.applies(linear_regression(P), X, att)
    assert not AnalyticInputObjective.applies(mlp(P, H, n_outputs=2), X, att)
    net = mlp(P, H, dtype=torch.float64)
    msgs = _messages(net, X, torch.randn(N, dtype=torch.float64))
    with pytest.raises(NotImplementedError, match="InputRelaxationObjective"):
        AnalyticInputObjective(linear_regression(P), msgs.sent, msgs.pseudo_gradients, X, X[:, 0], att,
                               [torch.arange(2)], 64)
    obj = AnalyticInputObjective(net, msgs.sent, msgs.pseudo_gradients, X, X[:, 0], att, [torch.arange(2)], 64)
    with pytest.raises(ValueError, match="one-hot"):
        obj.evaluate(torch.full((1, 2 * N), 0.5 / N, dtype=torch.float64), torch.arange(1), torch.zeros(1, dtype=torch.long))
