"""Part II support code: the fast least-squares local update, Theorem 1's bound, the hard
instance of Prop. 3, the Xu & Neglia Adult split, and seeded initialisation."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from flprivacy import LocalSGD, eavesdrop, linear_regression, run_fedavg
from flprivacy.bounds import lambda_min_W, local_steps, theorem1_bound
from flprivacy.data.synthetic import nesterov_hard_instance
from flprivacy.federation import LeastSquaresSGD
from flprivacy.models import design
from flprivacy.optimum import least_squares_optimum
from flbook.experiments.part2_theorem1 import batched_replies, make_client, noise_scale


@pytest.mark.parametrize("kwargs", [dict(epochs=2, batch_size=7), dict(epochs=1), dict(steps=5, batch_size=16),
                                    dict(epochs=3, batch_size=100)])
def test_least_squares_sgd_is_local_sgd(ls_clients, kwargs):
    model = linear_regression(4)
    runs = [run_fedavg(model, ls_clients, rounds=4, local=cls(lr=0.05, **kwargs), seed=3)
            for cls in (LocalSGD, LeastSquaresSGD)]
    for t in range(4):
        for c in range(3):
            a, b = runs[0].log.exchange(t, c).returned, runs[1].log.exchange(t, c).returned
            assert torch.allclose(a, b, atol=1e-12), (t, c)


def test_init_params_is_seeded_for_linear_models():
    torch.manual_seed(1)
    a = linear_regression(3).init_params(7)
    torch.manual_seed(2)
    b = linear_regression(3).init_params(7)
    assert torch.equal(a, b)
    assert not torch.equal(a, linear_regression(3).init_params(8))


def test_local_optimum_solves_the_normal_equations(ls_clients):
    c = ls_clients[0]
    X1 = design(c.X)
    assert torch.allclose(X1.T @ X1 @ least_squares_optimum(c), X1.T @ c.y, atol=1e-10)


# ---- Theorem 1 -------------------------------------------------------------------------------
def test_local_steps_and_lambda_min_W_closed_form():
    assert local_steps(2, 100, 32) == 8 and local_steps(1, 100, 500) == 1
    g = torch.Generator().manual_seed(0)
    X1 = design(torch.rand(50, 3, generator=g, dtype=torch.float64))
    H = X1.T @ X1
    eta, K = 0.05, 6
    W = torch.eye(4, dtype=torch.float64) - torch.linalg.matrix_power(torch.eye(4, dtype=torch.float64) - 2 * eta / 50 * H, K)
    ev = torch.linalg.eigvalsh(H)
    assert math.isclose(lambda_min_W(eta, float(ev[0]), 50, K), float(torch.linalg.eigvalsh(W)[0]), rel_tol=1e-9)


@settings(max_examples=50, deadline=None)
@given(eta=st.floats(1e-4, 1.0), sigma=st.floats(1e-3, 10.0), d=st.integers(1, 50), n_extra=st.integers(1, 200),
       B=st.integers(1, 512), lam=st.floats(1e-6, 10.0), delta=st.floats(0.01, 0.5))
def test_theorem1_bound_scalings(eta, sigma, d, n_extra, B, lam, delta):
    S_c, E = 512, 2
    n_c = d + n_extra
    b = theorem1_bound(eta, sigma, d, E, S_c, B, n_c, lam, delta)
    K = E * math.ceil(S_c / B)
    assert math.isclose(b, d * eta * sigma * math.sqrt(K * (d + 1 + math.log(2 * d / delta)) / (n_c * lam)), rel_tol=1e-12)
    assert math.isclose(theorem1_bound(eta, sigma, d, E, S_c, B, 4 * n_c, lam, delta), b / 2, rel_tol=1e-12)
    assert math.isclose(theorem1_bound(2 * eta, sigma, d, E, S_c, B, n_c, lam, delta), 2 * b, rel_tol=1e-12)
    assert math.isclose(theorem1_bound(eta, sigma, d, E, S_c, B, n_c, lam, delta, lambda_min_W=0.5), 2 * b, rel_tol=1e-12)


def test_theorem1_bound_rejects_invalid_arguments():
    with pytest.raises(ValueError, match="n_c > d"):
        theorem1_bound(0.1, 1.0, 5, 1, 100, 10, 5, 0.1, 0.1)
    with pytest.raises(ValueError, match="delta"):
        theorem1_bound(0.1, 1.0, 5, 1, 100, 10, 10, 0.1, 1.5)
    with pytest.raises(ValueError, match="eta <="):
        theorem1_bound(1.0, 1.0, 5, 1, 100, 10, 10, 0.1, 0.1, lambda_max_H=200.0)


def test_batched_replies_full_batch_is_gradient_descent_and_noise_vanishes():
    data = make_client(64, 3, seed=1)
    g = torch.Generator().manual_seed(0)
    sent = torch.randn(5, 4, generator=g, dtype=torch.float64)
    model = linear_regression(3)
    ref = torch.stack([LeastSquaresSGD(lr=0.05, epochs=2)(model, s, data, g) for s in sent])
    assert torch.allclose(batched_replies(data, sent, 0.05, 64, epochs=2), ref, atol=1e-12)
    # one epoch of reshuffled mini-batches at a tiny step ≈ K full-batch steps (noises cancel per epoch)
    tiny = 1e-4
    sgd = batched_replies(data, sent, tiny, 16, generator=g)
    gd = torch.stack([LeastSquaresSGD(lr=tiny, epochs=4)(model, s, data, g) for s in sent])
    assert (sgd - gd).abs().max() < 1e-3 * (sent - gd).abs().max()
    assert noise_scale(data, sent, 64) == 0.0 and noise_scale(data, sent, 8) > noise_scale(data, sent, 32) > 0


# ---- Prop. 3: the hard instance ---------------------------------------------------------------
@pytest.mark.parametrize("form", ["difference", "cholesky"])
def test_hard_instance_statistics(form):
    d = 7
    inst = nesterov_hard_instance(d, n_clients=3, form=form)
    scale = 2.0 if form == "difference" else 1.0
    T = torch.eye(d, dtype=torch.float64) - 0.5 * (torch.diag(torch.ones(d - 1), 1) + torch.diag(torch.ones(d - 1), -1)).double()
    assert torch.allclose(inst.hessian, scale * T, atol=1e-12)
    assert torch.allclose(torch.linalg.solve(inst.hessian, inst.linear_term), inst.local_optimum, atol=1e-12)
    assert len(inst.clients) == 3 and torch.equal(inst.clients[1].X, torch.eye(d, dtype=torch.float64))
    alt = inst.alternative.X.T @ inst.alternative.X
    assert torch.allclose(alt[:-1, :-1], inst.hessian[:-1, :-1]) and torch.all(alt[-1] == 0)


@pytest.mark.parametrize("d", [3, 6, 15])
def test_hard_instance_reveals_one_coordinate_per_round_and_hides_the_last(d):
    inst = nesterov_hard_instance(d)
    model = linear_regression(d, bias=False)
    zero = torch.zeros(d, dtype=torch.float64)
    kw = dict(rounds=d + 1, local=LocalSGD(lr=0.3), weighting="uniform", theta0=zero)
    M = eavesdrop(run_fedavg(model, inst.clients, **kw).log, 0)
    M_alt = eavesdrop(run_fedavg(model, [inst.alternative] + inst.clients[1:], **kw).log, 0)
    for t in range(d):
        assert torch.all(M.sent[t][t:] == 0) and torch.all(M.returned[t][t + 1:] == 0)
    assert all(torch.equal(M.returned[t], M_alt.returned[t]) for t in range(d - 1))
    assert not torch.equal(M.returned[d - 1], M_alt.returned[d - 1])


def test_hard_instance_bad_arguments():
    with pytest.raises(ValueError, match="d >= 2"):
        nesterov_hard_instance(1)
    with pytest.raises(ValueError, match="form"):
        nesterov_hard_instance(4, form="qr")


# ---- the Adult split of Xu & Neglia -------------------------------------------------------------
def test_xu_adult_split_on_a_toy_table():
    import pandas as pd

    from flprivacy.data.splits import xu_adult_split

    df = pd.DataFrame({"education": ["Doctorate"] * 6 + ["Bachelors", "Masters", "HS-grad", "Prof-school"] * 5,
                       "age": [30, 40, 60, 37, 52, 53] + list(range(20, 40))})
    parts = xu_adult_split(df, n_clients=5, seed=0)
    assert [p.tolist() for p in parts[:3]] == [[0, 3], [1, 4], [2, 5]]
    rest = torch.cat(parts[3:])
    assert sorted(rest.tolist()) == [i for i in range(6, 26) if df.education[i] != "HS-grad"]
    with pytest.raises(ValueError, match="at least 4"):
        xu_adult_split(df, n_clients=3)


def test_xu_adult_split_on_adult(data_file):
    data_file("adult/adult.data")
    data_file("adult/adult.test")
    from flprivacy.data import load_adult
    from flprivacy.data.splits import xu_adult_split

    df = load_adult("all")
    parts = xu_adult_split(df)
    assert len(parts) == 10 and sum(len(p) for p in parts) == 12110
    assert [len(p) for p in parts[:3]] == [127, 281, 186]
    assert set(df.iloc[parts[1]].education) == {"Doctorate"} and df.iloc[parts[2]].age.min() > 52
    assert not (set(df.iloc[torch.cat(parts[3:])].education) & {"Doctorate", "HS-grad"})
