"""Checks that bite for Part III: Alg. 4's Adam (bias correction included) and the
Model-w-O oracle's Adam against ``torch.optim.Adam``; one iteration of the gradient-based AIA's
straight-through Gumbel-softmax relaxation against autograd, at the paper's temperature 1."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from flprivacy import ClientData, LocalSGD, linear_regression, mlp, run_fedavg
from flprivacy.attacks.active import AdamActive, adam_step
from flprivacy.attacks.gradient_aia import GradientObjective, first_rounds_sets, gradient_aia
from flprivacy.data.attributes import SensitiveAttribute
from flprivacy.optimum import optimal_local_models
from flprivacy.config import generator


def _torch_adam(theta0, grads, lr, betas, eps):
    p = theta0.clone().double().requires_grad_(True)
    opt = torch.optim.Adam([p], lr=lr, betas=betas, eps=eps)
    out = []
    for g in grads:
        p.grad = g.double().clone()
        opt.step()
        out.append(p.detach().clone())
    return out


def test_adam_step_is_torch_adam():
    """Kingma & Ba Alg. 1 with bias corrections 1 - β^k: float64, so agreement to 1e-12 (rounding)."""
    g = generator(0)
    theta0 = torch.randn(7, generator=g, dtype=torch.float64)
    grads = [torch.randn(7, generator=g, dtype=torch.float64) * 10 ** (-k % 3) for k in range(12)]
    for betas in ((0.9, 0.999), (0.6, 0.7)):
        st = SimpleNamespace(theta=theta0.clone(), m=torch.zeros(7, dtype=torch.float64),
                             v=torch.zeros(7, dtype=torch.float64), step=0)
        ref = _torch_adam(theta0, grads, 0.3, betas, 1e-8)
        for gk, rk in zip(grads, ref):
            adam_step(st, gk, 0.3, betas, 1e-8)
            assert torch.allclose(st.theta, rk, rtol=0, atol=1e-12)


def test_alg4_is_adam_on_pseudo_gradients():
    """Alg. 4: θ_c^a ← Adam(θ_c^a, g = θ_c^a - θ_c); the models sent are Adam's iterates."""
    g = generator(1)
    clients = [ClientData(torch.randn(40, 3, generator=g, dtype=torch.float64), torch.randn(40, generator=g, dtype=torch.float64))
               for _ in range(2)]
    model = linear_regression(3)
    local = LocalSGD(lr=0.05, epochs=1, batch_size=8)
    start = model.init_params(3).double()
    R, lr, betas = 6, 0.2, (0.8, 0.95)
    adv = AdamActive([0], 0, R, lr, betas, init_models={0: start})
    run = run_fedavg(model, clients, rounds=R, local=local, seed=2, adversary=adv)
    est = adv.estimates(run.log)[0]
    grads = [run.log.exchange(r, 0).sent - run.log.exchange(r, 0).returned for r in range(R)]
    ref = _torch_adam(start, grads, lr, betas, adv.eps)
    for r in range(1, R):
        assert torch.allclose(run.log.exchange(r, 0).sent.double(), ref[r - 1], rtol=0, atol=1e-12)
    assert torch.allclose(est.double(), ref[-1], rtol=0, atol=1e-12)


def test_model_wo_adam_is_torch_adam():
    """The Model-w-O oracle runs full-batch Adam (bias-corrected) on the client's loss."""
    g = generator(2)
    X, y = torch.randn(50, 3, generator=g, dtype=torch.float64), torch.randn(50, generator=g, dtype=torch.float64)
    model = linear_regression(3)
    start = model.init_params(1).double()
    steps = 15
    res = optimal_local_models(model, [(X, y)], [start[None]], learning_rates=(0.01,), max_steps=steps,
                               pilot_steps=steps, keep=1, tol=0.0, check_every=10**6)[0]
    p = start.clone().requires_grad_(True)
    opt = torch.optim.Adam([p], lr=0.01)
    for _ in range(steps - 1):  # the oracle keeps the best *evaluated* iterate: the last update is not evaluated
        opt.zero_grad()
        model.loss(p, X, y).backward()
        opt.step()
    # a convex quadratic with a small step: the loss decreases, so the best iterate is the last
    assert torch.allclose(res.theta.double(), p.detach(), rtol=0, atol=1e-10)


@pytest.mark.parametrize("tau", [None, 2.0])
def test_gumbel_softmax_iteration_matches_autograd(tau):
    """One SGD iteration of gradient_aia = autograd of the straight-through Gumbel-softmax sample
    (g = -log(-log u), virtual gradient = mean of per-sample gradients), at the default temperature
    (App. B.5: τ = 1; None) and at τ = 2 (where the softmax backward's 1/τ matters); τ = 10 differs."""
    t_ref = 1.0 if tau is None else tau
    torch.manual_seed(0)
    net = mlp(4, 6, dtype=torch.float64)
    g = generator(3)
    X = torch.randn(24, 4, generator=g, dtype=torch.float64)
    X[:, 1] = (X[:, 1] > 0).double()
    y = torch.randn(24, generator=g, dtype=torch.float64)
    att = SensitiveAttribute.binary(1)
    clients = [ClientData(X, y), ClientData(X.flip(0), y.flip(0))]
    run = run_fedavg(net, clients, rounds=4, local=LocalSGD(lr=0.05, epochs=1, batch_size=8), seed=1)
    msgs = run.log.client_messages(0)
    n, C, K = X.shape[0], 2, 6
    obj = GradientObjective(net, msgs.sent, msgs.pseudo_gradients, X, y, att, [torch.arange(3)], 64)

    def replay(tau, lrs):
        gen = generator(11)
        logits0 = torch.randn(len(lrs), n, C, generator=gen, dtype=obj.dtype)
        u = torch.rand(len(lrs), n, C, generator=gen, dtype=obj.dtype).clamp_(1e-10, 1 - 1e-10)
        a = logits0.clone().requires_grad_(True)
        soft = torch.softmax((a - torch.log(-torch.log(u))) / tau, -1)
        z = torch.nn.functional.one_hot(soft.argmax(-1), C).to(obj.dtype) + soft - soft.detach()
        W = z.permute(0, 2, 1).reshape(len(lrs), C * n) / n
        _, _, dW = obj.evaluate(W.detach(), torch.arange(len(lrs)), torch.zeros(len(lrs), dtype=torch.long))
        W.backward(dW)
        return logits0 - lrs.view(-1, 1, 1) * a.grad, logits0, a.grad

    _, l0, g0 = replay(t_ref, torch.ones(1))
    scale = ((l0[..., 0] - l0[..., 1]).abs().median() / (g0[..., 0] - g0[..., 1]).abs().median()).item()
    lrs = scale * torch.logspace(-1, 1, K, dtype=obj.dtype)
    kw = {} if tau is None else {"temperature": tau}
    res = gradient_aia(net, msgs, X, y, att, round_sets=[msgs.rounds[:3].tolist()], learning_rates=lrs.tolist(),
                       iterations=1, seed=11, **kw)
    ref1, _, _ = replay(t_ref, lrs)
    ref10, _, _ = replay(10.0 * t_ref, lrs)
    assert torch.equal(res.predictions[0], ref1.argmax(-1))
    assert not torch.equal(ref10.argmax(-1), ref1.argmax(-1))


def test_round_sets_are_floor_fractions():
    """App. B.5: the first max(1, ⌊f |T|⌋) rounds, f ∈ {0.01, 0.05, 0.1, 0.2, 0.5, 1}."""
    assert [len(x) for x in first_rounds_sets(range(100))] == [1, 5, 10, 20, 50, 100]
    assert [len(x) for x in first_rounds_sets(range(7))] == [1, 3, 7]  # ceil would give 1, 2, 4, 7


def test_sendback_sends_the_targets_last_returned_model():
    """The send-back attack (Part I, Part III's active Grad): in an attack round the target receives
    her own latest returned model instead of θ^t; the other clients receive θ^t."""
    from flprivacy import SendBack

    g = generator(4)
    clients = [ClientData(torch.randn(20, 3, generator=g, dtype=torch.float64), torch.randn(20, generator=g, dtype=torch.float64))
               for _ in range(3)]
    run = run_fedavg(linear_regression(3), clients, rounds=5, local=LocalSGD(lr=0.05, epochs=1, batch_size=5), seed=0,
                     adversary=SendBack(1, rounds=range(2, 5)))
    log = run.log
    for r in range(2, 5):
        assert log.exchange(r, 1).forged and torch.equal(log.exchange(r, 1).sent, log.exchange(r - 1, 1).returned)
        assert torch.equal(log.exchange(r, 0).sent, log.global_models[r])
